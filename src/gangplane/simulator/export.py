"""Writing results: the per-job timeline as CSV, summaries and violations as JSON. No plotting here."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path

from gangplane.simulator.bounds import Bounds, Violation
from gangplane.simulator.metrics import Summary
from gangplane.simulator.timeline import SimResult

TIMELINE_COLUMNS = (
    "job_id",
    "name",
    "queue",
    "priority",
    "members",
    "gpus_per_member",
    "duration",
    "arrival",
    "admitted",
    "start",
    "end",
    "queueing_delay",
    "jct",
    "preemptions",
    "failures",
    "rejected",
    "killed",
    "nodes",
)
SEGMENT_COLUMNS = ("job_id", "run", "start", "end", "outcome", "gpus", "nodes")


def _cell(value: float | None) -> str:
    return "" if value is None else repr(value)


def write_timeline(result: SimResult, path: Path) -> None:
    """One row per job; ``nodes`` lists the nodes of its last run (``|``-separated)."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(TIMELINE_COLUMNS)
        for r in result.records:
            job = r.job
            nodes = "|".join(r.segments[-1].nodes) if r.segments else ""
            writer.writerow(
                [
                    job.id,
                    job.name,
                    job.queue,
                    job.priority,
                    job.members,
                    job.gpus_per_member,
                    job.duration,
                    job.arrival,
                    _cell(r.admitted),
                    _cell(r.start),
                    _cell(r.end),
                    _cell(r.queueing_delay),
                    _cell(r.jct),
                    r.preemptions,
                    r.failures,
                    r.rejected,
                    int(r.killed),
                    nodes,
                ]
            )


def write_segments(result: SimResult, path: Path) -> None:
    """One row per run of every job (restarts after preemption or failure included), in job order;
    ``end``/``outcome`` are empty for a run still going when the replay stopped."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(SEGMENT_COLUMNS)
        for r in result.records:
            for run, s in enumerate(r.segments):
                writer.writerow(
                    [r.job.id, run, repr(s.start), _cell(s.end), s.outcome, r.job.gpus, "|".join(s.nodes)]
                )


def write_summary(
    path: Path, summaries: Sequence[Summary], bounds: Bounds, violations: dict[str, list[Violation]]
) -> None:
    """``{"bounds": ..., "policies": [{summary..., "violations": [...]}]}``."""
    document = {
        "bounds": {
            "work": bounds.work,
            "longestJob": bounds.longest_job,
            "meanDuration": bounds.mean_duration,
            "makespan": bounds.makespan,
        },
        "policies": [
            {**summary.to_dict(), "violations": [str(v) for v in violations.get(summary.policy, [])]}
            for summary in summaries
        ],
    }
    path.write_text(json.dumps(document, indent=2, allow_nan=True) + "\n")


__all__ = ["SEGMENT_COLUMNS", "TIMELINE_COLUMNS", "write_segments", "write_summary", "write_timeline"]
