"""``enqueue``: admit Pending jobs to Inqueue while their queue and the cluster can hold their
``minResources`` (proportion/capacity ``JobEnqueueable`` and the ``overcommit`` plugin; volcano.md §7).

Upstream pops queues by QueueOrder and each queue's best job in turn; admission moves no share, so that is
a round robin over queues in order. Rejected jobs stay Pending with a reason until a later cycle.
"""

from __future__ import annotations

from bisect import bisect_left
from heapq import heapify, heappop, heappush

import numpy as np
import numpy.typing as npt

from gangplane.api.scheduling import volcano as vc
from gangplane.schedulers.core.resources import PODS, ResourceIndex, Vector
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
        book = session.book
        self.total, self.carried = book.total, book.carried
        self.used, self.idle = self.carried.room(
            session.snapshot.requested, self.total, self.factor, session.qvec
        )
        leaves = (
            [a for name, a in book.attrs.items() if book.is_leaf(name)]
            if book.hierarchical
            else book.attrs.values()
        )
        self.inqueue = self.carried.inqueue_sum([a.inqueue for a in leaves], len(session.index))
        self._bounds: tuple[Vec, Vec] | None = None  # ``_bound``'s last (idle, bound)

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

    def fits_rows(self, minima: Vec, unasked: npt.NDArray[np.bool_] | None = None) -> npt.NDArray[np.bool_]:
        """``fits`` of each row of ``minima`` (one row per minimum), as one vector test; ``unasked``: where
        ``minima`` is not positive, when the caller has it (it tests the same rows after each admission)."""
        if self.idle is None:
            return np.ones(len(minima), dtype=np.bool_)
        unasked = ~(minima > 0) if unasked is None else unasked
        within = self.inqueue + minima <= self._bound(self.idle)
        fits: npt.NDArray[np.bool_] = np.logical_and.reduce(within | unasked, axis=1)  # ``np.all``, unwrapped
        return fits

    def _bound(self, idle: Vec) -> Vec:
        """``vec.le_on``'s bound per dimension, ``idle + EPS × max(1, |idle|)``: once per idle vector."""
        if self._bounds is None or self._bounds[0] is not idle:
            self._bounds = (idle, idle + vec.EPS * np.maximum(1.0, np.abs(idle)))
        return self._bounds[1]

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
    queue's live shapes takes its turn from a heap.

    The overcommit test is answered for every lined shape at once (``_Verdicts``) and again only after an
    admission: a shape it refuses would only be refused at its turn, a no-op, so it never takes one, a
    queue with no shape left takes none, and the pass ends once no shape passes it (unless jobs without
    ``minResources``, always admitted, are lined). Turns keep their places in the whole lines, so the
    admissions and their order are those of the round robin over every shape."""
    lines = {q: per_shape for q, per_shape in index.lines.items() if per_shape}
    if not lines:
        return
    overcommit = _Overcommit(session)
    least = index.least.get()
    if least is not None and not overcommit.fits(least):
        for per_shape in lines.values():  # nothing with minResources is admitted: only the rest
            for _, key in per_shape.get(None, ()):
                _admit(session, session.jobs[key], overcommit, None)
        return
    shapes = {shape for per_shape in lines.values() for shape in per_shape if shape is not None}
    verdicts = _Verdicts(overcommit, shapes, session.index)
    fits = verdicts.current()
    live = {q: [s for s in per_shape if s is None or fits[s]] for q, per_shape in lines.items()}
    cursors = {q: dict.fromkeys(shapes, 0) for q, shapes in live.items() if shapes}
    unlimited = any(None in cursor for cursor in cursors.values())  # jobs admitted whatever the sums
    first = {q: min(line[0] for line in lines[q].values()) for q in cursors}
    ranked = sorted(cursors, key=lambda q: (session.book.order_key(q), first[q]))
    turns = [turn for at, q in enumerate(ranked) if (turn := _next_turn(lines[q], cursors[q], at, q))]
    heapify(turns)
    while turns:
        _, at, queue, shape = heappop(turns)
        line, cursor = lines[queue][shape], cursors[queue]
        job = session.jobs[line[cursor[shape]][1]]
        if shape is None:
            _admit(session, job, overcommit, None)
            cursor[shape] += 1
        elif verdicts.fits(shape) and session.book.enqueueable(
            queue,
            minimum := session.qvec(job.min_resources),  # type: ignore[arg-type]
        ):
            _admit(session, job, overcommit, minimum)
            cursor[shape] += 1
            verdicts.moved()
            if not unlimited and not verdicts.any():
                return  # every turn left would be refused
        else:
            del cursor[shape]  # refused: so is the rest of the shape
        if turn := _next_turn(lines[queue], cursor, at, queue):
            heappush(turns, turn)


class _Verdicts:
    """``_Overcommit.fits`` of each lined ``minResources`` shape at the current Inqueue sum, answered for
    all of them in one vector test (the same IEEE operations per element as ``vec.le_on``) and again only
    after an admission moved the sum: nothing else it reads moves within the pass."""

    def __init__(self, overcommit: _Overcommit, shapes: set[bytes], index: ResourceIndex) -> None:
        self.overcommit = overcommit
        self.keys, self.rows, self.unasked = overcommit.carried.shape_rows(shapes, index, _shape_rows)
        self._fits: dict[bytes, bool] | None = None

    def fits(self, shape: bytes) -> bool:
        return self.current()[shape]

    def any(self) -> bool:
        return any(self.current().values())

    def moved(self) -> None:
        self._fits = None

    def current(self) -> dict[bytes, bool]:
        """Each shape's verdict at the current Inqueue sum."""
        if self._fits is None:
            fits = self.overcommit.fits_rows(self.rows, self.unasked).tolist()
            self._fits = dict(zip(self.keys, fits, strict=True))
        return self._fits


def _shape_rows(keys: list[bytes], index: ResourceIndex) -> tuple[Vec, npt.NDArray[np.bool_]]:
    """The shapes' rows as ``Session.qvec`` makes them (minResources rows are int64: ``ResourceIndex.vector``)
    and where each is not positive (the same for every test of a pass)."""
    rows = np.frombuffer(b"".join(keys), dtype=np.int64).astype(np.float64).reshape(len(keys), len(index))
    rows[:, index.position(PODS)] = 0.0
    return rows, ~(rows > 0)


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
