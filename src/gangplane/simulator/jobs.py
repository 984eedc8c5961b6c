"""The simulator's unit of work: one rigid gang job, and how a trace's GPU count becomes a gang shape.

A job is rigid: it needs all ``members`` placed at once (all-or-nothing), holds them for ``duration`` seconds
and restarts from scratch when preempted or failed (no checkpoints), as in Tiresias' and Pollux's rigid-job
replays. Schedulers that plan ahead (backfill) see ``expected``, the run-time estimate; a job with a ``limit``
(a wall-clock limit, e.g. SWF's requested time under ``--estimates trace``) is killed when it reaches it, as
Slurm kills a job at its time limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

DEFAULT_QUEUE = "default"


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One gang job as submitted: ``members`` pods, each asking for ``gpus_per_member`` GPUs."""

    id: int
    arrival: float
    members: int
    gpus_per_member: int
    duration: float
    queue: str = DEFAULT_QUEUE
    priority: int = 0
    cpu_per_member: float = 0.0
    memory_per_member: float = 0.0
    name: str = ""
    estimate: float | None = None
    """The scheduler's run-time estimate; ``None`` = exact (the duration)."""
    limit: float | None = None
    """Wall-clock limit: a run is killed after ``limit`` seconds; ``None`` = none."""
    requested: float | None = None
    """The trace's requested run time (SWF field 9), if it gives one; the source of ``--estimates trace``."""

    def __post_init__(self) -> None:
        """Refuse numbers no replay can use: a NaN or infinite time never ends, a negative one runs backwards."""
        times: dict[str, float | None] = {"arrival": self.arrival, "duration": self.duration}
        times |= {"estimate": self.estimate, "limit": self.limit, "requested": self.requested}
        for field_name, value in times.items():
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ValueError(
                    f"job {self.id}: {field_name} must be a finite non-negative number, not {value}"
                )
        if self.members < 1 or self.gpus_per_member < 0:
            raise ValueError(
                f"job {self.id}: a gang of {self.members} x {self.gpus_per_member} GPUs is not a job"
            )

    @property
    def expected(self) -> float:
        """How long a planner believes a run of this job takes."""
        return self.duration if self.estimate is None else self.estimate

    @property
    def run_length(self) -> float:
        """How long a run actually lasts: its duration, or its limit when that comes first."""
        return self.duration if self.limit is None else min(self.duration, self.limit)

    @property
    def killed_at_limit(self) -> bool:
        return self.limit is not None and self.limit < self.duration

    @property
    def gpus(self) -> int:
        return self.members * self.gpus_per_member

    @property
    def shape(self) -> tuple[int, int]:
        """``(members, gpus_per_member)``: jobs of one shape fit wherever any of them fits."""
        return (self.members, self.gpus_per_member)


def pack_gang(total_gpus: int, gpus_per_node: int) -> tuple[int, int]:
    """Split a trace job's GPU count into ``(members, gpus_per_member)`` for nodes of ``gpus_per_node``.

    A job that fits one node is one member (it must not be spread: Philly ran such jobs on one server).
    A larger job becomes the fewest equal members that each fit a node: 16 on 8-GPU nodes -> 2 x 8,
    12 -> 2 x 6, 24 -> 3 x 8. A prime count larger than a node (e.g. 13) degrades to one GPU per member.
    """
    if total_gpus < 1 or gpus_per_node < 1:
        raise ValueError(f"GPU counts must be positive: job {total_gpus}, node {gpus_per_node}")
    if total_gpus <= gpus_per_node:
        return (1, total_gpus)
    members = math.ceil(total_gpus / gpus_per_node)
    while total_gpus % members:
        members += 1
    return (members, total_gpus // members)


def with_estimates(jobs: list[JobSpec], source: str = "exact", factor: float = 1.0) -> list[JobSpec]:
    """Jobs with the run-time estimates a planner will see.

    ``exact``: the duration (``factor`` scales it: ``estimate = factor * duration``, no limit, as in
    Mu'alem & Feitelson's and Tsafrir's estimate studies). ``trace``: the trace's requested time, which is
    also the job's wall-clock limit (killed when reached, as Slurm does); jobs without one stay exact.
    """
    if source not in ("exact", "trace"):
        raise ValueError(f"estimates must be 'exact' or 'trace', not {source!r}")
    if not (factor > 0 and math.isfinite(factor)):
        raise ValueError(f"the estimate factor must be a positive number, not {factor}")
    if source == "trace":
        return [
            replace(job, estimate=job.requested, limit=job.requested) if job.requested is not None else job
            for job in jobs
        ]
    if factor == 1.0:
        return jobs
    return [replace(job, estimate=job.duration * factor) for job in jobs]


__all__ = ["DEFAULT_QUEUE", "JobSpec", "pack_gang", "with_estimates"]
