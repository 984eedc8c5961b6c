"""kube-controller-manager's NoExecute tainting rate flags reach the node lifecycle controller from the
control-plane process (``cluster/process.py``) and from ``gangplane up``, with upstream's names and defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gangplane.cli import controlplane
from gangplane.cluster import process
from gangplane.controllers.node_eviction import EvictionRates


def captured_rates(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, flags: list[str]) -> Any:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(process, "run", lambda *args: seen.setdefault("args", args))
    process.main(["--state-dir", str(tmp_path), *flags])
    return seen["args"][-1]


def test_the_process_defaults_are_upstreams(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert captured_rates(monkeypatch, tmp_path, []) == EvictionRates(0.1, 0.01, 50)


def test_the_process_takes_the_three_flags(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    flags = [
        "--node-eviction-rate",
        "1",
        "--secondary-node-eviction-rate",
        "0",
        "--large-cluster-size-threshold",
        "7",
    ]
    assert captured_rates(monkeypatch, tmp_path, flags) == EvictionRates(1.0, 0.0, 7)


def test_gangplane_up_passes_the_flags_on(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def start(state: Path, host: str, port: int, *, extra_args: list[str]) -> Any:
        seen["extra"] = extra_args
        raise RuntimeError("not started in a test")

    monkeypatch.setattr(controlplane, "_state_dir", lambda: tmp_path)
    monkeypatch.setattr(controlplane.launch, "start_background", start)
    app = controlplane.typer.Typer()
    app.command()(controlplane.up)
    result = CliRunner().invoke(app, ["--node-eviction-rate", "0.5", "--large-cluster-size-threshold", "9"])
    assert result.exit_code == 1
    assert seen["extra"] == ["--node-eviction-rate", "0.5", "--large-cluster-size-threshold", "9"]


def test_gangplane_up_refuses_a_negative_rate_before_starting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    started: list[list[str]] = []
    monkeypatch.setattr(controlplane, "_state_dir", lambda: tmp_path)
    monkeypatch.setattr(
        controlplane.launch, "start_background", lambda *_, extra_args: started.append(extra_args)
    )
    app = controlplane.typer.Typer()
    app.command()(controlplane.up)
    result = CliRunner().invoke(app, ["--node-eviction-rate", "-1"])
    assert result.exit_code == 2 and "--node-eviction-rate" in result.output
    assert started == []


def test_gangplane_up_passes_the_node_monitor_grace_period_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[list[str]] = []
    monkeypatch.setattr(controlplane, "_state_dir", lambda: tmp_path)
    monkeypatch.setattr(
        controlplane.launch, "start_background", lambda *_, extra_args: seen.append(extra_args)
    )
    app = controlplane.typer.Typer()
    app.command()(controlplane.up)
    bad = CliRunner().invoke(app, ["--node-monitor-grace-period", "0s"])
    assert bad.exit_code == 2 and "--node-monitor-grace-period" in bad.output and seen == []
    good = CliRunner().invoke(app, ["--node-monitor-grace-period", "2m"])
    assert seen == [["--node-monitor-grace-period", "2m"]], good.output


def test_the_process_takes_the_grace_period(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(process, "run", lambda *args: seen.setdefault("args", args))
    process.main(["--state-dir", str(tmp_path), "--node-monitor-grace-period", "2m"])
    assert seen["args"][-2] == 120.0
