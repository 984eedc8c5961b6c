"""Summary metrics of a finished run: JCT, queueing delay, makespan, GPU utilisation and fairness.

Definitions (times relative to the first arrival):

- JCT = end - arrival; queueing delay = first start - arrival (a restarted job keeps its first start).
- makespan = last end - first arrival.
- ``utilisation``: time-averaged busy GPUs / total GPUs over the *arrival window* [first, last arrival] — the
  open-system steady state; after the last arrival every policy drains the same backlog, which hides the
  difference. ``utilisation_makespan``: the same over [first arrival, last end] (= work / (G x makespan)).
  ``utilisation_backlogged``: the same over only the instants at which some job waits — how much of the
  cluster a policy keeps busy when there is demand (strict FIFO idles GPUs behind a blocked head).
- ``fairness``: Jain's index over queues of each queue's mean slowdown (JCT / duration, duration floored at
  1 s): 1 when every queue's jobs are slowed alike, 1/n when one queue takes all the waiting.
- Means and percentiles of JCT are over *finished* jobs only (killed at a time limit included), of queueing
  delay over started jobs; ``never_started`` and ``rejected`` count the jobs they leave out, and the CLI says so.
- ``wasted_gpu_hours``: GPU-hours that bought no kept progress: preempted runs restarted from scratch, failed
  runs, restart time after a checkpoint (see ``simulator.preemption``).
- ``slowdown_by_size``: mean slowdown of finished jobs per size class (total GPUs: 1, 2-4, 5-8, 9-16,
  17-64, 65+), the view that shows what a policy does to large gangs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from gangplane.simulator.timeline import JobRecord, SimResult


@dataclass(frozen=True, slots=True)
class Summary:
    policy: str
    jobs: int
    finished: int
    rejected: int
    unfinished: int
    mean_jct: float
    p50_jct: float
    p95_jct: float
    mean_wait: float
    p50_wait: float
    p95_wait: float
    makespan: float
    utilisation: float
    utilisation_makespan: float
    utilisation_backlogged: float
    fairness: float
    preemptions: int
    failures: int
    events: int
    cycles: int
    never_started: int = 0
    killed: int = 0
    wasted_gpu_hours: float = 0.0
    slowdown_by_size: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _stats(values: np.ndarray) -> tuple[float, float, float]:
    if not len(values):
        return (float("nan"),) * 3
    return float(values.mean()), float(np.percentile(values, 50)), float(np.percentile(values, 95))


def busy_series(records: tuple[JobRecord, ...] | list[JobRecord]) -> tuple[np.ndarray, np.ndarray]:
    """Step function of busy GPUs: ``busy[i]`` holds on ``[times[i], times[i+1])``."""
    starts, ends, gpus = _segment_arrays(records)
    times = np.concatenate([starts, ends])
    deltas = np.concatenate([gpus, -gpus])
    order = np.lexsort((deltas, times))  # releases before starts at one instant
    times, busy = times[order], np.cumsum(deltas[order])
    last = np.r_[times[1:] != times[:-1], True]  # keep the level after the last change at each instant
    return times[last], busy[last]


def _segment_arrays(
    records: tuple[JobRecord, ...] | list[JobRecord],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = [(s.start, s.end, r.job.gpus) for r in records for s in r.segments if s.end is not None]
    array = np.array(rows, dtype=np.float64).reshape(-1, 3)
    return array[:, 0], array[:, 1], array[:, 2]


def mean_busy(times: np.ndarray, busy: np.ndarray, start: float, end: float) -> float:
    """Time-average of the step function over ``[start, end]``."""
    if end <= start or not len(times):
        return 0.0
    edges = np.clip(np.r_[times, end], start, end)
    return float(np.sum(busy * np.diff(edges)) / (end - start))


def waiting_series(records: tuple[JobRecord, ...] | list[JobRecord]) -> tuple[np.ndarray, np.ndarray]:
    """Step function of waiting jobs (arrival or requeue until the next start), like ``busy_series``."""
    ups: list[float] = []
    downs: list[float] = []
    for record in records:
        ups.append(record.job.arrival)
        for segment in record.segments:
            downs.append(segment.start)
            if segment.end is not None and segment.outcome in ("preempted", "failed"):
                ups.append(segment.end)
    times = np.array(ups + downs, dtype=np.float64)
    deltas = np.r_[np.ones(len(ups)), -np.ones(len(downs))]
    order = np.lexsort((deltas, times))
    times, waiting = times[order], np.cumsum(deltas[order])
    last = np.r_[times[1:] != times[:-1], True] if len(times) else np.zeros(0, dtype=bool)
    return times[last], waiting[last]


def backlogged_busy(records: tuple[JobRecord, ...] | list[JobRecord]) -> float:
    """Mean busy GPUs over the instants at which at least one job waits (NaN if none ever waits)."""
    busy_t, busy = busy_series(records)
    wait_t, waiting = waiting_series(records)
    edges = np.union1d(busy_t, wait_t)
    if len(edges) < 2:
        return float("nan")
    level_busy = np.r_[0.0, busy][np.searchsorted(busy_t, edges[:-1], side="right")]
    level_wait = np.r_[0.0, waiting][np.searchsorted(wait_t, edges[:-1], side="right")]
    spans = np.diff(edges) * (level_wait > 0)
    return float(np.sum(level_busy * spans) / spans.sum()) if spans.sum() > 0 else float("nan")


def jain_index(values: list[float]) -> float:
    array = np.asarray(values, dtype=np.float64)
    if not len(array) or not np.any(array):
        return 1.0
    return float(array.sum() ** 2 / (len(array) * np.sum(array**2)))


SIZE_CLASSES = ((1, 1), (2, 4), (5, 8), (9, 16), (17, 64), (65, None))
"""Job sizes in total GPUs, ``(low, high)`` inclusive, ``None`` = unbounded."""


def size_class(gpus: int) -> str:
    for low, high in SIZE_CLASSES:
        if high is None or gpus <= high:
            return str(low) if low == high else f"{low}+" if high is None else f"{low}-{high}"
    raise AssertionError("the last class is unbounded")


def slowdown(record: JobRecord) -> float:
    """JCT over the run's length, the length floored at 1 s (so that second-long jobs do not dominate)."""
    assert record.end is not None
    return (record.end - record.job.arrival) / max(record.job.run_length, 1.0)


def per_queue_slowdown(records: list[JobRecord]) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for record in records:
        if record.end is not None:
            sums.setdefault(record.job.queue, []).append(slowdown(record))
    return {queue: float(np.mean(values)) for queue, values in sorted(sums.items())}


def slowdown_by_size(records: list[JobRecord]) -> dict[str, float]:
    """Mean slowdown of finished jobs per size class, in class order (classes without jobs left out)."""
    sums: dict[str, list[float]] = {}
    for record in sorted(records, key=lambda r: r.job.gpus):
        if record.end is not None:
            sums.setdefault(size_class(record.job.gpus), []).append(slowdown(record))
    return {name: float(np.mean(values)) for name, values in sums.items()}


def wasted_gpu_hours(records: tuple[JobRecord, ...] | list[JobRecord]) -> float:
    """GPU-hours of runs that made no kept progress: preempted runs restarted from scratch, failed runs,
    and the restart time of runs resumed from a checkpoint."""
    return (
        sum((s.end - s.start - s.work) * r.job.gpus for r in records for s in r.segments if s.end is not None)
        / 3600
    )


def summarise(result: SimResult) -> Summary:
    records = result.records
    finished = result.finished
    jct = np.array([r.end - r.job.arrival for r in finished if r.end is not None])
    wait = np.array([r.start - r.job.arrival for r in records if r.start is not None])
    first = min((r.job.arrival for r in records), default=0.0)
    last_arrival = max((r.job.arrival for r in records), default=0.0)
    last_end = max((r.end for r in finished if r.end is not None), default=first)
    times, busy = busy_series(records) if any(r.segments for r in records) else (np.zeros(0), np.zeros(0))
    gpus = result.cluster.total_gpus
    return Summary(
        result.policy,
        len(records),
        len(finished),
        sum(1 for r in records if r.rejected),
        sum(1 for r in records if r.end is None and not r.rejected),
        *_stats(jct),
        *_stats(wait),
        last_end - first,
        mean_busy(times, busy, first, last_arrival) / gpus if last_arrival > first else float("nan"),
        mean_busy(times, busy, first, last_end) / gpus,
        backlogged_busy(records) / gpus if len(times) else float("nan"),
        jain_index(list(per_queue_slowdown(finished).values())),
        sum(r.preemptions for r in records),
        sum(r.failures for r in records),
        result.events,
        result.cycles,
        sum(1 for r in records if r.start is None and not r.rejected),
        sum(1 for r in records if r.killed),
        wasted_gpu_hours(records),
        slowdown_by_size(finished),
    )


__all__ = [
    "Summary",
    "backlogged_busy",
    "busy_series",
    "jain_index",
    "mean_busy",
    "per_queue_slowdown",
    "size_class",
    "slowdown",
    "slowdown_by_size",
    "summarise",
    "waiting_series",
    "wasted_gpu_hours",
]
