"""The SWF loader on a small excerpt.

Provenance: the excerpt below is synthetic, written for this test in the Standard Workload Format of the
Parallel Workloads Archive (18 fields, ``-1`` unknown, ``;`` header comments); it is not taken from any log.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gangplane.simulator.cluster import uniform_cluster
from gangplane.simulator.engine import simulate
from gangplane.simulator.jobs import with_estimates
from gangplane.simulator.policies import EasyBackfill, PolicyOptions
from gangplane.simulator.traces import TraceError, TraceFormat, load_trace

EXCERPT = """\
; Version: 2.2
; Computer: synthetic test machine (not a real log)
; MaxProcs: 8
    1   100  5   50  4  -1  -1  4   60  -1  1  1  1  -1  0  -1  -1  -1
    2    90  0  120  1  -1  -1  1  100  -1  0  2  1  -1  1  -1  -1  -1
    3   100  0   -1 -1  -1  -1  2   30  -1  5  3  1  -1  0  -1  -1  -1
    4   130  0   10 -1  -1  -1 12   -1  -1  1  1  1  -1 -1  -1  -1  -1
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "log.swf"
    path.write_text(text)
    return path


def test_swf_fields_become_jobs(tmp_path: Path) -> None:
    notes: list[str] = []
    jobs = load_trace(_write(tmp_path, EXCERPT), TraceFormat.SWF, gpus_per_node=8, notes=notes)
    # sorted by submit time (job 2 first), shifted to 0; job 3 (run time -1) skipped
    assert [j.name for j in jobs] == ["swf-2", "swf-1", "swf-4"]
    assert [j.arrival for j in jobs] == [0.0, 10.0, 40.0]
    assert [(j.members, j.gpus_per_member) for j in jobs] == [
        (1, 1),
        (1, 4),
        (2, 6),
    ]  # 12 -> 2 x 6 on 8-GPU nodes
    assert [j.duration for j in jobs] == [120.0, 50.0, 10.0]
    assert [j.requested for j in jobs] == [100.0, 60.0, None]
    assert [j.queue for j in jobs] == ["q1", "q0", "default"]
    assert notes == [f"{tmp_path / 'log.swf'}: skipped 1 SWF job(s) with unknown or zero run time or size"]


def test_requested_times_limit_runs_under_trace_estimates(tmp_path: Path) -> None:
    jobs = with_estimates(load_trace(_write(tmp_path, EXCERPT), TraceFormat.SWF, gpus_per_node=8), "trace")
    cluster = uniform_cluster(2, 8)
    result = simulate(jobs, EasyBackfill(cluster, PolicyOptions()), cluster)
    first = result.records[0]  # ran 120 s but asked for 100: killed at its limit, as Slurm does
    assert (first.start, first.end, first.killed) == (0.0, 100.0, True)
    assert not result.records[1].killed


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("1 0 0 nan 1 -1 -1 1 -1 -1 1 1 1 -1 0 -1 -1 -1", "log.swf:2: field 4 'nan' is not a finite number"),
        ("1 0 0 5 -2 -1 -1 1 -1 -1 1 1 1 -1 0 -1 -1 -1", "log.swf:2: field 5 '-2' is not a finite number"),
        ("1 0 0 5 x -1 -1 1 -1 -1 1 1 1 -1 0 -1 -1 -1", "log.swf:2: field 5 'x' is not a number"),
        ("1 0 0 5 1", "log.swf:2: an SWF job has 18 fields, this line has 5"),
    ],
)
def test_bad_swf_lines_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    with pytest.raises(TraceError, match=message):
        load_trace(_write(tmp_path, f"; header\n{line}\n"), TraceFormat.SWF, gpus_per_node=8)
