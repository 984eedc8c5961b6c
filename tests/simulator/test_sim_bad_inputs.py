"""``gangplane simulate`` on the inputs a new user gets wrong: each is an error naming the file (and line,
where there is one) with exit 1 — never a traceback, a hang, or exit 2 (kept for a broken invariant).

Provenance: every trace below is synthetic, written for this test in the loaders' column formats."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from gangplane.simulator.traces import TraceError, TraceFormat, load_trace

GENERIC = "arrival,gang_size,gpus_per_member,duration\n"
TIRESIAS = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
SWF_ROW = "{n}  0  0  50  4  -1  -1  4  60  -1  1  1  1  -1  0  -1  -1  -1\n"
ALIBABA = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
    "scheduled_time\n"
)
ALIBABA_ROW = "p,1,1,1,500,,BE,Succeeded,{t},9,{t}\n"
HELIOS_ROW = "5,u,v,1,1,1,C,2020-06-09 18:4{t}:01,,,60,0\n"
HELIOS = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
ZERO_GPUS = """
name: none
cluster: {nodeGroups: [{name: cpu, count: 2, gpus: 0}]}
workloads:
  - {class: one, count: 3, gpusPerMember: 1, duration: {fixed: 40}, arrival: {every: 15}}
"""


def _run(app: typer.Typer, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["simulate", *args, "--no-progress"])
    return result.exit_code, " ".join(result.output.split())  # rich wraps long lines


@pytest.mark.parametrize(
    ("name", "text", "extra", "message"),
    [
        ("empty.csv", GENERIC, [], "empty.csv: no jobs to replay"),
        ("blank.csv", "", [], "blank.csv: missing column(s) arrival"),
        ("short.csv", GENERIC[:-10] + "\n0,1,4\n", [], "short.csv: missing column(s) duration"),
        ("cut.csv", GENERIC + "0,1,4\n", [], "cut.csv:2: column 'duration': a missing value is not a number"),
        ("dup.csv", TIRESIAS + "7,4,0,1,m,10,1\n7,4,5,1,m,10,1\n", ["--format", "tiresias"], "dup.csv:3:"),
        ("ok.csv", GENERIC + "0,1,4,10\n", ["--nodes", "0"], "--nodes must be at least 1, not 0"),
        ("ok.csv", GENERIC + "0,1,4,10\n", ["--gpus-per-node", "0"], "--gpus-per-node must be at least 1"),
        ("ok.csv", GENERIC + "0,1,4,10\n", ["-p", "lottery"], "error: unknown policy lottery; known: fifo"),
        ("ok.csv", GENERIC + "0,1,4,10\n", ["--restart-cost", "nan"], "--restart-cost must be at least 0"),
        ("ok.csv", GENERIC + "0,1,4,10\n", ["--failure-probability", "2"], "must be between 0 and 1, not 2"),
        ("ok.csv", GENERIC + "0,1,4,10\n", ["--repeat", "0"], "--repeat must be at least 1, not 0"),
    ],
)
def test_bad_traces_and_options_exit_1(
    app: typer.Typer, tmp_path: Path, name: str, text: str, extra: list[str], message: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    code, said = _run(app, "--trace", str(path), *extra)
    assert code == 1, said
    assert message in said and "Traceback" not in said


def test_a_cluster_without_gpus_exits_1(app: typer.Typer, tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(ZERO_GPUS)
    code, said = _run(app, str(path))
    assert code == 1, said
    assert "s.yaml: the cluster has no GPUs (2 node(s))" in said


def test_a_job_bigger_than_the_cluster_is_rejected_by_name_with_exit_3(
    app: typer.Typer, tmp_path: Path
) -> None:
    """Not an input error (another cluster would run it): the run says so and exits through the unfinished
    path, naming the job."""
    path = tmp_path / "big.csv"
    path.write_text(GENERIC + "0,1,4,10\n1,4,4,10\n")
    code, said = _run(app, "--trace", str(path), "--nodes", "1", "--gpus-per-node", "4", "-p", "fifo")
    assert code == 3, said
    assert "fifo: 0 job(s) never finished, 1 rejected (jobs 1) (a gang larger" in said


@pytest.mark.parametrize(
    ("trace_format", "text", "message"),
    [
        (
            TraceFormat.TIRESIAS,
            TIRESIAS + "1,4,0,1,m,10,1\n2,4,5,1,m,10,1\n1,2,6,1,m,10,1\n",
            ":4: column 'job_id': job '1' repeats line 2",
        ),
        (TraceFormat.SWF, "; synthetic\n" + SWF_ROW.format(n=1) * 2, ":3: job number 1 repeats line 2"),
        (
            TraceFormat.ALIBABA,
            ALIBABA + ALIBABA_ROW.format(t=1) + ALIBABA_ROW.format(t=2),
            ":3: column 'name': job 'p' repeats line 2",
        ),
        (
            TraceFormat.HELIOS,
            HELIOS + HELIOS_ROW.format(t=1) + HELIOS_ROW.format(t=2),
            ":3: column 'job_id': job '5' repeats line 2",
        ),
    ],
)
def test_a_repeated_job_id_names_both_lines(
    tmp_path: Path, trace_format: TraceFormat, text: str, message: str
) -> None:
    path = tmp_path / "trace"
    path.write_text(text)
    with pytest.raises(TraceError, match=f"^{path}{message}$"):
        load_trace(path, trace_format, gpus_per_node=8)


def test_unsorted_arrivals_are_sorted_not_refused(app: typer.Typer, tmp_path: Path) -> None:
    """A trace lists jobs in any order (the loaders sort by arrival, ties in file order)."""
    path = tmp_path / "unsorted.csv"
    path.write_text(GENERIC + "10,1,4,10\n0,1,4,10\n")
    jobs = load_trace(path, TraceFormat.CSV, gpus_per_node=8)
    assert [(j.id, j.arrival) for j in jobs] == [(0, 0.0), (1, 10.0)]
