"""Lower bounds every schedule must respect, and invariants every replay must keep.

A violation means the simulator or a scheduler core is wrong, never that a policy is clever, so callers
report them loudly (the CLI exits non-zero). Bounds (performance-anchors.md §4), for the jobs that finished,
on G GPUs, times relative to the first release r_min:

- work bound: makespan >= sum_j g_j * p_j / G;
- longest-job bound: makespan >= max_j (r_j + p_j) - r_min;
- mean JCT >= mean p_j.

Invariants: a job starts no earlier than it arrives; the work its runs kept adds up to exactly its duration
(or its time limit), and no run keeps more than it ran; its runs do not overlap; at no instant does any node
hold more GPUs than it has (this checks the placements the scheduler cores produced, member by member).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from gangplane.simulator.metrics import Summary
from gangplane.simulator.timeline import JobRecord, SimResult

TOLERANCE = 1e-6


@dataclass(frozen=True, slots=True)
class Violation:
    check: str
    message: str

    def __str__(self) -> str:
        return f"{self.check}: {self.message}"


@dataclass(frozen=True, slots=True)
class Bounds:
    work: float
    longest_job: float
    mean_duration: float

    @property
    def makespan(self) -> float:
        return max(self.work, self.longest_job)


def lower_bounds(result: SimResult) -> Bounds:
    finished = [r.job for r in result.finished]
    if not finished:
        return Bounds(0.0, 0.0, 0.0)
    first = min(r.job.arrival for r in result.records)
    work = sum(job.gpus * job.run_length for job in finished) / result.cluster.total_gpus
    longest = max(job.arrival + job.run_length for job in finished) - first
    return Bounds(work, longest, float(np.mean([job.run_length for job in finished])))


def check(result: SimResult, summary: Summary) -> list[Violation]:
    """Every violated bound or invariant; empty for a sound run."""
    bounds = lower_bounds(result)
    found = []
    if summary.finished and summary.makespan < bounds.makespan * (1 - TOLERANCE):
        found.append(Violation("makespan", f"{summary.makespan:.3f} s < lower bound {bounds.makespan:.3f} s"))
    if summary.finished and summary.mean_jct < bounds.mean_duration * (1 - TOLERANCE):
        found.append(
            Violation("mean JCT", f"{summary.mean_jct:.3f} s < mean duration {bounds.mean_duration:.3f} s")
        )
    for record in result.records:
        found += _job_invariants(record)
    found += _node_capacity(result)
    return found


def _job_invariants(record: JobRecord) -> list[Violation]:
    job, found = record.job, []
    if record.start is not None and record.start < job.arrival - TOLERANCE:
        found.append(
            Violation("start", f"job {job.id} starts at {record.start} before it arrives at {job.arrival}")
        )
    for before, after in itertools.pairwise(record.segments):
        if before.end is None or after.start < before.end - TOLERANCE:
            found.append(Violation("runs", f"job {job.id} runs twice at once at {after.start}"))
    last = record.segments[-1] if record.segments else None
    done = sum(segment.work for segment in record.segments)
    if record.end is not None and (last is None or abs(done - job.run_length) > TOLERANCE):
        found.append(
            Violation("duration", f"job {job.id} completed after {done} s of its {job.run_length} s")
        )
    for segment in record.segments:
        if (
            segment.end is not None
            and segment.work > max(0.0, segment.end - segment.start - segment.overhead) + TOLERANCE
        ):
            found.append(
                Violation("duration", f"job {job.id} kept more work than a run at {segment.start} did")
            )
    if last is not None and len(last.nodes) != job.members:
        found.append(Violation("gang", f"job {job.id} ran {len(last.nodes)} of {job.members} members"))
    return found


def _node_capacity(result: SimResult) -> list[Violation]:
    capacity = {node.name: node.gpus for node in result.cluster.nodes}
    index = {name: i for i, name in enumerate(capacity)}
    rows = [
        (index[name], t, sign * r.job.gpus_per_member)
        for r in result.records
        for s in r.segments
        if s.end is not None
        for name in s.nodes
        for t, sign in ((s.start, 1), (s.end, -1))
    ]
    if not rows:
        return []
    nodes, times, deltas = (np.array(column) for column in zip(*rows, strict=True))
    order = np.lexsort((deltas, times, nodes))
    nodes, deltas = nodes[order], deltas[order]
    used = np.cumsum(deltas)
    used -= np.r_[0, np.cumsum(deltas)[:-1]][np.searchsorted(nodes, nodes, side="left")]
    over = used > np.array(list(capacity.values()))[nodes]
    return [
        Violation("node capacity", f"{list(capacity)[n]} holds {u} GPUs of {list(capacity.values())[n]}")
        for n, u in sorted({(int(n), int(u)) for n, u in zip(nodes[over], used[over], strict=True)})[:10]
    ]


__all__ = ["Bounds", "Violation", "check", "lower_bounds"]
