"""``preempt``: a starving job takes room from lower-priority jobs of its own queue (volcano.md §7).

Candidates: admitted, valid, starving jobs without network topology (topology jobs are excluded upstream,
volcano#4374), in job order. Victims: running or bound tasks of other jobs in the same queue whose job
priority is strictly lower (``priority``), never kube-system or critical pods (``conformance``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gangplane.schedulers.volcano.actions import victims
from gangplane.schedulers.volcano.actions.allocate import (
    candidate_stand_ins,
    candidates,
    lined_candidates,
    quiet_candidates,
    reachable,
)
from gangplane.schedulers.volcano.jobs import Job
from gangplane.schedulers.volcano.kept import EVICTABLE, lowest_holders
from gangplane.schedulers.volcano.session import Session

REASON = "Preempted"


def _victim_units(session: Session, job: Job) -> list[victims.Unit]:
    held = victims.holders(session, "evictable")  # a job holding no evictable task has no unit
    others = [j for j in held if j.queue == job.queue and j.priority < job.priority]
    others.sort(key=lambda j: j.order, reverse=True)  # newest first ...
    others.sort(key=lambda j: j.priority)  # ... within the lowest priority first (stable)
    return [unit for other in others for unit in victims.session_units(session, other)]


def _any_unit(job: Job) -> Callable[[victims.Unit], bool]:
    return lambda unit: True


def _lowest_holders(session: Session) -> dict[str, int]:
    """Per queue, the lowest priority of a job holding an evictable task (a victim needs a lower one)."""
    if session.kept is not None and not session.evictions:  # nothing evicted yet: as parsed
        return lowest_holders(session.kept.index)
    lowest: dict[str, int] = {}
    for job in victims.holders(session, "evictable"):
        if job.priority < lowest.get(job.queue, job.priority + 1) and job.count(EVICTABLE):
            lowest[job.queue] = job.priority
    return lowest


def _may_find_victims(session: Session, jobs: Iterable[Job]) -> bool:
    """Could any of ``jobs`` have a victim? Only above the lowest priority holding an evictable task in its
    queue (upstream ``preempt.go`` offers victims through ``ssn.Preemptable``, where the ``priority``
    plugin keeps only lower job priorities): one compare per job and a lookup per queue."""
    lowest = _lowest_holders(session)
    return bool(lowest) and any(j.priority > lowest.get(j.queue, j.priority) for j in jobs)


def _preemptors(session: Session) -> list[Job]:
    """Starving candidates without network topology: from the kept lines where allocate takes them (each
    of the three is a question of the job's shape), else every candidate asked."""

    def wanted(j: Job) -> bool:
        return j.topology is None and j.starving() and j.key not in session.pipelined

    if quiet_candidates(session) and session.kept is not None:
        if not _may_find_victims(session, filter(wanted, candidate_stand_ins(session))):
            return []  # ``_may_find_victims`` reads a job's queue and priority: a line's first one says it
        return lined_candidates(session, wanted)
    return [j for j in candidates(session) if wanted(j)]


def preempt(session: Session) -> None:
    if quiet_candidates(session) and not _may_find_victims(session, reachable(session)):
        return  # no candidate has a victim and nobody reads the messages: nothing would change
    jobs = _preemptors(session)
    if not _may_find_victims(session, jobs) and (not session.config.explain or victims.quiet(session, jobs)):
        return  # no job has a victim, and victims only get fewer: the action would change nothing
    jobs.sort(key=session.job_order)  # only now: most passes return above
    victims.run_disruptive(session, jobs, lambda job: _victim_units(session, job), _any_unit, REASON)
