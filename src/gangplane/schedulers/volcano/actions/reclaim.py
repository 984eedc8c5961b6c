"""``reclaim``: a starving job of a queue below its entitlement takes back resources other queues borrowed
(volcano.md §7, §8).

The reclaiming queue must not be Overused and must pass ``Preemptive`` for the job's missing tasks. Victims
are running or bound tasks of *other* queues that are ``reclaimable``; each unit is accepted only while its
queue still passes the share plugin's ``Reclaimable`` test (proportion: allocated above deserved; capacity:
guarantee kept, deserved exceeded on a dimension the victim uses), re-checked after every victim.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from heapq import merge
from itertools import groupby

import numpy as np

from gangplane.schedulers.volcano import placement
from gangplane.schedulers.volcano.actions import victims
from gangplane.schedulers.volcano.actions.allocate import (
    candidates,
    lined_candidates,
    quiet_candidates,
    reachable,
)
from gangplane.schedulers.volcano.jobs import Job
from gangplane.schedulers.volcano.kept import EVICTABLE
from gangplane.schedulers.volcano.session import Session
from gangplane.schedulers.volcano.vec import Vec

REASON = "Reclaimed"


def _missing_request(session: Session, job: Job) -> Vec:
    """The request of the tasks reclaim is for: with the hierarchy every pending task (ancestors' room may be
    freed by the victims), else those the queue admits now."""
    if session.config.hierarchical:
        tasks = [t for t in job.pending() if not t.best_effort]
    else:
        tasks, _ = placement.quota_allowed(session, job)
    wanted = tasks[: max(placement.needed(job), 1)]
    return sum((session.qvec(t.pod.requests) for t in wanted), start=np.zeros(len(session.index)))


def _holders(session: Session) -> dict[str, list[Job]]:
    """Per queue, its jobs that may hold evictable tasks, in victim order (priority, then key). Static
    within the action: evictions only change task statuses, which ``_victim_units`` reads when it reaches a
    job."""
    per_queue: dict[str, list[Job]] = {}
    for job in sorted(victims.holders(session, "evictable"), key=lambda j: (j.priority, j.key)):
        per_queue.setdefault(job.queue, []).append(job)
    return per_queue


def _victim_units(session: Session, job: Job, holders: dict[str, list[Job]]) -> Iterator[victims.Unit]:
    """Units of other queues' holding jobs ordered by (queue share desc, priority, key).

    Queue shares are read now, before the search removes anything (as a sort of all jobs would); units are
    built lazily, since the search usually stops after a few and task statuses do not change while it runs.
    """
    queues = [q for q in holders if q != job.queue and session.book.may_give(q)]
    shares = {q: session.book.share(q) for q in queues}
    tiers = [list(g) for _, g in groupby(sorted(queues, key=lambda q: -shares[q]), key=lambda q: -shares[q])]
    return _units_of_tiers(session, holders, tiers)


def _units_of_tiers(
    session: Session, holders: dict[str, list[Job]], tiers: list[list[str]]
) -> Iterator[victims.Unit]:
    """Queues of equal share interleave their jobs by (priority, key). A job whose queue can no longer give
    (``may_give``) is skipped: ``accept`` would refuse each of its units."""
    for tier in tiers:
        for other in merge(*(holders[q] for q in tier), key=lambda j: (j.priority, j.key)):
            if session.book.may_give(other.queue) and other.holding():
                yield from victims.session_units(session, other)


def _acceptor(session: Session) -> Callable[[victims.Unit], bool]:
    """Each search re-offers the same units; what a unit holds depends only on its pods, so it is summed
    once per session (``victims.unit_request``; a job's units are rebuilt when its task statuses change)."""

    def accept(unit: victims.Unit) -> bool:
        return session.book.reclaimable(unit.job.queue, victims.unit_request(session, unit))

    return accept


def _may_reclaim(session: Session, job: Job) -> bool:
    if not job.starving() or job.key in session.pipelined or session.book.overused(job.queue):
        return False
    candidates = [t for t in job.pending() if not t.best_effort]
    count = max(placement.needed(job), 1)
    if not session.config.hierarchical and (
        len(candidates) < count or placement.quota_refuses(session, job, candidates, count)
    ):
        return False  # its own queue admits too few pods, and evicting other queues' pods never changes that
    return session.book.preemptive(job.queue, _missing_request(session, job))


def _holder_queues(session: Session) -> set[str]:
    """The queues that may hold an evictable task: as parsed in a kept session (a session only moves tasks
    away from Bound and Running), else walked."""
    if session.kept is not None:
        return {queue for queue, priorities in session.kept.index.lowest.items() if priorities}
    return {j.queue for j in victims.holders(session, "evictable") if j.count(EVICTABLE)}


def _reaches(session: Session, jobs: Iterable[Job]) -> bool:
    """Could any of ``jobs`` have a victim? Only a starving, unpipelined job of a queue that is not
    Overused is listed (``_may_reclaim``, before the first search), and it needs a giver other than its own
    queue: one holding an evictable task and able to give (upstream ``reclaim.go`` takes reclaimees only
    from jobs of other queues that are ``Reclaimable``). Until a search evicts no queue's share moves, so
    if no listed job has such a giver none ever does: decided per queue, not per job (one queue that gives
    is everyone's source but its own). Queues and givers are asked one at a time, until a pair is found."""
    queues = {j.queue for j in jobs if j.starving() and j.key not in session.pipelined}
    wanting = (q for q in sorted(queues) if not session.book.overused(q))
    first = next(wanting, None)
    if first is None:
        return False
    givers = (g for g in sorted(_holder_queues(session)) if session.book.may_give(g))
    giver = next(givers, None)
    if giver is None or giver != first:
        return giver is not None
    return next(wanting, None) is not None or next(givers, None) is not None  # either pairs with the other


def _reclaimers(session: Session, may_reclaim: Callable[[Job], bool]) -> list[Job]:
    """The candidates that may reclaim: from the kept lines where allocate takes them (a line answers as
    its first job, ``may_reclaim`` being a question of the job's shape), else every candidate asked."""
    if quiet_candidates(session) and session.kept is not None:
        return lined_candidates(session, may_reclaim)
    return [j for j in candidates(session) if may_reclaim(j)]


def reclaim(session: Session) -> None:
    if quiet_candidates(session) and not _reaches(session, reachable(session)):
        return  # no candidate has a victim and nobody reads the messages: nothing would change
    if not (quiet_candidates(session) and session.kept is not None):
        chosen = candidates(session)
        if not _reaches(session, chosen) and (not session.config.explain or victims.quiet(session, chosen)):
            return  # no queue can give to any candidate: no victim now or later in this action
    # Quiet and kept: the same check over the candidates' stand-ins is left out. ``reachable`` passed and
    # covers them, so it would return only for a non-leaf queue's or an ineligible job's sake (never on the
    # Philly replay); where it would, the search below finds no giver and changes nothing but messages,
    # which nobody reads here.
    may: dict[tuple[object, ...], bool] = {}  # by shape: the book does not move until a search evicts

    def may_reclaim(job: Job) -> bool:
        if not job.starving() or job.key in session.pipelined:
            return False  # the cheap part of ``_may_reclaim`` first
        key = job.shape()
        if key not in may:
            may[key] = _may_reclaim(session, job)
        return may[key]

    jobs = sorted(_reclaimers(session, may_reclaim), key=session.job_order)  # filtered, then sorted
    accept = _acceptor(session)
    holders: dict[str, list[Job]] = {}

    def units(job: Job) -> Iterator[victims.Unit]:
        if not holders:  # built at the first search (most passes search nothing)
            holders.update(_holders(session))
        return _victim_units(session, job, holders)

    victims.run_disruptive(session, jobs, units, lambda job: accept, REASON)
