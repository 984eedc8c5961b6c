"""Victim search shared by ``preempt`` and ``reclaim``: evict whole units until the starving job fits.

A unit is one elastic task above its job's ``minMember``, or the job's remaining gang at once — evicting a
single gang member would leave a gang partly running (gangplane takes the gang whole, as Volcano's newer
``gangpreempt``/``gangreclaim`` actions do; volcano.md §7). Each unit is offered to the action's
``accept`` predicate *as the session stands* (so reclaim re-checks the victim queue after every victim),
then removed from the snapshot and the queue book. Once the job fits, needless units are reprieved, newest
choice first. The snapshot and book are restored when no set of victims is enough.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from gangplane.schedulers.base import Eviction
from gangplane.schedulers.core.headroom import Headroom, VictimSearch, single_shape
from gangplane.schedulers.core.objects import NEVER, PodInfo
from gangplane.schedulers.volcano import placement
from gangplane.schedulers.volcano.jobs import Job, Task, TaskStatus
from gangplane.schedulers.volcano.kept import EVICTABLE
from gangplane.schedulers.volcano.session import Session
from gangplane.schedulers.volcano.vec import Vec

CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


@dataclass(frozen=True, slots=True)
class Unit:
    job: Job
    tasks: tuple[Task, ...]


PREEMPTABLE = "volcano.sh/preemptable"
NOT_ELIGIBLE = "not eligible to preempt: preemptionPolicy is Never"
_FALSE = frozenset({"0", "f", "F", "false", "FALSE", "False"})  # Go ``strconv.ParseBool`` spellings


def _protected(task: Task) -> bool:
    """``conformance``: never kube-system pods or critical priority classes."""
    return task.pod.namespace == "kube-system" or task.pod.priority_class_name in CRITICAL_CLASSES


def preemptable(task: Task) -> bool:
    """``GetPodPreemptable``: the annotation, else the label ``volcano.sh/preemptable``; unset or not a
    boolean counts as preemptable. A ``"false"`` pod is never a preempt or reclaim victim."""
    given = task.pod.annotations.get(PREEMPTABLE, task.pod.labels.get(PREEMPTABLE))
    return given not in _FALSE


def units_of(job: Job) -> list[Unit]:
    """Elastic extras (newest first, preemptable only) one by one, then the gang's remaining members as one
    unit — only if all of them are preemptable, since evicting part of a gang would break it."""
    if any(_protected(x) for x in job.tasks):
        return []
    running = [t for t in job.tasks if t.status in EVICTABLE]
    running.sort(key=lambda t: (-t.pod.created, t.pod.key))
    extra = max(job.ready_count() - job.min_member, 0)
    movable = [t for t in running if preemptable(t)]
    singles = [Unit(job, (t,)) for t in movable[: min(extra, len(movable))]]
    chosen = {t.pod.key for u in singles for t in u.tasks}
    rest = tuple(t for t in running if t.pod.key not in chosen)
    return [*singles, Unit(job, rest)] if rest and all(preemptable(t) for t in rest) else singles


def session_units(session: Session, job: Job) -> list[Unit]:
    """``units_of(job)`` as the session stands, built once: victim searches walk the same jobs again and
    again, and a job's units change only with its task statuses (``Session.bind``, ``evict`` drop them)."""
    units = session.victim_units.get(job.key)
    if units is None:
        units = session.victim_units[job.key] = units_of(job)
    return units


def may_preempt(job: Job) -> bool:
    """Upstream's preempt and reclaim skip each pending task whose pod says ``preemptionPolicy: Never`` and
    let the job's other tasks evict (``reclaim_test.go`` "Reclaim succeeds for second task when first task
    has PreemptionPolicy=Never"). For a gang that is: it may evict unless every pending pod says Never; a
    job made only of such pods waits for free room."""
    return any(t.pod.preemption_policy != NEVER for t in job.pending())


def _remove(session: Session, unit: Unit) -> list[tuple[PodInfo, int]]:
    removed = []
    for task in unit.tasks:
        row = session.snapshot.location(task.pod.key)
        if row is not None:
            session.snapshot.forget(task.pod.key)
            removed.append((task.pod, row))
        session.book.release(unit.job.queue, session.qvec(task.pod.requests))
    return removed


def _restore(session: Session, unit: Unit, removed: list[tuple[PodInfo, int]]) -> None:
    for pod, row in removed:
        session.snapshot.assume(pod, row)
    for task in unit.tasks:
        session.book.allocate(unit.job.queue, session.qvec(task.pod.requests))


def _placed(session: Session, unit: Unit) -> list[tuple[Task, int]]:
    return [(t, row) for t in unit.tasks if (row := session.snapshot.location(t.pod.key)) is not None]


def unit_request(session: Session, unit: Unit) -> Vec:
    """What ``unit``'s tasks request together, as a queue-math vector (read-only). Its tasks are fixed, so it
    is summed once per unit (kept by the session with the unit, whose id is then not reused): victim searches
    offer, count and give back the same units again and again."""
    found = session.unit_requests.get(id(unit))
    if found is None or found[0] is not unit:
        start = np.zeros(len(session.index))
        held = sum((session.qvec(t.pod.requests) for t in unit.tasks), start=start)
        held.flags.writeable = False
        found = session.unit_requests[id(unit)] = (unit, held)
    return found[1]


def _book(session: Session, unit: Unit, move: Callable[[str, Vec], None]) -> None:
    """The unit's queue-book move at once: its tasks' vectors hold whole units (milli-cores, bytes, counts),
    so moving their sum leaves the book as moving each task did."""
    move(unit.job.queue, unit_request(session, unit))


def _rows(session: Session, unit: Unit) -> list[int]:
    return [row for t in unit.tasks if (row := session.snapshot.location(t.pod.key)) is not None]


def _fits(session: Session, job: Job) -> bool:
    token = session.snapshot.checkpoint()
    ok = placement.place(session, job, explain=False).ok
    session.snapshot.rollback(token)
    return ok


def search(
    session: Session, job: Job, units: Iterable[Unit], accept: Callable[[Unit], bool]
) -> list[Unit] | None:
    """The units to evict so ``job`` fits, already removed from snapshot and book; ``None`` (nothing
    changed) when all acceptable units together are not enough (``core.headroom.VictimSearch``)."""
    pods = [t.pod for t in job.pending() if not t.best_effort]
    one_shape = job.topology is None and single_shape(pods)
    run = VictimSearch[Unit, list[tuple[PodInfo, int]]](
        take=lambda unit: _remove(session, unit),
        give_back=lambda unit, removed: _restore(session, unit, removed),
        fits=lambda: _fits(session, job),
        rows=lambda unit: _rows(session, unit),
        independent=lambda unit: unit.job.queue != job.queue and not session.config.hierarchical,
        room=Headroom(session.snapshot, pods[0]) if one_shape else None,
        needed=max(placement.needed(job), 1),
        exact=one_shape and not job.min_task_member,  # roles make the kept subset matter, not only its size
        loads=lambda unit: [(row, t.pod.requests) for t, row in _placed(session, unit)],
        book_take=lambda unit: _book(session, unit, session.book.release),
        book_give=lambda unit: _book(session, unit, session.book.allocate),
    ).run(units, accept)
    return None if run is None else [unit for unit, _ in run]


def evict(session: Session, job: Job, units: list[Unit], reason: str, releasing: list[Task]) -> None:
    """Record the evictions (adding them to ``releasing``), pipeline ``job`` onto the freed room (reserved,
    not bound) and say so."""
    count = 0
    session.touched.add(job.key)
    for unit in units:
        session.victim_units.pop(unit.job.key, None)
        session.touched.add(unit.job.key)
        for task in unit.tasks:
            unit.job.set_status(task, TaskStatus.RELEASING)
            releasing.append(task)
            message = f"{reason} by {job.key} (priority {job.priority}, queue {job.queue})"
            session.evictions.append(Eviction(task.pod.key, reason, message))
            session.evicted[task.pod.key] = (task.pod.uid, unit.job.key)
            count += 1
    attempt = placement.place(session, job)
    for task, _ in attempt.placed:
        session.book.allocate(job.queue, session.qvec(task.pod.requests))
    session.pipelined.add(job.key)
    session.messages[job.key] = f"waiting for {count} evicted pods to terminate ({reason})"


def releasing(session: Session) -> list[Task]:
    return [t for j in holders(session, "releasing") for t in j.tasks if t.status == TaskStatus.RELEASING]


def holders(session: Session, kind: str) -> list[Job]:
    """The jobs, in key order, that may hold ``"releasing"`` or ``"evictable"`` tasks: every job, or from the
    kept indexes those that did as parsed and those this session changed."""
    if session.kept is None:
        return list(session.jobs.values())
    index = session.kept.index
    found = index.releasing | session.touched if kind == "releasing" else index.evictable
    return [session.jobs[key] for key in sorted(found) if key in session.jobs]


def waiting_for_releasing(session: Session, job: Job, releasing: list[Task]) -> bool:
    """Does the job fit once pods already terminating are gone (upstream FutureIdle)? Then it waits."""
    if not releasing:
        return False
    token = session.snapshot.checkpoint()
    for task in releasing:
        if session.snapshot.location(task.pod.key) is not None:
            session.snapshot.forget(task.pod.key)
    ok = placement.place(session, job).ok
    session.snapshot.rollback(token)
    if ok:
        session.messages[job.key] = (
            f"waiting for {len(releasing)} terminating pods to release their resources"
        )
    return ok


def quiet(session: Session, jobs: Iterable[Job]) -> bool:
    """Without victims, would ``run_disruptive`` over ``jobs`` leave even the messages as they are? Yes
    unless pods are terminating (a job may wait for them) or a job may not preempt (it is told so)."""
    return not releasing(session) and all(may_preempt(job) for job in jobs)


def run_disruptive(
    session: Session,
    jobs: Iterable[Job],
    victims_for: Callable[[Job], Iterable[Unit]],
    accept: Callable[[Job], Callable[[Unit], bool]],
    reason: str,
) -> None:
    """The loop preempt and reclaim share: per starving job, wait for terminating pods or search victims.
    A job shaped like one that already found no victims in this action is skipped: victims only get fewer
    and free room only shrinks as the action goes on."""
    terminating = releasing(session)
    hopeless: set[tuple[object, ...]] = set()
    for job in jobs:
        if not may_preempt(job):
            message = session.messages.get(job.key, "not enough resources")
            if NOT_ELIGIBLE not in message:
                session.messages[job.key] = f"{message}; {NOT_ELIGIBLE}"
            continue
        if waiting_for_releasing(session, job, terminating) or job.shape() in hopeless:
            continue
        chosen = search(session, job, victims_for(job), accept(job))
        if chosen:
            evict(session, job, chosen, reason, terminating)
        elif chosen is None:
            hopeless.add(job.shape())
