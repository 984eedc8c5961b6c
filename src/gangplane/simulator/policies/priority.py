"""Preemptive priority policies: Tiresias' discretised 2D-LAS (Gu et al., NSDI'19; ``policies.las``) and SRTF.

Every cycle ranks all active jobs, running or waiting. Walking the ranking, a job is *granted* if its GPUs fit
what is left of the cluster's total — Tiresias' "count" rule, which skips a job that does not fit and goes on
(fit-first). Running jobs not granted are preempted (``PolicyOptions.preemption`` says what they keep);
granted waiting jobs are placed with ``schedulers.core.place_gang`` in rank order, and one that fragmentation
leaves without nodes waits for the next cycle (Tiresias' simulator, counting GPUs only, never has that case).

- ``srtf``: shortest remaining time first with oracle durations (remaining = run time minus kept progress
  minus the current run's progress), ties by arrival.

``rank`` is the ranking as documented; the cycle does not call it for every job but walks waiting jobs by
size and rank key and the running jobs ranked with array operations (``policies.ranking``), which grants
exactly the same jobs (a property test replays random traces against a policy that sorts everything every
cycle). A placement that failed is not tried again for the same gang shape until the cluster changes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gangplane.simulator.cluster import ClusterSpec
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.placement import GangPlacer
from gangplane.simulator.policies.base import Decision, PolicyOptions, Preempt, Reject, Start
from gangplane.simulator.policies.fifo import NEVER_FITS
from gangplane.simulator.policies.queue import ShapeKey, shape_key
from gangplane.simulator.policies.ranking import Rank, RunningRanks, RunningTable, WaitingLines, grant
from gangplane.simulator.preemption import Preemption


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
    key: Rank | None = None
    """Its rank key in the waiting lines while it waits there."""
    seq: int = 0
    """When it was last submitted (the order ``active`` iterates in)."""
    version: int = 0
    """Bumped at every change a policy's wake-up times depend on."""

    def running_for(self, now: float) -> float:
        return 0.0 if self.start is None else now - self.start


class PreemptivePriority(ABC):
    name = "priority"

    def __init__(self, cluster: ClusterSpec, options: PolicyOptions) -> None:
        self.placer = GangPlacer(cluster, options.strategy)
        self.options = options
        self.preemption = options.preemption or Preemption(checkpoint=True)
        """The model the engine applies to this policy's preemptions (``policy_preemption``)."""
        self.total = cluster.total_gpus
        self.active: dict[int, Active] = {}
        self.waiting = WaitingLines()
        self.running: RunningTable[Active] = RunningTable()
        self._ended: dict[int, Active] = {}  # runs that ended this instant; a failed one is resubmitted
        self._oversized: list[Active] = []  # more GPUs than the cluster has: rejected at the next cycle
        self._unplaceable: set[ShapeKey] = set()  # shapes place_gang refused since the cluster last changed
        self._submitted = 0

    @abstractmethod
    def rank(self, entry: Active, now: float) -> Rank:
        """The documented ranking (lower first)."""

    @abstractmethod
    def waiting_key(self, entry: Active) -> Rank:
        """``rank`` of a waiting ``entry``, which stays the same while it waits."""

    @abstractmethod
    def table_row(self, entry: Active) -> tuple[float, float, float]:
        """The three rank components ``RunningTable`` keeps for a running ``entry``."""

    def running_ranks(self, now: float) -> RunningRanks:
        """The running jobs in ``rank`` order at ``now``."""
        slots, data = self.running.columns()
        return self.running.ranked(data[0], slots, data)

    def submit(self, job: JobSpec, now: float) -> None:
        entry = self._ended.pop(job.id, None) or Active(job)
        entry.waiting_since = now
        self._submitted += 1
        entry.seq = self._submitted
        self.active[job.id] = entry
        self.entering(entry, now)
        if job.gpus > self.total:
            self._oversized.append(entry)
        else:
            self._wait(entry)

    def release(self, job_id: int, now: float) -> None:
        """A run ended: completed, or failed (then the engine resubmits it; a crash keeps nothing new)."""
        self._free_nodes(job_id)
        entry = self.active.pop(job_id)
        self._stop(entry, now, keep=False)
        entry.version += 1  # its timers were for the run that ended
        self._ended[job_id] = entry

    def schedule(self, now: float) -> Sequence[Decision]:
        self._ended.clear()
        decisions: list[Decision] = []
        self._reject_oversized(decisions)
        ranked = self.running_ranks(now)
        grants = grant(ranked, self.waiting, self.total)
        for position in grants.preempted:
            self._preempt(self.running.item(ranked.slots[position]), now, decisions)
        for job_id in grants.granted:
            self._start(self.active[job_id], now, decisions)
        return decisions

    def next_cycle(self, now: float) -> float | None:
        return None

    def _reject_oversized(self, decisions: list[Decision]) -> None:
        for entry in sorted(self._oversized, key=self.waiting_key):
            del self.active[entry.job.id]
            decisions.append(Reject(entry.job.id, NEVER_FITS))
        self._oversized.clear()

    def _wait(self, entry: Active) -> None:
        entry.key = self.waiting_key(entry)
        self.waiting.add(entry.key, entry.job.id, entry.job.gpus)

    def rekey(self, entry: Active) -> None:
        """``entry``'s rank components changed: move it in the waiting lines or the running table."""
        if entry.key is not None:
            self.waiting.remove(entry.key, entry.job.id, entry.job.gpus)
            self._wait(entry)
        elif entry.job.id in self.running:
            for column, value in zip("abc", self.table_row(entry), strict=True):
                self.running.set(entry.job.id, column, value)

    def _free_nodes(self, job_id: int) -> None:
        self.placer.release(job_id)
        self._unplaceable.clear()
        if job_id in self.running:
            self.running.remove(job_id)

    def _preempt(self, entry: Active, now: float, decisions: list[Decision]) -> None:
        self._free_nodes(entry.job.id)
        self._stop(entry, now, keep=True)
        entry.waiting_since = now
        self._wait(entry)
        decisions.append(Preempt(entry.job.id, f"outranked under {self.name}"))
        self.changed(entry, now)

    def _start(self, entry: Active, now: float, decisions: list[Decision]) -> None:
        job = entry.job
        shape = shape_key(job)
        nodes = (
            None if shape in self._unplaceable or not self.placer.might_fit(job) else self.placer.place(job)
        )
        if nodes is None:
            self._unplaceable.add(shape)
            return  # fragmentation: the GPUs are there but not on whole nodes; wait for the next cycle
        self._unplaceable.clear()
        self.starting(entry, now)
        entry.start, entry.overhead = now, self.preemption.overhead(resumed=entry.runs > 0)
        entry.runs += 1
        assert entry.key is not None, "a job starts from the waiting lines"
        self.waiting.remove(entry.key, job.id, job.gpus)
        entry.key = None
        self.running.add(job.id, entry, (*self.table_row(entry), now, entry.overhead, job.gpus))
        decisions.append(Start(job.id, nodes))
        self.changed(entry, now)

    def _stop(self, entry: Active, now: float, *, keep: bool) -> None:
        if entry.start is None:
            return
        ran = now - entry.start
        if keep:
            entry.kept += self.preemption.kept(ran, entry.overhead)
        entry.executed += ran
        self.stopped(entry, ran)
        entry.start = None

    def stopped(self, entry: Active, ran: float) -> None:  # noqa: B027 (an optional hook: doing nothing is right)
        """Hook: a run of ``ran`` seconds ended."""

    def starting(self, entry: Active, now: float) -> None:  # noqa: B027 (an optional hook: doing nothing is right)
        """Hook: a waiting job is about to start."""

    def entering(self, entry: Active, now: float) -> None:  # noqa: B027 (an optional hook: doing nothing is right)
        """Hook: ``entry`` was just submitted (new, or again after a failure)."""

    def changed(self, entry: Active, now: float) -> None:  # noqa: B027 (an optional hook: doing nothing is right)
        """Hook: ``entry`` started, was preempted or changed rank."""


class Srtf(PreemptivePriority):
    name = "srtf"

    def rank(self, entry: Active, now: float) -> Rank:
        progress = max(0.0, entry.running_for(now) - entry.overhead)
        remaining = entry.job.run_length - entry.kept - progress
        return (remaining, entry.job.arrival, entry.job.id)

    def waiting_key(self, entry: Active) -> Rank:
        return (entry.job.run_length - entry.kept - 0.0, entry.job.arrival, entry.job.id)

    def table_row(self, entry: Active) -> tuple[float, float, float]:
        return (entry.job.run_length - entry.kept, entry.job.arrival, float(entry.job.id))

    def running_ranks(self, now: float) -> RunningRanks:
        """``rank``'s remaining time for every running job at once (the same float operations)."""
        slots, data = self.running.columns()
        remaining = data[0] - np.maximum(0.0, (now - data[3]) - data[4])
        return self.running.ranked(remaining, slots, data)


__all__ = ["Active", "PreemptivePriority", "Srtf"]
