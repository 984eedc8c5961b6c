"""``reclaim``: a starving job of a queue below its entitlement takes back resources other queues borrowed
(volcano.md §7, §8).

The reclaiming queue must not be Overused and must pass ``Preemptive`` for the job's missing tasks. Victims
are running or bound tasks of *other* queues that are ``reclaimable``; each unit is accepted only while its
queue still passes the share plugin's ``Reclaimable`` test (proportion: allocated above deserved; capacity:
guarantee kept, deserved exceeded on a dimension the victim uses), re-checked after every victim.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gangplane.schedulers.volcano import placement
from gangplane.schedulers.volcano.actions import victims
from gangplane.schedulers.volcano.actions.allocate import candidates
from gangplane.schedulers.volcano.jobs import Job
from gangplane.schedulers.volcano.session import Session
from gangplane.schedulers.volcano.vec import Vec

REASON = "Reclaimed"


def _missing_request(session: Session, job: Job) -> Vec:
    tasks, _ = placement.quota_allowed(session, job)
    wanted = tasks[: max(placement.needed(job), 1)]
    return sum((session.qvec(t.pod.requests) for t in wanted), start=np.zeros(len(session.index)))


def _victim_units(session: Session, job: Job) -> list[victims.Unit]:
    others = [j for j in session.jobs.values() if j.queue != job.queue and j.holding()]
    others.sort(key=lambda j: (-session.book.share(j.queue), j.priority, j.key))
    return [unit for other in others for unit in victims.units_of(other)]


def _acceptor(session: Session) -> Callable[[victims.Unit], bool]:
    def accept(unit: victims.Unit) -> bool:
        held = sum((session.qvec(t.pod.requests) for t in unit.tasks), start=np.zeros(len(session.index)))
        return session.book.reclaimable(unit.job.queue, held)

    return accept


def _may_reclaim(session: Session, job: Job) -> bool:
    if not job.starving() or job.key in session.pipelined or session.book.overused(job.queue):
        return False
    return session.book.preemptive(job.queue, _missing_request(session, job))


def reclaim(session: Session) -> None:
    jobs = [j for j in sorted(candidates(session), key=session.job_order) if _may_reclaim(session, j)]
    accept = _acceptor(session)
    victims.run_disruptive(session, jobs, lambda job: _victim_units(session, job), lambda job: accept, REASON)
