"""``enqueue``: admit Pending jobs to Inqueue while their queue and the cluster can hold their
``minResources`` (proportion/capacity ``JobEnqueueable`` and the ``overcommit`` plugin; volcano.md §7).

Upstream pops queues by QueueOrder and each queue's best job in turn; admission moves no share, so that is
a round robin over queues in order. Rejected jobs stay Pending with a reason until a later cycle.
"""

from __future__ import annotations

from gangplane.api.scheduling import volcano as vc
from gangplane.schedulers.volcano import vec
from gangplane.schedulers.volcano.jobs import Job
from gangplane.schedulers.volcano.session import Session
from gangplane.schedulers.volcano.vec import Vec

PENDING_PHASES = frozenset({"", vc.PodGroupPhase.PENDING})


def _round_robin(session: Session, jobs: list[Job]) -> list[Job]:
    per_queue: dict[str, list[Job]] = {}
    for job in sorted(jobs, key=session.job_order):
        per_queue.setdefault(job.queue, []).append(job)
    queues = sorted(per_queue, key=session.book.order_key)
    ordered: list[Job] = []
    while any(per_queue.values()):
        for queue in queues:
            if per_queue[queue]:
                ordered.append(per_queue[queue].pop(0))
    return ordered


class _Overcommit:
    """``inqueue + minResources ≤ total × factor − used`` on the requested dimensions."""

    def __init__(self, session: Session) -> None:
        factor = session.config.overcommit_factor
        used = session.qvec(session.snapshot.requested.sum(axis=0))
        self.idle: Vec | None = None if factor is None else session.book.total * factor - used
        leaves = [a for name, a in session.book.attrs.items() if session.book.is_leaf(name)]
        self.inqueue = sum((a.inqueue for a in leaves), start=vec.zeros(len(session.index)))

    def reason(self, minimum: Vec) -> str | None:
        if self.idle is None or vec.le_on(self.inqueue + minimum, self.idle, minimum):
            return None
        return "cluster is full: admitted jobs already claim what the overcommit factor allows"

    def admit(self, minimum: Vec) -> None:
        self.inqueue = self.inqueue + minimum


def enqueue(session: Session) -> None:
    overcommit = _Overcommit(session)
    pending = [j for j in session.jobs.values() if j.phase in PENDING_PHASES]
    for job in _round_robin(session, pending):
        if job.min_resources is None:
            job.phase = vc.PodGroupPhase.INQUEUE
            continue
        minimum = session.qvec(job.min_resources)
        reason = session.book.enqueue_reason(job.queue, minimum) or overcommit.reason(minimum)
        if reason is not None:
            session.inqueue_reasons[job.key] = f"not admitted (Pending): {reason}"
            continue
        job.phase = vc.PodGroupPhase.INQUEUE
        session.book.add_inqueue(job.queue, minimum)
        overcommit.admit(minimum)
