"""The queue book kept across cycles (``session.kept_book``, ``KaiBook.refresh``) holds, bit for bit, what a
book built again from the same usage holds — whatever changed in between: some queues' usage (a new tuple,
as ``KeptJobs`` hands over), placements and evictions the last cycle moved on the book itself, both."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane.schedulers.kai.book import KaiBook
from gangplane.schedulers.kai.memo import KaiMemo
from gangplane.schedulers.kai.model import KaiQueue, Res, queue_of
from gangplane.schedulers.kai.session import kept_book

TOTAL = np.array([64.0, 64.0, 64.0])  # small: queues compete, so fair shares move with demand
TOTAL.flags.writeable = False
Usage = dict[str, tuple[Res, Res, Res]]


def _queue(name: str, parent: str | None, quota: float, weight: int) -> KaiQueue:
    gpu = {"quota": quota, "limit": -1, "overQuotaWeight": weight}
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec = {"resources": {"gpu": gpu, "cpu": unlimited, "memory": unlimited}, "parentQueue": parent}
    return queue_of({"metadata": {"name": name, "uid": name}, "spec": spec})


QUEUES = [
    _queue("dept-a", None, 32, 1),
    _queue("dept-b", None, -1, 2),
    _queue("a1", "dept-a", 8, 1),
    _queue("a2", "dept-a", -1, 3),
    _queue("b1", "dept-b", 0, 1),
]
NAMES = [q.name for q in QUEUES]

# amounts that are not whole numbers, so a sum taken in another order would differ in its last bits
amounts = st.integers(0, 300).map(lambda x: x / 7)
vectors = st.tuples(amounts, amounts, amounts).map(lambda v: np.array(v))


def _usage_of(raw: tuple[Any, Any, Any]) -> tuple[Res, Res, Res]:
    alloc, extra, preemptible = raw
    parts = (alloc, alloc * 0 if preemptible else alloc, alloc + extra)
    for part in parts:
        part.flags.writeable = False
    return parts


usages = st.tuples(vectors, vectors, st.booleans()).map(_usage_of)
moves = st.lists(st.tuples(st.sampled_from(NAMES), vectors, st.booleans(), st.booleans()), max_size=4)
cycles = st.lists(st.tuples(st.dictionaries(st.sampled_from(NAMES), usages), moves), min_size=1, max_size=6)


def _same(kept: KaiBook, fresh: KaiBook) -> None:
    for name in NAMES:
        a, b = kept.states[name], fresh.states[name]
        for field in ("fair", "deserved", "allocated", "allocated_non_preemptible", "requested"):
            assert getattr(a, field).tobytes() == getattr(b, field).tobytes(), (name, field)
        for request in (np.zeros(3), np.array([1.0, 10.0, 100.0]), np.array([9.0, 0.0, 0.0])):
            assert kept.order_key(name, request) == fresh.order_key(name, request), name


@settings(max_examples=150, deadline=None)
@given(first=st.fixed_dictionaries({n: usages for n in NAMES}), changes=cycles)
def test_the_kept_book_equals_a_book_built_again(first: Usage, changes: list[Any]) -> None:
    memo = KaiMemo()
    usage = dict(first)
    book = kept_book(memo, TOTAL, QUEUES, usage, 1.0)
    for changed, moved in changes:
        for name, request, preemptible, back in moved:  # the last cycle placed and evicted on the book
            book.order_key(name, request)  # a comparator key read before the move
            (book.release if back else book.allocate)(name, request, preemptible)
        usage = {**usage, **changed}
        book = kept_book(memo, TOTAL, QUEUES, usage, 1.0)
        assert book is memo.book
        _same(book, KaiBook(TOTAL, QUEUES, usage, 1.0))


def test_new_queues_or_a_new_total_build_a_new_book() -> None:
    memo = KaiMemo()
    usage = {n: _usage_of((np.ones(3), np.ones(3), True)) for n in NAMES}
    first = kept_book(memo, TOTAL, QUEUES, usage, 1.0)
    assert kept_book(memo, TOTAL, QUEUES, usage, 1.0) is first
    assert kept_book(memo, TOTAL.copy(), QUEUES, usage, 1.0) is not first
    second = memo.book
    assert (
        kept_book(memo, second.total, [*QUEUES[:-1], _queue("b1", "dept-b", 0, 1)], usage, 1.0) is not second
    )


def test_another_queues_demand_moves_a_queues_fair_share_and_its_comparator_key() -> None:
    flat = [_queue("q1", None, 0, 1), _queue("q2", None, 0, 1)]
    held = _usage_of((np.array([40.0, 1.0, 1.0]), np.zeros(3), True))
    memo = KaiMemo()
    usage = {"q1": held, "q2": _usage_of((np.zeros(3), np.zeros(3), True))}
    book = kept_book(memo, TOTAL, flat, usage, 1.0)
    request = np.array([1.0, 0.0, 0.0])
    before = book.order_key("q1", request)  # kept: q1's own usage does not change below
    usage = {**usage, "q2": _usage_of((np.zeros(3), np.array([60.0, 0.0, 0.0]), True))}
    book = kept_book(memo, TOTAL, flat, usage, 1.0)
    assert book.states["q1"].fair[0] < 40
    assert (
        book.order_key("q1", request) == KaiBook(TOTAL, flat, usage, 1.0).order_key("q1", request) != before
    )
