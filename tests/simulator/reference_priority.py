"""The preemptive policies as documented, done the straightforward way: every cycle sorts every active job by
``rank`` and walks the whole ranking, and ``next_cycle`` scans every job. The fast paths must give the same
schedule (``test_sim_priority_fast.py``)."""

from __future__ import annotations

from collections.abc import Sequence

from gangplane.simulator.policies.base import Decision, Reject
from gangplane.simulator.policies.fifo import NEVER_FITS
from gangplane.simulator.policies.las import TiresiasLas
from gangplane.simulator.policies.priority import PreemptivePriority, Srtf


def full_ranking_schedule(policy: PreemptivePriority, now: float) -> Sequence[Decision]:
    policy._ended.clear()
    policy._oversized.clear()
    decisions: list[Decision] = []
    ranked = sorted(policy.active.values(), key=lambda e: policy.rank(e, now))
    free, granted = policy.total, set()
    for entry in ranked:
        if entry.job.gpus > policy.total:
            del policy.active[entry.job.id]
            decisions.append(Reject(entry.job.id, NEVER_FITS))
        elif entry.job.gpus <= free:
            granted.add(entry.job.id)
            free -= entry.job.gpus
    for entry in ranked:
        if entry.start is not None and entry.job.id not in granted:
            policy._preempt(entry, now, decisions)
    for entry in ranked:
        if entry.start is None and entry.job.id in granted:
            policy._unplaceable.clear()  # the reference tries every granted gang
            policy._start(entry, now, decisions)
    return decisions


class ReferenceSrtf(Srtf):
    def schedule(self, now: float) -> Sequence[Decision]:
        return full_ranking_schedule(self, now)


class ReferenceLas(TiresiasLas):
    def schedule(self, now: float) -> Sequence[Decision]:
        self._new.clear()
        return full_ranking_schedule(self, now)

    def next_cycle(self, now: float) -> float | None:
        wakes = [t for e in self.active.values() if (t := self._next_change(e, now)) is not None and t > now]
        return min(wakes, default=None)
