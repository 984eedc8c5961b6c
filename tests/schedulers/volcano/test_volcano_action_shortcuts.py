"""The actions' shortcuts decide exactly as the full walks they replace (docs/volcano.md, "What an action
costs").

Each shortcut is switched off in a reference run — allocate sorts every candidate up front, preempt and
reclaim walk every starving candidate whatever the per-queue aggregates say, a job recounts its tasks on every
question, enqueue tests every live shape at its turn (no overcommit verdicts), the quota test stacks and sorts
the requests and builds its refusal's text, the vector comparisons run on numpy, and no answer is carried
from an earlier question or pass (queue order keys, Overused, enqueue's Inqueue sum, room and shape rows,
the span of a queue's filling rounds, a job's ``candidates`` answer) — and random worlds
(queues, priorities, gangs arriving, finishing, evicted and coming back) must get the same bindings, evictions
and status writes, cycle after cycle, from both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from heapq import heapify, heappop, heappush
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st
from test_volcano_memo import _finish
from test_volcano_properties import jobs_strategy
from vcworld import World, node

from gangplane.schedulers.base import CycleResult
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.resources import ResourceIndex
from gangplane.schedulers.volcano import VolcanoConfig, jobs, placement, vec
from gangplane.schedulers.volcano import proportion as prop
from gangplane.schedulers.volcano.actions import allocate, enqueue, preempt, reclaim
from gangplane.schedulers.volcano.book import QueueBook, SharePolicy
from gangplane.schedulers.volcano.carried import Carried, Room, ShapeRows
from gangplane.schedulers.volcano.filling import LastFilling
from gangplane.schedulers.volcano.jobs import Job, Task
from gangplane.schedulers.volcano.kept import Indexes, LeastMinimum
from gangplane.schedulers.volcano.session import Session
from gangplane.schedulers.volcano.vec import Vec


def _all_turns(session: Session) -> dict[str, allocate._Turns]:
    """allocate's turns as built before the kept lines: every candidate, sorted at the start, per queue."""
    per_queue: dict[str, list[Job]] = {}
    for job in sorted(allocate.candidates(session), key=session.job_order):
        per_queue.setdefault(job.queue, []).append(job)
    return {queue: allocate._Turns(session, jobs) for queue, jobs in per_queue.items()}


class _StackedLeast:
    """The least ``minResources`` as enqueue found it before ``LeastMinimum``: every line's shape stacked."""

    def __init__(self, index: Indexes) -> None:
        self.index = index

    def get(self) -> object:
        shapes = {shape for lines in self.index.lines.values() for shape in lines if shape is not None}
        if not shapes:
            return None
        return np.min(np.stack([np.frombuffer(s, dtype=np.int64) for s in shapes]), axis=0).astype(np.float64)


def _stacked_enqueue(real: Callable[[Session, Indexes], None]) -> Callable[[Session, Indexes], None]:
    def by_shape(session: Session, index: Indexes) -> None:
        least, index.least = index.least, _StackedLeast(index)  # type: ignore[assignment]
        try:
            real(session, index)
        finally:
            index.least = least

    return by_shape


def _every_shape_enqueue(session: Session, index: Indexes) -> None:
    """enqueue's round robin as it was before ``_Verdicts``: every live shape takes its turn and is tested
    there, the book first, then the overcommit factor, one minimum at a time."""
    overcommit = enqueue._Overcommit(session)
    lines = {q: per_shape for q, per_shape in index.lines.items() if per_shape}
    least = index.least.get()
    if least is not None and not overcommit.fits(least):
        for per_shape in lines.values():
            for _, key in per_shape.get(None, ()):
                enqueue._admit(session, session.jobs[key], overcommit, None)
        return
    first = {q: min(line[0] for line in per_shape.values()) for q, per_shape in lines.items()}
    ranked = sorted(lines, key=lambda q: (session.book.order_key(q), first[q]))
    cursors = {q: {shape: 0 for shape in lines[q]} for q in ranked}
    turns = [t for at, q in enumerate(ranked) if (t := enqueue._next_turn(lines[q], cursors[q], at, q))]
    heapify(turns)
    while turns:
        _, at, queue, shape = heappop(turns)
        line, cursor = lines[queue][shape], cursors[queue]
        job = session.jobs[line[cursor[shape]][1]]
        minimum = None if shape is None else session.qvec(job.min_resources)  # type: ignore[arg-type]
        if minimum is None or (session.book.enqueueable(queue, minimum) and overcommit.fits(minimum)):
            enqueue._admit(session, job, overcommit, minimum)
            cursor[shape] += 1
        else:
            del cursor[shape]
        if t := enqueue._next_turn(lines[queue], cursor, at, queue):
            heappush(turns, t)


def _least_requests_stacked(session: Session, candidates: list[Task], count: int) -> object:
    """The quota test's least requests as computed before they were kept by their bytes."""
    return np.sort(np.array([session.qvec(t.pod.requests) for t in candidates]), axis=0)[:count].sum(axis=0)


def _numpy_le_on(a: Vec, b: Vec, dims: Vec | None = None) -> bool:
    """``vec.le``/``vec.le_on`` in the numpy form they had before the Python loops."""
    keep = np.ones(len(a), dtype=bool) if dims is None else dims > 0
    return bool(np.all(a[keep] <= b[keep] + vec.EPS * np.maximum(1.0, np.abs(b[keep]))))


def _asked_overused(book: QueueBook, name: str) -> bool:
    attr = book.attrs[name]
    return vec.le(
        attr.deserved if book.policy == SharePolicy.PROPORTION else attr.real_capability, attr.allocated
    )


def _taken_room(carried: Carried, requested: Any, total: Vec, factor: float | None, qvec: Any) -> Room:
    used = qvec(requested.sum(axis=0))
    return used, None if factor is None else total * factor - used


def _built_rows(carried: Carried, shapes: set[bytes], index: ResourceIndex, make: Any) -> Any:
    keys = list(shapes)
    rows: ShapeRows = make(keys, index)
    return (keys, *rows)


def _no_carried_answers(patch: pytest.MonkeyPatch) -> None:
    """Every answer ``Carried`` and the filling's spans keep, asked afresh each time."""
    patch.setattr(QueueBook, "order_key", lambda book, name: book._order_key(name, book.attrs[name]))
    patch.setattr(QueueBook, "overused", _asked_overused)
    patch.setattr(Carried, "inqueue_sum", lambda carried, parts, dims: sum(parts, start=vec.zeros(dims)))
    patch.setattr(Carried, "room", _taken_room)
    patch.setattr(Carried, "shape_rows", _built_rows)
    patch.setattr(
        LastFilling,
        "_same_rounds",
        lambda kept, name, old, new: prop.same_rounds(kept._rounds.get(name, []), old, new),
    )


def _asked_chosen(session: Session, pool: Any, admit_all: bool) -> list[Job]:
    """``candidates``' pool with every job asked (``_eligible``) each time, no answer kept."""
    return [job for job in pool if allocate._eligible(session, job, admit_all)]


@contextmanager
def full_walks() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(allocate, "_turns", _all_turns)
        patch.setattr(enqueue, "_enqueue_by_shape", _stacked_enqueue(_every_shape_enqueue))
        patch.setattr(placement, "least_requests", _least_requests_stacked)
        patch.setattr(
            placement, "quota_refuses", lambda s, j, c, n: placement.quota_rules_out(s, j, c, n) is not None
        )
        patch.setattr(vec, "le", _numpy_le_on)
        patch.setattr(vec, "le_on", _numpy_le_on)
        for module in (preempt, reclaim):
            patch.setattr(module, "quiet_candidates", lambda session: False)
        patch.setattr(preempt, "_may_find_victims", lambda session, candidates: True)
        patch.setattr(reclaim, "_reaches", lambda session, candidates: True)
        patch.setattr(Job, "tally", lambda job: jobs._count(job.tasks))
        patch.setattr(allocate, "_chosen", _asked_chosen)
        _no_carried_answers(patch)
        yield


def _world(config: VolcanoConfig, n_nodes: int, share: SharePolicy) -> World:
    w = World(nodes=[node(f"n{i}", gpu=4) for i in range(n_nodes)], config=config)
    w.add_queue("a")
    w.add_queue(
        "b", weight=2, **({"deserved": {"nvidia.com/gpu": "4"}} if share == SharePolicy.CAPACITY else {})
    )
    w.add_queue("c")
    return w


def _decisions(result: CycleResult) -> tuple[object, ...]:
    return (result.bindings, result.evictions, result.status_writes)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_nodes=st.integers(1, 3),
    jobs_=jobs_strategy,
    arrivals=st.lists(st.integers(0, 8), min_size=8, max_size=8),
    share=st.sampled_from(list(SharePolicy)),
    explain=st.booleans(),
    one_queue=st.booleans(),
    overcommit=st.sampled_from([None, 1.0, 1.5]),
)
def test_the_shortcuts_decide_as_the_full_walks(
    n_nodes: int,
    jobs_: list[tuple[int, int, str, int, bool, bool]],
    arrivals: list[int],
    share: SharePolicy,
    explain: bool,
    one_queue: bool,
    overcommit: float | None,
) -> None:
    """Kept lines (allocate, enqueue's least ``minResources``) and the aggregates' shortcuts against the full
    walks, with and without the overcommit factor (which reads the least ``minResources``)."""
    config = VolcanoConfig(explain=explain, share_policy=share, overcommit_factor=overcommit)
    fast, full = _world(config, n_nodes, share), _world(config, n_nodes, share)
    ages: tuple[dict[str, int], dict[str, int]] = ({}, {})
    evicted = 0
    for at in range(3 * len(jobs_) + 6):
        for i, (size, gpu, queue, prio, _topology, minres) in enumerate(jobs_):
            if arrivals[i] == at:
                for w in (fast, full):
                    w.add_job(f"j{i}", size, gpu, queue="a" if one_queue else queue, priority=prio,
                              min_resources=minres)  # fmt: skip
        got = fast.cycle()
        with full_walks():
            want = full.cycle()
        assert _decisions(got) == _decisions(want)
        evicted += len(got.evictions)
        for w, age in zip((fast, full), ages, strict=True):
            w.resubmit_evicted()
            _finish(w, age, 3)
    target(float(evicted))  # steer towards worlds where preempt and reclaim evict


def _counting(monkeypatch: pytest.MonkeyPatch, module: object) -> list[int]:
    calls: list[int] = []
    real: Callable[[Session], list[Job]] = allocate.candidates

    def counted(session: Session) -> list[Job]:
        calls.append(1)
        return real(session)

    monkeypatch.setattr(module, "candidates", counted)
    return calls


def test_one_queue_one_priority_preempt_and_reclaim_walk_no_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """With one queue and one priority no running job is anybody's victim: preempt (no lower priority) and
    reclaim (no other queue) see that from the queues, without listing the waiting gangs."""
    config = VolcanoConfig(explain=False, overcommit_factor=None)
    w = World(nodes=[node("n0", gpu=4)], config=config)
    w.add_job("running", 4, gpu=1)
    w.cycle()
    for i in range(20):
        w.add_job(f"waiting{i}", 2, gpu=1)
    preempting, reclaiming = _counting(monkeypatch, preempt), _counting(monkeypatch, reclaim)
    for _ in range(3):
        assert not w.cycle().evictions
    assert (preempting, reclaiming) == ([], [])
    assert w.bound("running") and not w.bound("waiting0")


def test_reclaim_asks_a_waiting_shape_once_not_each_gang(monkeypatch: pytest.MonkeyPatch) -> None:
    """A queue entitled to half the cluster, twenty gangs of one shape waiting in it, another queue holding
    everything: reclaim asks the shape's first gang and takes the line whole, without listing or asking
    every candidate (the waiting line costs nothing until a search runs)."""
    config = VolcanoConfig(explain=False, overcommit_factor=None)
    w = World(nodes=[node(f"n{i}", gpu=4) for i in range(4)], config=config)
    w.add_queue("a")
    w.add_queue("b")
    for i in range(4):
        w.add_job(f"b{i}", 1, gpu=4, queue="b")
    w.cycle()
    for i in range(20):
        w.add_job(f"a{i}", 2, gpu=4, queue="a", min_resources=False)
    listed, asked = _counting(monkeypatch, reclaim), []
    real = reclaim._may_reclaim
    monkeypatch.setattr(reclaim, "_may_reclaim", lambda s, job: asked.append(job.key) or real(s, job))
    result = w.cycle()
    assert sorted(e.pod_key for e in result.evictions) == ["ns/b0-0", "ns/b1-0"]
    assert listed == [] and asked == ["ns/a0"]


def test_a_pass_tries_the_head_of_a_waiting_shape_not_every_gang(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gangs of one shape waiting behind a full cluster: once admitted and kept, a pass neither asks each
    whether it may be placed nor tries more than the first (the rest of its shape line fail alike)."""
    config = VolcanoConfig(explain=False, overcommit_factor=None)
    w = World(nodes=[node("n0", gpu=4), node("n1", gpu=4)], config=config)
    w.add_job("running", 2, gpu=3)  # one GPU free per node: the queue is not Overused, nothing fits
    w.cycle()
    for i in range(20):
        w.add_job(f"waiting{i}", 2, gpu=2, min_resources=False)
    w.cycle()  # admits them (Inqueue)
    asked: list[str] = []
    tried: list[str] = []
    real_eligible, real_place = allocate._eligible, allocate.placement.place
    monkeypatch.setattr(
        allocate, "_eligible", lambda s, job, a: asked.append(job.key) or real_eligible(s, job, a)
    )
    monkeypatch.setattr(
        allocate.placement, "place", lambda s, job, **kw: tried.append(job.key) or real_place(s, job, **kw)
    )
    for _ in range(2):
        assert not w.cycle().bindings
    assert asked == [] and tried == ["ns/waiting0"] * 2


@given(
    moves=st.lists(st.tuples(st.lists(st.integers(0, 3), min_size=3, max_size=3), st.booleans()), max_size=30)
)
def test_the_least_minimum_follows_lines_coming_and_going(moves: list[tuple[list[int], bool]]) -> None:
    """``LeastMinimum`` equals the least of the shapes whose lines stand, as they come and go."""
    least, standing = LeastMinimum(), []
    for values, add in moves:
        shape = np.array(values, dtype=np.int64).tobytes()
        if add or shape not in standing:
            standing.append(shape)
            least.move(shape, True)
        else:
            standing.remove(shape)
            least.move(shape, False)
        want = np.min([np.frombuffer(s, dtype=np.int64) for s in standing], axis=0) if standing else None
        got = least.get()
        assert (got is None) if want is None else (got is not None and got.tolist() == want.tolist())


def _recount(job: Job) -> tuple[int, int, bool]:
    ready = sum(1 for t in job.tasks if t.status in jobs.READY or (t.status == "Pending" and t.best_effort))
    valid = sum(1 for t in job.tasks if t.status in jobs.READY or t.status == "Pending")
    work = any(t.status == "Pending" and not t.best_effort and not t.pod.gated for t in job.tasks)
    return ready, valid, work


@given(
    tasks=st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=6),  # best effort, gated
    moves=st.lists(st.tuples(st.integers(0, 5), st.sampled_from(list(jobs.TaskStatus))), max_size=8),
)
def test_a_job_counts_its_tasks_again_after_each_status_change(
    tasks: list[tuple[bool, bool]], moves: list[tuple[int, jobs.TaskStatus]]
) -> None:
    """The kept tally follows every change made the one way statuses change (``set_status``)."""
    requests = ResourceIndex.covering().pod_vector({})
    job = Job("ns/j", "ns", "j", "default", 0, 2, {}, None, None, "Inqueue", ("", ""), {})
    job.tasks = [
        jobs.Task(PodInfo(f"ns/p{i}", "ns", f"p{i}", f"u{i}", requests, gated=gated), jobs.TaskStatus.PENDING,
                  best_effort=best_effort)
        for i, (best_effort, gated) in enumerate(tasks)
    ]  # fmt: skip
    for at, status in moves:
        assert (job.ready_count(), job.tally().valid, job.has_work()) == _recount(job)
        job.set_status(job.tasks[at % len(job.tasks)], status)
    assert (job.ready_count(), job.tally().valid, job.has_work()) == _recount(job)
