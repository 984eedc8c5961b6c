"""allocate over the kept waiting lines: the same decisions as walking every waiting job, at the cost of
the lines and the jobs placed (kai.md *Performance*).

allocate repeatedly takes the queue the comparator prefers for its next job (``book.order_key`` with the
job's pending request) and tries that job. A failed try changes nothing but the job's own place in line,
and free room and queue allocations only shrink and grow during allocate, so once a job of a line has
failed, every later job of that line would fail too (same gang shape, request, queue and preemptibility:
``kept.line_of``). Such a job is still the head of its queue until its turn comes — its request decides
where the queue sorts — but when it comes, the queue keeps its turn for every following job of the same
line (the same request, the same comparison), so the whole run goes at once. When no line that could still
fit is left, nothing more can be placed and allocate ends: a line is marked failed before its turn as soon
as a shape that found no room covers its own (``placement.covered``: a uniform gang asking no less of
each resource for no fewer members), so a pass tries only lines that may still fit. Used when no
explanation is asked for (every failed job would need its reason), no pods are terminating (a failed job
may then be pipelined), and the queues with waiting jobs are siblings (the comparator is then a sort key).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Hashable
from dataclasses import dataclass
from heapq import heappop, heappush
from itertools import islice

import numpy as np

from gangplane.schedulers.kai import placement
from gangplane.schedulers.kai.book import OrderKey
from gangplane.schedulers.kai.kept import Line, Order, job_order, line_shape
from gangplane.schedulers.kai.model import KaiJob, Res
from gangplane.schedulers.kai.session import KaiSession


@dataclass(slots=True)
class _Cursor:
    """One line during one allocate: its jobs from ``at`` on are still waiting."""

    jobs: Line
    request: Res
    shape: object | None = None  # the gang shape its jobs share (``kept.line_shape``)
    at: int = 0
    failed: bool = False

    def live(self) -> bool:
        return not self.failed and self.at < len(self.jobs)


Heads = list[tuple[Order, int, _Cursor]]  # per queue: each line's next job, least first


def usable(session: KaiSession) -> bool:
    book, lines = session.book, session.kept.lines
    if session.config.explain or session.pipelined or session.kept.releasing:
        return False
    parents = {book.queues[session.kept.jobs[line[0][1]].queue].parent for line in lines.values()}
    return len(parents) <= 1


def allocate(session: KaiSession) -> None:
    failed = _still_failing(session)
    if failed and all(placement.covered(failed, line_shape(name)) for name in session.kept.lines):
        # every waiting job shares a line whose shape found no room: each try would fail and change nothing
        session.kept.failed = (session.snapshot.nodes, session.snapshot.free(), failed)
        return
    queues, shared = _heads(session)
    live = len(session.kept.lines) - _fail_covered(shared, failed)
    keys = {q: _key(session, queues, q) for q in queues}
    while queues and live:
        queue = min(queues, key=keys.__getitem__)  # ties to the queue listed first
        heads = queues[queue]
        cursor = heads[0][2]
        if cursor.failed:
            _pass_failed(session, queues, queue, keys)
        else:
            heappop(heads)
            job = session.kept.jobs[cursor.jobs[cursor.at][1]]
            cursor.at += 1
            _push(heads, cursor)
            if not heads:
                del queues[queue]
            known = len(failed)
            live += _try(session, job, cursor, failed, queues) - 1  # this line was live; what is now
            if len(failed) > known:  # a shape found no room: so will every line whose shape it covers
                live -= _fail_covered(shared, dict(islice(failed.items(), known, None)))
        # a turn moves only its own queue: its next job, and its allocation after a placement
        if queue in queues:
            keys[queue] = _key(session, queues, queue)
    session.kept.failed = (session.snapshot.nodes, session.snapshot.free(), failed)


def _key(session: KaiSession, queues: dict[str, Heads], queue: str) -> OrderKey:
    """The comparator's key of ``queue`` for its next job."""
    return session.book.order_key(queue, queues[queue][0][2].request)


def _still_failing(session: KaiSession) -> placement.Failed:
    """The gang shapes that found no room in earlier allocates, while they still cannot: on the same nodes,
    with no node's free room grown since the last allocate ended (nothing finished, was evicted or was
    added). Room only shrank since each of those tries failed, so each would fail again (the rule
    ``placement.place`` applies within one allocate); an arrival-only cycle tries only new shapes."""
    kept = session.kept.failed
    if kept is None:
        return {}
    nodes, free, failed = kept
    if nodes is not session.snapshot.nodes or not bool(np.all(session.snapshot.free() <= free)):
        return {}
    return failed


def _pass_failed(
    session: KaiSession, queues: dict[str, Heads], queue: str, keys: dict[str, OrderKey]
) -> None:
    """``queue`` won with a job of a failed line: it keeps winning, and failing, for each next job of a
    failed line whose request still wins the comparison against the other queues (which do not change
    meanwhile), so those jobs go at once, up to the first job of a line that may fit or of a failed line
    whose request loses. A queue with no line left that may fit only ever fails: it goes whole, as its
    turns change nothing the other queues see."""
    heads = queues[queue]
    if not any(c.live() for _, _, c in heads):
        del queues[queue]
        return
    head = heads[0][2]
    head.at += 1  # its turn: that job fails
    book = session.book
    listed = list(queues)  # the others' keys, split at this queue: ties go to the queue listed first
    mine = listed.index(queue)
    before = min((keys[q] for q in listed[:mine]), default=None)
    after = min((keys[q] for q in listed[mine + 1 :]), default=None)

    def wins(cursor: _Cursor) -> bool:
        key = book.order_key(queue, cursor.request)
        return (before is None or key < before) and (after is None or key <= after)

    cursors = [c for _, _, c in heads]
    stop = min((c.jobs[c.at][0] for c in cursors if not c.failed or not wins(c)), default=None)
    for c in cursors:
        if c.failed and wins(c):
            c.at = len(c.jobs) if stop is None else bisect_left(c.jobs, (stop,), c.at)
    heads.clear()
    for c in cursors:
        _push(heads, c)
    if not heads:
        del queues[queue]


def _try(
    session: KaiSession, job: KaiJob, cursor: _Cursor, failed: placement.Failed, queues: dict[str, Heads]
) -> int:
    """Try ``job``; how many live lines this adds back (its own line, or the job's new line after a
    placement that leaves it pods to grow by)."""
    if cursor.shape is not None and placement.covered(failed, cursor.shape):  # fails as ``place`` would
        cursor.failed = True
        return 0
    attempt = placement.place(session, job, failed=failed)
    if not attempt.ok:
        cursor.failed = True  # every later job of the line would fail as well
        return 0
    placement.commit(session, job, attempt)
    added = int(cursor.live())
    if job.pending():  # an elastic job goes back in line with its next pod, on a line of its own
        own = _Cursor([(job_order(job), job.key)], session.request(job.pending()))
        _push(queues.setdefault(job.queue, []), own)
        added += 1
    return added


def _fail_covered(cursors: list[_Cursor], failed: placement.Failed) -> int:
    """Mark failed, before their turn, the live lines whose shape ``failed`` covers (their turns then go
    as a failed line's do, ``_pass_failed``); how many there were. A pass ends once no live line is left,
    so lines that cannot fit are never visited one by one."""
    if not failed:
        return 0
    newly = [c for c in cursors if c.live() and placement.covered(failed, c.shape)]
    for c in newly:
        c.failed = True
    return len(newly)


def _push(heads: Heads, cursor: _Cursor) -> None:
    if cursor.at < len(cursor.jobs):
        heappush(heads, (cursor.jobs[cursor.at][0], id(cursor), cursor))


def _heads(session: KaiSession) -> tuple[dict[str, Heads], list[_Cursor]]:
    """Per queue its lines' heads, the queues in the order of their first job (as allocate's walk lists
    them), and the cursors of the shared lines (those with a gang shape)."""
    per_queue: dict[str, Heads] = {}
    shared = []
    kept = session.kept
    lines: list[tuple[Hashable, Line]] = sorted(kept.lines.items(), key=lambda item: item[1][0])
    for name, jobs in lines:
        queue = kept.jobs[jobs[0][1]].queue
        cursor = _Cursor(jobs, kept.line_units[name], line_shape(name))
        _push(per_queue.setdefault(queue, []), cursor)
        if cursor.shape is not None:
            shared.append(cursor)
    return per_queue, shared


__all__ = ["allocate", "usable"]
