"""Honest metrics: jobs left out of the means are counted, lost work is reported, every run is exported."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from gangplane.simulator.cluster import uniform_cluster
from gangplane.simulator.compare import run_policies
from gangplane.simulator.engine import FailureModel
from gangplane.simulator.export import write_segments
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.metrics import size_class, summarise
from gangplane.simulator.timeline import JobRecord, Segment, SimResult

CLUSTER = uniform_cluster(2, 4)


def _record(job: JobSpec, *runs: tuple[float, float | None, str]) -> JobRecord:
    record = JobRecord(job)
    for start, end, how in runs:
        kept = end - start if end is not None and how == "completed" else 0.0
        record.segments.append(Segment(start, ("node-000",) * job.members, end, how, work=kept))
    if runs:
        record.start = runs[0][0]
        last = runs[-1]
        record.end = last[1] if last[2] == "completed" else None
    return record


def test_left_out_jobs_are_counted_and_lost_runs_are_wasted_gpu_hours() -> None:
    records = (
        # 2 GPUs, failed after 1800 s, then ran 3600 s: 1 GPU-hour lost
        _record(JobSpec(0, 0.0, 1, 2, 3600.0), (0.0, 1800.0, "failed"), (1800.0, 5400.0, "completed")),
        _record(JobSpec(1, 0.0, 2, 4, 100.0)),  # never started
        _record(JobSpec(2, 0.0, 1, 1, 10.0), (0.0, 10.0, "completed")),
    )
    summary = summarise(SimResult("x", CLUSTER, records, 0, 0))
    assert (summary.finished, summary.never_started, summary.unfinished, summary.rejected) == (2, 1, 1, 0)
    assert summary.wasted_gpu_hours == pytest.approx(1.0)
    assert summary.mean_jct == pytest.approx((5400 + 10) / 2)  # the job that never started is left out
    assert summary.slowdown_by_size == {"1": 1.0, "2-4": pytest.approx(1.5)}


@pytest.mark.parametrize(
    ("gpus", "label"),
    [(1, "1"), (2, "2-4"), (4, "2-4"), (8, "5-8"), (16, "9-16"), (64, "17-64"), (65, "65+")],
)
def test_size_classes(gpus: int, label: str) -> None:
    assert size_class(gpus) == label


def test_every_run_is_in_the_segments_export(tmp_path: Path) -> None:
    jobs = [JobSpec(i, float(i), 1, 2, 50.0) for i in range(12)]
    (outcome,) = run_policies(jobs, CLUSTER, ["backfill"], failures=FailureModel(0.5)).outcomes
    path = tmp_path / "segments.csv"
    write_segments(outcome.result, path)
    rows = list(csv.DictReader(path.read_text().splitlines()))
    runs = [s for r in outcome.result.records for s in r.segments]
    assert len(rows) == len(runs) > len(jobs)  # failed runs restarted
    assert {r["outcome"] for r in rows} == {"completed", "failed"}
    lost = sum(
        (float(r["end"]) - float(r["start"])) * int(r["gpus"]) for r in rows if r["outcome"] == "failed"
    )
    assert outcome.summary.wasted_gpu_hours == pytest.approx(lost / 3600)
