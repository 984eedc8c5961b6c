"""Repeated runs over seeds: Student's t intervals, and the CLI's ``--repeat``."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from gangplane.cli import simulate
from gangplane.simulator.cluster import uniform_cluster
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.repeat import interval, repeat, t_975


def test_interval_is_students_t() -> None:
    found = interval([1.0, 2.0, 3.0])
    assert found.mean == 2.0
    assert found.half_width == pytest.approx(4.303 * 1.0 / math.sqrt(3))
    assert math.isnan(interval([5.0]).half_width)
    assert (t_975(1), t_975(10), t_975(25), t_975(1000)) == (12.706, 2.228, 2.042, 1.960)


def test_repeat_regenerates_jobs_per_seed() -> None:
    cluster = uniform_cluster(1, 2)

    def make(seed: int) -> list[JobSpec]:
        return [JobSpec(i, float(i), 1, 2, float(10 + seed)) for i in range(3)]

    repeated = repeat(make, cluster, ["fifo"], [0, 1, 2])
    assert repeated.seeds == (0, 1, 2)
    jct = repeated.intervals()["fifo"]["mean_jct"]
    # seed s: jobs of 10+s s back to back from 0, 1, 2: JCTs (10+s), 2(10+s)-1, 3(10+s)-2 -> mean 2(10+s)-1
    assert jct.mean == pytest.approx(21.0)
    assert jct.half_width == pytest.approx(t_975(2) * 2.0 / math.sqrt(3))


def test_cli_repeat_prints_intervals(tmp_path: Path) -> None:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """Test root."""

    simulate.register(app)
    path = tmp_path / "s.yaml"
    path.write_text(
        "cluster: {nodeGroups: [{name: g, count: 1, gpus: 4}]}\n"
        "workloads: [{class: c, count: 20, gpusPerMember: 2,"
        " duration: {distribution: exponential, mean: 50}, arrival: {poisson: 0.05}}]\n"
    )
    result = CliRunner().invoke(app, ["simulate", str(path), "-p", "fifo", "--repeat", "3", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "3 seeds (0..2)" in result.output and "±" in result.output
