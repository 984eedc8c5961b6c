"""Worked numbers for KAI's fair-share division (kai.md §7)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane.schedulers.kai.book import KaiBook
from gangplane.schedulers.kai.fairshare import ShareInput, TreeQueue, divide, divide_tree
from gangplane.schedulers.kai.model import KaiQueue


def q(name: str, *, quota: float = 0, limit: float = -1, weight: float = 1, prio: int = 100, req: float = 0):
    return ShareInput(name, quota, limit, weight, prio, req)


def test_quota_first_then_surplus_by_weight_in_whole_units() -> None:
    # 10 GPUs; quotas 2+2, surplus 6 split 1:3 -> 1.5 / 4.5 floored to 1 / 4, the last unit to 'a' (tie, name).
    got = divide(10, [q("a", quota=2, weight=1, req=8), q("b", quota=2, weight=3, req=8)])
    assert got == {"a": 4, "b": 6}


def test_a_queue_that_needs_less_returns_its_surplus_to_the_others() -> None:
    got = divide(12, [q("a", req=2), q("b", req=20), q("c", req=20)])
    assert got == {"a": 2, "b": 5, "c": 5}


def test_priority_dominates_weight() -> None:
    got = divide(8, [q("hi", prio=200, weight=1, req=10), q("lo", prio=100, weight=10, req=10)])
    assert got == {"hi": 8, "lo": 0}


def test_limit_caps_and_zero_weight_gets_no_surplus() -> None:
    got = divide(10, [q("capped", limit=3, req=10), q("noweight", weight=0, quota=1, req=10), q("c", req=10)])
    assert got == {"capped": 3, "noweight": 1, "c": 6}


def test_unlimited_quota_takes_the_whole_amount_it_requests() -> None:
    assert divide(10, [q("a", quota=-1, req=7), q("b", req=10)]) == {"a": 7, "b": 3}


def test_limit_zero_means_nothing() -> None:
    assert divide(10, [q("a", limit=0, quota=5, req=5)]) == {"a": 0}


def test_tree_divides_each_parents_share_among_its_children() -> None:
    tree = [
        TreeQueue(q("org-a", quota=6, req=12), None),
        TreeQueue(q("org-b", quota=4, req=4), None),
        TreeQueue(q("a1", quota=2, req=10), "org-a"),
        TreeQueue(q("a2", quota=2, req=2), "org-a"),
    ]
    got = divide_tree(10, tree)
    assert got["org-a"] == 6 and got["org-b"] == 4
    assert got["a1"] == 4 and got["a2"] == 2


@settings(max_examples=200, deadline=None)
@given(
    total=st.integers(0, 40),
    queues=st.lists(
        st.tuples(
            st.integers(-1, 10),
            st.integers(-1, 20),
            st.integers(0, 3),
            st.sampled_from([50, 100]),
            st.integers(0, 30),
        ),
        min_size=1,
        max_size=5,
    ),
)
def test_division_respects_requests_limits_and_the_total(
    total: int, queues: list[tuple[int, int, int, int, int]]
) -> None:
    inputs = [ShareInput(f"q{i}", d, lim, w, p, r) for i, (d, lim, w, p, r) in enumerate(queues)]
    got = divide(total, inputs)
    for s in inputs:
        assert got[s.name] <= s.request + 1e-9
        assert s.limit == -1 or got[s.name] <= s.limit + 1e-9
    in_quota = sum(
        min(total if s.deserved == -1 else s.deserved, s.request, s.limit if s.limit != -1 else 1e9)
        for s in inputs
    )
    assert sum(got.values()) <= max(total, in_quota) + 1e-9
    if sum(got.values()) < total - 1e-9:
        # nothing handed out is left on the table while a weighted queue still wants more
        for s in inputs:
            if s.weight > 0:
                want = min(s.request, 1e9 if s.limit == -1 else s.limit)
                assert got[s.name] == pytest.approx(want)


@settings(max_examples=60, deadline=None)
@given(
    total=st.integers(0, 64),
    kids=st.lists(
        st.tuples(st.integers(0, 2), st.sampled_from((-1, 0, 3, 20)), st.integers(0, 40), st.integers(0, 3)),
        min_size=1,
        max_size=7,
    ),
)
def test_a_book_without_quotas_divides_as_the_tree_division(
    total: int, kids: list[tuple[int, int, int, int]]
) -> None:
    """Where no queue sets a quota the book takes each queue's requestable amount capped by its level's
    amount instead of running ``divide_tree``: the same shares, for flat queues and departments."""

    def vec(x: float) -> np.ndarray:
        return np.array([x, -1.0, -1.0])

    parents = [KaiQueue(f"d{i}", None, 100, vec(-1), vec(-1), vec(1), ("", f"d{i}")) for i in range(3)]
    leaves = [
        KaiQueue(f"q{i}", f"d{p}" if p else None, 100 + prio, vec(-1), vec(limit), vec(1), ("", f"q{i}"))
        for i, (p, limit, _, prio) in enumerate(kids)
    ]
    usage = {
        f"q{i}": (np.zeros(3), np.zeros(3), np.array([float(req), 0, 0]))
        for i, (_, _, req, _) in enumerate(kids)
    }
    book = KaiBook(np.array([float(total), 1e6, 1e6]), parents + leaves, usage)
    requested = {name: float(state.requested[0]) for name, state in book.states.items()}
    tree = [
        TreeQueue(
            ShareInput(k.name, -1.0, float(k.limit[0]), 1.0, k.priority, requested[k.name], k.order), k.parent
        )
        for k in parents + leaves
    ]
    expected = divide_tree(float(total), tree)
    assert {name: float(state.fair[0]) for name, state in book.states.items()} == expected
