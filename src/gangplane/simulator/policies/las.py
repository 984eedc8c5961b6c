"""Tiresias' discretised two-dimensional least-attained-service (``las``; Gu et al., NSDI'19).

A job's attained service is GPUs x executed seconds (seconds of progress: a run's restart cost is not
service, as in Tiresias' simulator, which has none); it starts in queue 0 and moves down a queue at each of
``PolicyOptions.las_thresholds`` (GPU-s). Lower queues rank first; within a queue running jobs keep their
place and waiting jobs follow in the order they entered it. Starvation guard (``las_starvation`` = K > 0): a
job that has run and then waited K times its executed time goes back to queue 0 with its executed time reset,
as Tiresias' ``solve_starvation``. Cycles also run when a running job crosses a threshold or a waiting one
reaches its guard. LAS needs checkpoint-restart (Tiresias' model): restarted from scratch, a gang demoted
before it can finish loses its work at every preemption and may never end, so the policy refuses
``Preemption(checkpoint=False)``. The granting walk is ``policies.priority``'s.

Ranking a job can change it (a demotion or a promotion gives it a new entry order), so which jobs change, and
in which order, is part of the schedule. A job's queue changes only when a running job crosses a threshold,
a waiting one reaches its guard, or one comes back after a failure: crossing and guard times go into heaps,
and each cycle re-ranks only the jobs due by now (in submission order, the order a full ranking visits them),
then the walk grants as usual. The heaps hold float times computed once; a job within ``SLACK`` of its time
is checked with ``rank``'s own arithmetic every cycle until it changes, so rounding moves no decision, and
``next_cycle`` takes the earliest wake-up with the same arithmetic as a scan over every job.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Sequence

from gangplane.simulator.cluster import ClusterSpec
from gangplane.simulator.policies.base import Decision, PolicyOptions
from gangplane.simulator.policies.priority import Active, PreemptivePriority
from gangplane.simulator.policies.ranking import Rank

SLACK = 1e-7
"""Relative distance to a crossing or guard time within which a job is checked exactly each cycle."""

Timer = tuple[float, int, int]  # (time, job id, version)


def _near(now: float) -> float:
    return now + SLACK * max(1.0, abs(now))


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
        self._crossings: list[Timer] = []  # running jobs: when they reach their queue's threshold
        self._guards: list[Timer] = []  # waiting jobs: about when their starvation guard fires
        self._new: dict[int, Active] = {}  # submitted since the last cycle

    def entering(self, entry: Active, now: float) -> None:
        if "queue" not in entry.extra:
            self._enter(entry, 0)
        self._new[entry.job.id] = entry

    def rank(self, entry: Active, now: float) -> Rank:
        self._promote_if_starved(entry, now)
        queue = self._queue(entry, now)
        if queue != entry.extra["queue"]:
            self._enter(entry, queue)
        return (queue, 0 if entry.start is not None else 1, entry.extra["order"])

    def waiting_key(self, entry: Active) -> Rank:
        return (entry.extra["queue"], 1, entry.extra["order"])

    def table_row(self, entry: Active) -> tuple[float, float, float]:
        return (entry.extra["queue"], 0.0, entry.extra["order"])

    def schedule(self, now: float) -> Sequence[Decision]:
        for entry in self._due(now):
            self.rank(entry, now)
            self.changed(entry, now)
        return super().schedule(now)

    def next_cycle(self, now: float) -> float | None:
        """The earliest ``_next_change`` after ``now`` over every active job (as a scan would find it)."""
        best = self._next_crossing(now)
        popped: list[Timer] = []
        while (top := self._valid_top(self._guards)) is not None:
            if best is not None and top[0] > _near(best):
                break
            popped.append(heapq.heappop(self._guards))
            wake = self._next_change(self.active[top[1]], now)
            if wake is not None and wake > now and (best is None or wake < best):
                best = wake
        for timer in popped:
            heapq.heappush(self._guards, timer)
        return best

    def _next_crossing(self, now: float) -> float | None:
        popped: list[Timer] = []
        while (top := self._valid_top(self._crossings)) is not None and top[0] <= now:
            popped.append(heapq.heappop(self._crossings))
        for timer in popped:
            heapq.heappush(self._crossings, timer)
        return top[0] if top is not None else None

    def _valid_top(self, heap: list[Timer]) -> Timer | None:
        while heap:
            entry = self.active.get(heap[0][1])
            if entry is not None and entry.version == heap[0][2]:
                return heap[0]
            heapq.heappop(heap)
        return None

    def _due(self, now: float) -> list[Active]:
        """Jobs whose rank may change at ``now``, in submission order (``active``'s order)."""
        due, self._new = self._new, {}
        for heap in (self._crossings, self._guards):
            while (top := self._valid_top(heap)) is not None and top[0] <= _near(now):
                heapq.heappop(heap)
                due[top[1]] = self.active[top[1]]
        return sorted((e for e in due.values() if e.job.id in self.active), key=lambda e: e.seq)

    def changed(self, entry: Active, now: float) -> None:
        """Re-arm ``entry``'s timers (its crossing if it runs, its guard if it waits)."""
        entry.version += 1
        wake = self._next_change(entry, now)
        if wake is not None:
            heap = self._crossings if entry.start is not None else self._guards
            heapq.heappush(heap, (wake, entry.job.id, entry.version))

    def stopped(self, entry: Active, ran: float) -> None:
        entry.extra["las_executed"] = entry.extra.get("las_executed", 0.0) + max(0.0, ran - entry.overhead)

    def starting(self, entry: Active, now: float) -> None:
        entry.extra["pending"] = self._pending(entry, now)  # the wait ends; keep what it added up to

    def _enter(self, entry: Active, queue: int) -> None:
        self._entries += 1
        entry.extra["queue"], entry.extra["order"] = float(queue), float(self._entries)
        self.rekey(entry)

    def _executed(self, entry: Active, now: float) -> float:
        """Seconds of progress since its last promotion. A run's restart cost does not count: counted, a
        restart cost of at least a queue's slice (threshold / GPUs) demotes a resumed job before it makes
        any progress, the guard promotes it back, and two such jobs preempt each other forever."""
        return entry.extra.get("las_executed", 0.0) + max(0.0, entry.running_for(now) - entry.overhead)

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
            if not entry.job.gpus:  # attained service is GPU time: a job without GPUs never crosses one
                return None
            base = entry.extra.get("las_executed", 0.0)
            return entry.start + entry.overhead + self.thresholds[queue] / entry.job.gpus - base
        executed = entry.extra.get("las_executed", 0.0)
        if entry.start is None and self.starvation > 0 and executed and queue > 0:
            return now + executed * self.starvation - self._pending(entry, now)
        return None


__all__ = ["TiresiasLas"]
