"""``enqueue``: admit Pending jobs to Inqueue while their queue and the cluster can hold their
``minResources`` (proportion/capacity ``JobEnqueueable`` and the ``overcommit`` plugin; volcano.md §7).

Upstream pops queues by QueueOrder and each queue's best job in turn; admission moves no share, so that is
a round robin over queues in order. Rejected jobs stay Pending with a reason until a later cycle.
"""

from __future__ import annotations

import numpy as np

from gangplane.api.scheduling import volcano as vc
from gangplane.schedulers.core.resources import Vector
from gangplane.schedulers.volcano import vec
from gangplane.schedulers.volcano.book import quantity_text
from gangplane.schedulers.volcano.jobs import Job
from gangplane.schedulers.volcano.session import Session
from gangplane.schedulers.volcano.vec import Vec

PENDING_PHASES = frozenset({"", vc.PodGroupPhase.PENDING})


def _round_robin(session: Session, jobs: list[Job]) -> list[Job]:
    per_queue: dict[str, list[Job]] = {}
    for job in sorted(jobs, key=session.job_order):
        per_queue.setdefault(job.queue, []).append(job)
    lines = [per_queue[q] for q in sorted(per_queue, key=session.book.order_key)]
    rounds = max((len(line) for line in lines), default=0)
    return [line[i] for i in range(rounds) for line in lines if i < len(line)]


class _Overcommit:
    """``inqueue + minResources ≤ total × factor − used`` on the requested dimensions."""

    def __init__(self, session: Session) -> None:
        self.factor, self.names = session.config.overcommit_factor, session.index.names
        self.total = session.book.total
        self.used = session.qvec(session.snapshot.requested.sum(axis=0))
        self.idle: Vec | None = None if self.factor is None else self.total * self.factor - self.used
        leaves = [a for name, a in session.book.attrs.items() if session.book.is_leaf(name)]
        self.inqueue = sum((a.inqueue for a in leaves), start=vec.zeros(len(session.index)))

    def reason(self, minimum: Vec) -> str | None:
        if self.idle is None or vec.le_on(self.inqueue + minimum, self.idle, minimum):
            return None
        dim = int(np.argmax(np.where(minimum > 0, self.inqueue + minimum - self.idle, -np.inf)))
        name = self.names[dim]
        return (
            f"cluster is full: the overcommit factor {self.factor:g} admits "
            f"{self.factor:g} × {name}={quantity_text(name, self.total[dim])}; "
            f"{quantity_text(name, self.used[dim])} in use, {quantity_text(name, self.inqueue[dim])} admitted "
            f"(Inqueue), {quantity_text(name, minimum[dim])} more requested"
        )

    def fits(self, minimum: Vec) -> bool:
        return self.idle is None or vec.le_on(self.inqueue + minimum, self.idle, minimum)

    def refuses_all(self, minima: list[Vector]) -> bool:
        """Would ``fits`` refuse each of ``minima``? Yes when, on a dimension all of them request, not even
        the least of them fits (one vector test instead of one per job)."""
        if self.idle is None or not minima:
            return False
        least = np.min(np.stack(minima), axis=0).astype(np.float64)
        return not vec.le_on(self.inqueue + least, self.idle, least)

    def admit(self, minimum: Vec) -> None:
        self.inqueue = self.inqueue + minimum


def enqueue(session: Session) -> None:
    overcommit = _Overcommit(session)
    pending = [j for j in session.jobs.values() if j.phase in PENDING_PHASES]
    minima = [j.min_resources for j in pending if j.min_resources is not None]
    if not session.config.explain and overcommit.refuses_all(minima):
        for job in pending:  # nothing with minResources is admitted, and nobody asks why: only the rest
            if job.min_resources is None:
                job.phase = vc.PodGroupPhase.INQUEUE
        return
    for job in _round_robin(session, pending):
        if job.min_resources is None:
            job.phase = vc.PodGroupPhase.INQUEUE
            continue
        minimum = session.qvec(job.min_resources)
        if not (session.book.enqueueable(job.queue, minimum) and overcommit.fits(minimum)):
            if session.config.explain:
                reason = session.book.enqueue_reason(job.queue, minimum) or overcommit.reason(minimum)
                session.inqueue_reasons[job.key] = f"not admitted (Pending): {reason}"
            continue
        job.phase = vc.PodGroupPhase.INQUEUE
        session.book.add_inqueue(job.queue, minimum)
        overcommit.admit(minimum)
