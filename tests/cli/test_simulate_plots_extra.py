"""matplotlib is the optional ``plots`` extra: without it ``gangplane simulate`` says how to get it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from gangplane.cli import simulate

SCENARIO = """
name: no-plots
seed: 1
cluster: {nodeGroups: [{name: gpu, count: 1, gpus: 4}]}
workloads:
  - {class: one, count: 2, gpusPerMember: 1, duration: {fixed: 10}, arrival: {every: 5}}
"""


def test_simulate_without_matplotlib_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m.startswith("matplotlib") or m == "gangplane.simulator.plots"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed: importing it fails
    app = typer.Typer()
    app.callback()(lambda: None)
    simulate.register(app)
    (tmp_path / "s.yaml").write_text(SCENARIO)
    args = [
        "simulate",
        str(tmp_path / "s.yaml"),
        "-p",
        "fifo",
        "--out",
        str(tmp_path / "out"),
        "--no-progress",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "pip install 'gangplane[plots]'" in result.output
