"""Preemptive priority policies: Tiresias' discretised 2D-LAS (Gu et al., NSDI'19) and SRTF.

Every cycle ranks all active jobs, running or waiting. Walking the ranking, a job is *granted* if its GPUs fit
what is left of the cluster's total — Tiresias' "count" rule, which skips a job that does not fit and goes on
(fit-first). Running jobs not granted are preempted (``PolicyOptions.preemption`` says what they keep);
granted waiting jobs are placed with ``schedulers.core.place_gang`` in rank order, and one that fragmentation
leaves without nodes waits for the next cycle (Tiresias' simulator, counting GPUs only, never has that case).

- ``las``: two-dimensional least-attained-service, discretised: a job's attained service is GPUs x executed
  seconds; it starts in queue 0 and moves down a queue at each of ``PolicyOptions.las_thresholds`` (GPU-s).
  Lower queues rank first; within a queue running jobs keep their place and waiting jobs follow in the order
  they entered it. Starvation guard (``las_starvation`` = K > 0): a job that has run and then waited K times its
  executed time goes back to queue 0 with its executed time reset, as Tiresias' ``solve_starvation``.
  Cycles also run when a running job crosses a threshold or a waiting one reaches its guard. LAS needs
  checkpoint-restart (Tiresias' model): restarted from scratch, a gang demoted before it can finish loses its
  work at every preemption and may never end, so the policy refuses ``Preemption(checkpoint=False)``.
- ``srtf``: shortest remaining time first with oracle durations (remaining = run time minus kept progress
  minus the current run's progress), ties by arrival.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

from gangplane.simulator.cluster import ClusterSpec
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.placement import GangPlacer
from gangplane.simulator.policies.base import Decision, PolicyOptions, Preempt, Reject, Start
from gangplane.simulator.policies.fifo import NEVER_FITS
from gangplane.simulator.preemption import Preemption

Rank = tuple[float, ...]


@dataclass(slots=True)
class Active:
    """A job the policy holds: its runs so far and, while running, the current one."""

    job: JobSpec
    executed: float = 0.0
    """Seconds run before the current run (wall time, restart overhead included), as Tiresias counts."""
    kept: float = 0.0
    """Progress kept across preemptions (checkpoint-restart only)."""
    runs: int = 0
    start: float | None = None
    overhead: float = 0.0
    waiting_since: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)
    """Per-policy bookkeeping (LAS: queue, entry order, executed time since promotion, pending time)."""

    def running_for(self, now: float) -> float:
        return 0.0 if self.start is None else now - self.start


class PreemptivePriority:
    name = "priority"

    def __init__(self, cluster: ClusterSpec, options: PolicyOptions) -> None:
        self.placer = GangPlacer(cluster, options.strategy)
        self.options = options
        self.preemption = options.preemption or Preemption(checkpoint=True)
        """The model the engine applies to this policy's preemptions (``policy_preemption``)."""
        self.total = cluster.total_gpus
        self.active: dict[int, Active] = {}
        self._ended: dict[int, Active] = {}  # runs that ended this instant; a failed one is resubmitted

    def rank(self, entry: Active, now: float) -> Rank:
        raise NotImplementedError

    def submit(self, job: JobSpec, now: float) -> None:
        entry = self._ended.pop(job.id, None) or Active(job)
        entry.waiting_since = now
        self.active[job.id] = entry

    def release(self, job_id: int, now: float) -> None:
        """A run ended: completed, or failed (then the engine resubmits it; a crash keeps nothing new)."""
        self.placer.release(job_id)
        entry = self.active.pop(job_id)
        self._stop(entry, now, keep=False)
        self._ended[job_id] = entry

    def schedule(self, now: float) -> Sequence[Decision]:
        self._ended.clear()
        decisions: list[Decision] = []
        ranked = sorted(self.active.values(), key=lambda e: self.rank(e, now))
        granted = self._grant(ranked, decisions)
        for entry in ranked:
            if entry.start is not None and entry.job.id not in granted:
                self._preempt(entry, now, decisions)
        for entry in ranked:
            if entry.start is None and entry.job.id in granted:
                self._start(entry, now, decisions)
        return decisions

    def next_cycle(self, now: float) -> float | None:
        return None

    def _grant(self, ranked: list[Active], decisions: list[Decision]) -> set[int]:
        free, granted = self.total, set()
        for entry in ranked:
            if entry.job.gpus > self.total:
                del self.active[entry.job.id]
                decisions.append(Reject(entry.job.id, NEVER_FITS))
            elif entry.job.gpus <= free:
                granted.add(entry.job.id)
                free -= entry.job.gpus
        return granted

    def _preempt(self, entry: Active, now: float, decisions: list[Decision]) -> None:
        self.placer.release(entry.job.id)
        self._stop(entry, now, keep=True)
        entry.waiting_since = now
        decisions.append(Preempt(entry.job.id, f"outranked under {self.name}"))

    def _start(self, entry: Active, now: float, decisions: list[Decision]) -> None:
        nodes = self.placer.place(entry.job)
        if nodes is None:
            return  # fragmentation: the GPUs are there but not on whole nodes; wait for the next cycle
        self.starting(entry, now)
        entry.start, entry.overhead = now, self.preemption.overhead(resumed=entry.runs > 0)
        entry.runs += 1
        decisions.append(Start(entry.job.id, nodes))

    def _stop(self, entry: Active, now: float, *, keep: bool) -> None:
        if entry.start is None:
            return
        ran = now - entry.start
        if keep:
            entry.kept += self.preemption.kept(ran, entry.overhead)
        entry.executed += ran
        self.stopped(entry, ran)
        entry.start = None

    def stopped(self, entry: Active, ran: float) -> None:
        """Hook: a run of ``ran`` seconds ended."""

    def starting(self, entry: Active, now: float) -> None:
        """Hook: a waiting job is about to start."""


class Srtf(PreemptivePriority):
    name = "srtf"

    def rank(self, entry: Active, now: float) -> Rank:
        progress = max(0.0, entry.running_for(now) - entry.overhead)
        remaining = entry.job.run_length - entry.kept - progress
        return (remaining, entry.job.arrival, entry.job.id)


class TiresiasLas(PreemptivePriority):
    name = "las"

    def __init__(self, cluster: ClusterSpec, options: PolicyOptions) -> None:
        super().__init__(cluster, options)
        if not self.preemption.checkpoint:
            raise ValueError(
                "las needs checkpoint-restart (--restart checkpoint), as Tiresias assumes: restarted from "
                "scratch, a job demoted before it can finish may lose its work again and again and never end"
            )
        self.thresholds = sorted(options.las_thresholds)
        self.starvation = options.las_starvation
        self._entries = 0

    def submit(self, job: JobSpec, now: float) -> None:
        super().submit(job, now)
        if "queue" not in self.active[job.id].extra:
            self._enter(self.active[job.id], 0)

    def rank(self, entry: Active, now: float) -> Rank:
        self._promote_if_starved(entry, now)
        queue = self._queue(entry, now)
        if queue != entry.extra["queue"]:
            self._enter(entry, queue)
        return (queue, 0 if entry.start is not None else 1, entry.extra["order"])

    def next_cycle(self, now: float) -> float | None:
        wakes = [t for e in self.active.values() if (t := self._next_change(e, now)) is not None and t > now]
        return min(wakes, default=None)

    def stopped(self, entry: Active, ran: float) -> None:
        entry.extra["las_executed"] = entry.extra.get("las_executed", 0.0) + ran

    def starting(self, entry: Active, now: float) -> None:
        entry.extra["pending"] = self._pending(entry, now)  # the wait ends; keep what it added up to

    def _enter(self, entry: Active, queue: int) -> None:
        self._entries += 1
        entry.extra["queue"], entry.extra["order"] = float(queue), float(self._entries)

    def _executed(self, entry: Active, now: float) -> float:
        return entry.extra.get("las_executed", 0.0) + entry.running_for(now)

    def _queue(self, entry: Active, now: float) -> int:
        return bisect.bisect_right(self.thresholds, self._executed(entry, now) * entry.job.gpus)

    def _pending(self, entry: Active, now: float) -> float:
        """Time waited since its last promotion while it had executed time (Tiresias' last_pending_time)."""
        if entry.start is not None or not entry.extra.get("las_executed"):
            return entry.extra.get("pending", 0.0)
        since = max(entry.waiting_since, entry.extra.get("promoted", 0.0))
        return entry.extra.get("pending", 0.0) + now - since

    def _promote_if_starved(self, entry: Active, now: float) -> None:
        executed = entry.extra.get("las_executed", 0.0)
        if self.starvation <= 0 or entry.start is not None or not executed or entry.extra["queue"] == 0:
            return
        if self._pending(entry, now) >= executed * self.starvation:
            entry.extra.update(las_executed=0.0, pending=0.0, promoted=now)
            self._enter(entry, 0)

    def _next_change(self, entry: Active, now: float) -> float | None:
        queue = int(entry.extra["queue"])
        if entry.start is not None and queue < len(self.thresholds):
            base = entry.extra.get("las_executed", 0.0)
            return entry.start + self.thresholds[queue] / entry.job.gpus - base
        executed = entry.extra.get("las_executed", 0.0)
        if entry.start is None and self.starvation > 0 and executed and queue > 0:
            return now + executed * self.starvation - self._pending(entry, now)
        return None


__all__ = ["Active", "PreemptivePriority", "Srtf", "TiresiasLas"]
