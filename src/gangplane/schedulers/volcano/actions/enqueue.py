"""``enqueue``: admit Pending jobs to Inqueue while their queue and the cluster can hold their
``minResources`` (proportion/capacity ``JobEnqueueable`` and the ``overcommit`` plugin; volcano.md §7).

Upstream pops queues by QueueOrder and each queue's best job in turn; admission moves no share, so that is
a round robin over queues in order. Rejected jobs stay Pending with a reason until a later cycle.
"""

from __future__ import annotations

from bisect import bisect_left
from heapq import heapify, heappop, heappush

import numpy as np

from gangplane.api.scheduling import volcano as vc
from gangplane.schedulers.core.resources import Vector
from gangplane.schedulers.volcano import vec
from gangplane.schedulers.volcano.book import quantity_text
from gangplane.schedulers.volcano.jobs import Job
from gangplane.schedulers.volcano.kept import PENDING_PHASES, Indexes, Line
from gangplane.schedulers.volcano.session import Session
from gangplane.schedulers.volcano.vec import Vec


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
        return not self.fits(np.min(np.stack(minima), axis=0).astype(np.float64))

    def admit(self, minimum: Vec) -> None:
        self.inqueue = self.inqueue + minimum


def enqueue(session: Session) -> None:
    kept = session.kept
    if (
        kept is not None
        and not session.config.explain
        and not session.touched
        and not kept.index.pending_holding
    ):
        _enqueue_by_shape(session, kept.index)
        return
    overcommit = _Overcommit(session)
    pending = [j for j in session.jobs.values() if j.phase in PENDING_PHASES]
    minima = [j.min_resources for j in pending if j.min_resources is not None]
    if not session.config.explain and overcommit.refuses_all(minima):
        for job in pending:  # nothing with minResources is admitted, and nobody asks why: only the rest
            if job.min_resources is None:
                _admit(session, job, overcommit, None)
        return
    for job in _round_robin(session, pending):
        if job.min_resources is None:
            _admit(session, job, overcommit, None)
            continue
        minimum = session.qvec(job.min_resources)
        if not (session.book.enqueueable(job.queue, minimum) and overcommit.fits(minimum)):
            if session.config.explain:
                reason = session.book.enqueue_reason(job.queue, minimum) or overcommit.reason(minimum)
                session.inqueue_reasons[job.key] = f"not admitted (Pending): {reason}"
            continue
        _admit(session, job, overcommit, minimum)


def _admit(session: Session, job: Job, overcommit: _Overcommit, minimum: Vec | None) -> None:
    job.phase = vc.PodGroupPhase.INQUEUE
    session.touched.add(job.key)
    if minimum is not None:
        session.book.add_inqueue(job.queue, minimum)
        overcommit.admit(minimum)


def _enqueue_by_shape(session: Session, index: Indexes) -> None:
    """``enqueue`` over the kept Pending jobs, visiting only shapes and admissions: the same round robin
    (turn = place in the queue's line, then queue order), but once a (queue, ``minResources``) shape is
    refused every later job of that shape is too (admissions only add to what is Inqueue), so the shape
    leaves the round; lines hold only jobs holding nothing, whose order is fixed. The first job of each
    queue's live shapes takes its turn from a heap."""
    overcommit = _Overcommit(session)
    lines = {q: per_shape for q, per_shape in index.lines.items() if per_shape}
    least = index.least.get()
    if least is not None and not overcommit.fits(least):
        for per_shape in lines.values():  # nothing with minResources is admitted: only the rest
            for _, key in per_shape.get(None, ()):
                _admit(session, session.jobs[key], overcommit, None)
        return
    first = {q: min(line[0] for line in per_shape.values()) for q, per_shape in lines.items()}
    ranked = sorted(lines, key=lambda q: (session.book.order_key(q), first[q]))
    cursors = {q: {shape: 0 for shape in lines[q]} for q in ranked}
    turns = [turn for at, q in enumerate(ranked) if (turn := _next_turn(lines[q], cursors[q], at, q))]
    heapify(turns)
    while turns:
        _, at, queue, shape = heappop(turns)
        line, cursor = lines[queue][shape], cursors[queue]
        job = session.jobs[line[cursor[shape]][1]]
        minimum = None if shape is None else session.qvec(job.min_resources)  # type: ignore[arg-type]
        if minimum is None or (session.book.enqueueable(queue, minimum) and overcommit.fits(minimum)):
            _admit(session, job, overcommit, minimum)
            cursor[shape] += 1
        else:
            del cursor[shape]  # refused: so is the rest of the shape
        if turn := _next_turn(lines[queue], cursor, at, queue):
            heappush(turns, turn)


def _next_turn(
    per_shape: dict[bytes | None, Line], cursor: dict[bytes | None, int], at: int, queue: str
) -> tuple[int, int, str, bytes | None] | None:
    """The queue's next job of a live shape as (its place in the queue's whole line, the queue's place,
    queue, shape), or ``None`` when no live shape has jobs left."""
    heads = [(per_shape[s][i], s) for s, i in cursor.items() if i < len(per_shape[s])]
    if not heads:
        return None
    entry, shape = min(heads)
    place = sum(bisect_left(line, entry) for line in per_shape.values())
    return (place, at, queue, shape)
