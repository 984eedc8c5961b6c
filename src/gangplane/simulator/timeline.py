"""Per-job timelines, as the engine records them, and the finished run they add up to."""

from __future__ import annotations

from dataclasses import dataclass, field

from gangplane.simulator.cluster import ClusterSpec
from gangplane.simulator.explain import Reason
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.stall import Stall


@dataclass(slots=True)
class Segment:
    """One run of a job on its nodes; ``end`` is ``None`` while it runs."""

    start: float
    nodes: tuple[str, ...]
    end: float | None = None
    outcome: str = ""  # completed | killed (at its time limit) | failed | preempted
    overhead: float = 0.0
    """Seconds at its start spent restarting from a checkpoint (no progress)."""
    work: float = 0.0
    """Progress this run contributed (kept): all of it when it completed, what a checkpoint saved when it
    was preempted, nothing when it failed or restarted from scratch."""


@dataclass(slots=True)
class JobRecord:
    job: JobSpec
    admitted: float | None = None
    start: float | None = None
    end: float | None = None
    preemptions: int = 0
    failures: int = 0
    rejected: str = ""
    killed: bool = False
    """Ended at its wall-clock limit before its work was done (counted as finished, as Slurm's TIMEOUT)."""
    segments: list[Segment] = field(default_factory=list)

    @property
    def jct(self) -> float | None:
        return None if self.end is None else self.end - self.job.arrival

    @property
    def queueing_delay(self) -> float | None:
        return None if self.start is None else self.start - self.job.arrival


@dataclass(frozen=True, slots=True)
class SimResult:
    policy: str
    cluster: ClusterSpec
    records: tuple[JobRecord, ...]
    events: int
    cycles: int
    explained: tuple[Reason, ...] = ()
    """Why the job named by ``--explain`` waited, when the policy explains (``simulator.explain``)."""
    stall: Stall | None = None
    """Set when the replay was stopped for making no progress (``simulator.stall``); its jobs are unfinished."""

    @property
    def finished(self) -> list[JobRecord]:
        return [r for r in self.records if r.end is not None]

    @property
    def unfinished(self) -> list[JobRecord]:
        return [r for r in self.records if r.end is None]


__all__ = ["JobRecord", "Segment", "SimResult"]
