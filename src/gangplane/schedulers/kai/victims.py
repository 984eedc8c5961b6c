"""Victims of KAI's reclaim and preempt: units of running jobs, searched until the starving job fits.

A unit is one pod above its pod set's ``minMember`` (the root's for a job without SubGroups) or the job's
remaining gang at once: KAI evicts an elastic job's extra pods one by one before the job itself
(``reclaim_elastic_test.go``, ``reclaim_sub_group_test.go`` "partial eviction"); a gang is never broken.
Extras go in reverse task order (the ``taskorder`` plugin's last first). Within one victim priority, extras
come before whole gangs: the ``elastic`` JobOrder ranks a job above its minimum after one at it, and victims
are taken in reverse job order. The search (``core.headroom.VictimSearch``) removes each unit from snapshot
and queue book as it goes; ``evict`` records the evictions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import groupby

from gangplane.schedulers.base import Eviction
from gangplane.schedulers.core.headroom import Headroom, VictimSearch, single_shape
from gangplane.schedulers.core.resources import Vector
from gangplane.schedulers.kai import placement
from gangplane.schedulers.kai.model import KaiJob, Member, Res
from gangplane.schedulers.kai.session import KaiSession


@dataclass(frozen=True, slots=True)
class Unit:
    job: KaiJob
    members: tuple[Member, ...]
    extra: bool  # an elastic pod above minMember; else the job's whole remaining gang
    request: Res  # the members' requests in KAI units (the search takes and gives back a unit many times)

    @property
    def queue(self) -> str:
        return self.job.queue


def _unit(session: KaiSession, job: KaiJob, members: list[Member], extra: bool) -> Unit:
    return Unit(job, tuple(members), extra, session.request(members))


def _held(session: KaiSession, job: KaiJob) -> list[Member]:
    """Running members still counted in the snapshot (not taken by the search so far)."""
    return [m for m in job.members if m.running and session.snapshot.location(m.pod.key) is not None]


def _spare(job: KaiJob, held: list[Member]) -> set[str]:
    """Held pods above their pod set's ``minMember`` (the root's for a job without SubGroups): the last
    ones in task order of each set."""
    by_leaf: dict[str, list[Member]] = {}
    for m in held:
        by_leaf.setdefault(m.leaf, []).append(m)
    spare: set[str] = set()
    for leaf, members in by_leaf.items():
        spare.update(m.pod.key for m in members[(job.tree.nodes[leaf].min_member or 0) :])
    return spare


def extras(session: KaiSession, job: KaiJob) -> list[Unit]:
    """One unit per pod above its pod set's minimum, pod sets by name, last in task order first: taking
    them leaves every set, so the gang, satisfied."""
    held = _held(session, job)
    spare = _spare(job, held)
    ordered = sorted((m for m in held if m.pod.key in spare), key=lambda m: m.leaf)
    by_leaf = [list(g) for _, g in groupby(ordered, key=lambda m: m.leaf)]
    return [_unit(session, job, [m], True) for members in by_leaf for m in reversed(members)]


def whole(session: KaiSession, job: KaiJob) -> Unit:
    """The job's gang: each pod set's first ``minMember`` held pods (the pods above are its extras, offered
    on their own)."""
    held = _held(session, job)
    spare = _spare(job, held)
    return _unit(session, job, [m for m in held if m.pod.key not in spare], False)


def in_order(
    session: KaiSession, jobs: Iterable[KaiJob], elastic: Iterable[KaiJob], wholes: dict[str, Unit]
) -> Iterator[Unit]:
    """Units of ``jobs`` (already in victim order: priority, then newest first): per priority, the extras of
    the ``elastic`` jobs among them first, then each job's remaining gang. ``wholes`` keeps the whole units
    of jobs without extras across the searches of one action (their members only change by eviction, after
    which the job is no victim any more)."""
    spare = {p: list(g) for p, g in groupby(elastic, key=lambda j: j.priority)}
    for priority, group in groupby(jobs, key=lambda j: j.priority):
        with_extras = spare.get(priority, [])
        for job in with_extras:
            yield from extras(session, job)
        changing = {job.key for job in with_extras}
        for job in group:
            unit = wholes.get(job.key) if job.key not in changing else None
            if unit is None:
                unit = whole(session, job)
                if job.key not in changing:
                    wholes[job.key] = unit
            if unit.members:
                yield unit


def is_elastic(job: KaiJob) -> bool:
    """Has the job a running pod above its pod set's minimum?"""
    counts: dict[str, int] = {}
    for m in job.members:
        if m.running:
            counts[m.leaf] = counts.get(m.leaf, 0) + 1
    return any(n > (job.tree.nodes[leaf].min_member or 0) for leaf, n in counts.items())


# ---------------------------------------------------------------- the search


Taken = list[tuple[Unit, list[tuple[str, int]]]]  # units with the (pod, node row) removals to undo


def _remove(session: KaiSession, unit: Unit) -> list[tuple[str, int]]:
    removed = []
    for m in unit.members:
        if (row := session.snapshot.location(m.pod.key)) is not None:
            session.snapshot.forget(m.pod.key)
            removed.append((m.pod.key, row))
    session.book.release(unit.queue, unit.request, unit.job.preemptible)
    return removed


def _restore(session: KaiSession, unit: Unit, removed: list[tuple[str, int]]) -> None:
    pods = {m.pod.key: m.pod for m in unit.members}
    for key, row in removed:
        session.snapshot.assume(pods[key], row)
    session.book.allocate(unit.queue, unit.request, unit.job.preemptible)


def undo(session: KaiSession, taken: Taken) -> None:
    for unit, removed in reversed(taken):
        _restore(session, unit, removed)


def _rows(session: KaiSession, unit: Unit) -> list[int]:
    return [row for m in unit.members if (row := session.snapshot.location(m.pod.key)) is not None]


def _loads(session: KaiSession, unit: Unit) -> list[tuple[int, Vector]]:
    return [
        (row, m.pod.requests)
        for m in unit.members
        if (row := session.snapshot.location(m.pod.key)) is not None
    ]


def _fits(session: KaiSession, job: KaiJob) -> bool:
    token = session.snapshot.checkpoint()
    ok = placement.place(session, job, explain=False).ok
    session.snapshot.rollback(token)
    return ok


def search(
    session: KaiSession, job: KaiJob, units: Iterable[Unit], accept: Callable[[Unit], bool]
) -> Taken | None:
    """The units to evict so ``job`` fits, already removed from snapshot and book; ``None`` (nothing
    changed) when all acceptable units together are not enough. A whole gang chosen takes along any of its
    extras the search gave back (they could not run without it)."""
    members = placement.needed_members(job) or []
    one_shape = not job.topology and single_shape([m.pod for m in members])
    taken = VictimSearch[Unit, list[tuple[str, int]]](
        take=lambda unit: _remove(session, unit),
        give_back=lambda unit, removed: _restore(session, unit, removed),
        fits=lambda: _fits(session, job),
        rows=lambda unit: _rows(session, unit),
        independent=lambda unit: session.book.independent(job.queue, unit.queue, job.preemptible),
        room=Headroom(session.snapshot, members[0].pod) if one_shape else None,
        needed=placement.needed_members_count(job, members),
        exact=one_shape,
        loads=lambda unit: _loads(session, unit),
        book_take=lambda unit: session.book.release(unit.queue, unit.request, unit.job.preemptible),
        book_give=lambda unit: session.book.allocate(unit.queue, unit.request, unit.job.preemptible),
    ).run(units, accept)
    if taken is None:
        return None
    for unit in [u for u, _ in taken if not u.extra]:
        if left := _held(session, unit.job):
            rest = _unit(session, unit.job, left, True)
            taken.append((rest, _remove(session, rest)))
    return taken


def released(session: KaiSession, taken: Taken) -> dict[str, Res]:
    """What each victim queue gives up."""
    out: dict[str, Res] = {}
    for unit, _ in taken:
        out[unit.queue] = out.get(unit.queue, 0.0) + unit.request
    return out


def evict(session: KaiSession, job: KaiJob, taken: Taken, reason: str, releasing: list[Member]) -> None:
    """Record the evictions (adding them to ``releasing``), pipeline ``job`` onto the freed room."""
    count = 0
    for unit, _ in taken:
        session.touched.add(unit.job.key)
        for m in unit.members:
            m.running, m.releasing = False, True
            releasing.append(m)
            message = f"{reason} by {job.key} (priority {job.priority}, queue {job.queue})"
            session.evictions.append(Eviction(m.pod.key, reason, message))
            session.evicted[m.pod.key] = m.pod.uid
            count += 1
    attempt = placement.place(session, job)
    for member, _ in attempt.placed:
        session.book.allocate(job.queue, session.units(member.pod), job.preemptible)
        session.pipelined_pods.add(member.pod.key)
    session.pipelined.add(job.key)
    session.reasons[job.key] = ("Pipelined", f"waiting for {count} evicted pods to terminate ({reason})")
