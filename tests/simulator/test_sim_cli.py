"""``gangplane simulate`` through typer: table, exports, plots and exit codes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from gangplane.cli import simulate
from gangplane.simulator.traces import TraceFormat

SCENARIO = """
name: cli
seed: 2
cluster: {nodeGroups: [{name: gpu, count: 2, gpus: 4}]}
workloads:
  - {class: pair, count: 6, members: 2, gpusPerMember: 4, duration: {fixed: 100}, arrival: {every: 30}}
  - {class: one, count: 10, gpusPerMember: 1, duration: {fixed: 40}, arrival: {every: 15}}
"""


def test_scenario_with_exports_and_plots(app: typer.Typer, tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["simulate", str(path), "-p", "fifo", "-p", "backfill", "--out", str(out), "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    assert "fifo" in result.output and "backfill" in result.output and "lower bounds" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert [p["policy"] for p in summary["policies"]] == ["fifo", "backfill"]
    assert all(p["violations"] == [] and p["finished"] == 16 for p in summary["policies"])
    rows = list(csv.DictReader((out / "timeline-backfill.csv").read_text().splitlines()))
    assert len(rows) == 16 and all(float(r["end"]) - float(r["start"]) == float(r["duration"]) for r in rows)
    assert len((out / "segments-backfill.csv").read_text().splitlines()) == 1 + 16
    for name in (
        "utilisation",
        "wait-cdf",
        "jct-cdf",
        "slowdown-by-size",
        "queue-share",
        "gantt-fifo",
        "gantt-backfill",
    ):
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


TIRESIAS_ON_16 = ["--format", "tiresias", "--nodes", "4", "--gpus-per-node", "4", "--no-progress"]


def test_trace_replay(app: typer.Typer, tiresias_csv: Path) -> None:
    result = CliRunner().invoke(app, ["simulate", "--trace", str(tiresias_csv), *TIRESIAS_ON_16])
    assert result.exit_code == 0, result.output
    assert "60/60" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "one of them"),
        (["--trace", "missing.csv"], "missing.csv"),
        (["--trace", "{csv}", "-p", "nope"], "unknown policy nope"),
    ],
)
def test_bad_input_exits_1(app: typer.Typer, tmp_path: Path, args: list[str], message: str) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("arrival,gang_size,gpus_per_member,duration\n0,1,1,5\n")
    args = [a.format(csv=path) for a in args]
    result = CliRunner().invoke(app, ["simulate", *args, "--no-progress"])
    assert result.exit_code == 1, result.output
    assert message in result.output


def test_an_impossible_gang_is_reported(app: typer.Typer, tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("arrival,gang_size,gpus_per_member,duration\n0,3,8,5\n1,1,1,5\n")
    result = CliRunner().invoke(
        app,
        [
            "simulate",
            "--trace",
            str(path),
            "--nodes",
            "2",
            "--gpus-per-node",
            "8",
            "-p",
            "fifo",
            "--no-progress",
        ],
    )
    assert result.exit_code == 3, result.output
    assert "fifo: 0 job(s) never finished, 1 rejected" in result.output
    assert "1/2" in result.output


def test_the_scenario_seed_is_the_run_seed_unless_overridden(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    args = (None, TraceFormat.CSV, 1, 1, None)
    assert simulate._jobs_and_cluster(path, *args, None)[3] == 2
    assert simulate._jobs_and_cluster(path, *args, 9)[3] == 9


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--placement", "diagonal"], "placement must be one of binpack, spread"),
        (["--estimates", "psychic"], "estimates must be 'exact' or 'trace'"),
        (["--estimate-factor", "-1"], "estimate factor must be a positive number"),
    ],
)
def test_bad_options_exit_1(app: typer.Typer, tmp_path: Path, args: list[str], message: str) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("arrival,gang_size,gpus_per_member,duration\n0,1,1,5\n")
    result = CliRunner().invoke(app, ["simulate", "--trace", str(path), *args, "--no-progress"])
    assert result.exit_code == 1, result.output
    assert message in result.output


def test_conservative_and_spread_from_the_command_line(app: typer.Typer, tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("arrival,gang_size,gpus_per_member,duration\n0,1,1,5\n0,2,4,5\n1,1,2,3\n")
    args = ["simulate", "--trace", str(path), "--nodes", "2", "--gpus-per-node", "4", "--no-progress"]
    result = CliRunner().invoke(app, [*args, "-p", "conservative", "-p", "fifo", "--placement", "spread"])
    assert result.exit_code == 0, result.output
    assert "conservative" in result.output and "3/3" in result.output


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("0,1,1,nan", "jobs.csv:3: column 'duration': 'nan' is not a finite non-negative number"),
        ("0,1,1,inf", "jobs.csv:3: column 'duration': 'inf' is not a finite non-negative number"),
        ("-inf,1,1,5", "jobs.csv:3: column 'arrival': '-inf' is not a finite non-negative number"),
        ("0,1,1,-5", "jobs.csv:3: column 'duration': '-5' is not a finite non-negative number"),
        ("0,one,1,5", "jobs.csv:3: column 'gang_size': 'one' is not a whole number"),
        ("0,0,1,5", "jobs.csv:3: gang 0 x 1 GPUs for 5.0 s is not a job"),
    ],
)
def test_bad_trace_values_exit_1_naming_file_and_line(
    app: typer.Typer, tmp_path: Path, row: str, message: str
) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text(f"arrival,gang_size,gpus_per_member,duration\n0,1,1,5\n{row}\n")
    result = CliRunner().invoke(app, ["simulate", "--trace", str(path), "--no-progress"])
    assert result.exit_code == 1, result.output
    assert message.replace(" ", "") in result.output.replace("\n", "").replace(" ", "")  # rich wraps lines


def test_a_nan_in_a_scenario_exits_1(app: typer.Typer, tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.replace("fixed: 40", "fixed: .nan"))
    result = CliRunner().invoke(app, ["simulate", str(path), "--no-progress"])
    assert result.exit_code == 1, result.output
    assert "s.yaml" in result.output and "workloads.1.duration.fixed" in result.output


def test_research_policies_from_the_command_line(app: typer.Typer, tiresias_csv: Path) -> None:
    args = ["simulate", "--trace", str(tiresias_csv), *TIRESIAS_ON_16, "-p", "las", "-p", "srtf", "-p", "drf"]
    args += ["--las-threshold", "100", "--las-starvation", "2"]
    result = CliRunner().invoke(app, [*args, "--restart", "checkpoint", "--restart-cost", "5"])
    assert result.exit_code == 0, result.output
    assert all(name in result.output for name in ("las", "srtf", "drf")) and "60/60" in result.output
    bad = CliRunner().invoke(app, [*args, "--restart", "scratch"])
    assert bad.exit_code == 1 and "checkpoint-restart" in bad.output
