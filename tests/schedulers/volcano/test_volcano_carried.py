"""Answers carried across a kept session's passes (``carried.Carried``, ``filling.LastFilling``): each queue's
order key and Overused answer, enqueue's Inqueue sum, overcommit room and shape rows, and whether the last
filling stands for a one-dimension request (``proportion.rounds_span``).

Each is the answer computed afresh, to the bit, whatever moved; each is computed again only when what it
reads moved (these fail on the code before the carry, which computed every one every pass).
``test_volcano_action_shortcuts.py`` switches them all off in its reference run, and ``test_volcano_kept.py``
compares the kept scheduler (answers carried) with plain sessions (a fresh book each pass).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane.schedulers.core.resources import ResourceIndex
from gangplane.schedulers.volcano import proportion as prop
from gangplane.schedulers.volcano import vec
from gangplane.schedulers.volcano.actions import enqueue
from gangplane.schedulers.volcano.book import QueueBook, QueueDemand, SharePolicy
from gangplane.schedulers.volcano.carried import Carried
from gangplane.schedulers.volcano.filling import LastFilling
from gangplane.schedulers.volcano.proportion import QueuePolicy
from gangplane.schedulers.volcano.vec import Vec

values = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, 2.0, 4.0, 8.0, float("inf"), float("nan")]),
    st.floats(-10.0, 100.0),
)


@settings(max_examples=500, deadline=None)
@given(
    rounds=st.lists(st.tuples(values, values), max_size=6),
    old=values,
    news=st.lists(values, min_size=1, max_size=6),
)
def test_the_span_of_a_queues_rounds_answers_as_the_walk_of_them(
    rounds: list[tuple[float, float]], old: float, news: list[float]
) -> None:
    """``rounds_span``/``in_span`` answer ``_same_rounds_one`` for every request, NaN, ±0.0 and ∞ included
    (``None``: the walk answers); a request inside the span leaves the span as it is."""
    kept: prop.Rounds = [([reach], [got]) for reach, got in rounds]
    span = prop.rounds_span(kept, old)
    for new in news:
        want = prop._same_rounds_one(kept, old, new)
        got = None if span is None else prop.in_span(span, new)
        assert got is None or got == want
        assert got is not None or span is None or math.isnan(new)
        if want and span is not None and not math.isnan(new):  # the request moved inside the span
            assert all(prop.in_span(span, x) == prop._same_rounds_one(kept, new, x) for x in news if x == x)


def _policies(names: list[str], dims: int) -> list[QueuePolicy]:
    return [
        QueuePolicy(name, vec.unbounded(dims), vec.zeros(dims), weight=1 + i) for i, name in enumerate(names)
    ]


@settings(max_examples=150, deadline=None)
@given(
    share=st.sampled_from(list(SharePolicy)),
    moves=st.lists(
        st.tuples(
            st.integers(0, 2), st.sampled_from(["demand", "allocate", "release", "none"]), st.integers(0, 8)
        ),
        min_size=1,
        max_size=25,
    ),
)
def test_a_kept_book_answers_as_a_rebuilt_one(share: SharePolicy, moves: list[tuple[int, str, int]]) -> None:
    """Pass after pass (a queue's demand replaced, tasks placed or evicted within the pass, or nothing), the
    book kept across passes gives every queue the order key and Overused answer a book built afresh gives,
    to the bit."""
    names, dims = ["a", "b", "c"], 2
    policies = _policies(names, dims)
    total = np.array([16.0, 0.0])
    demands = {name: QueueDemand(vec.zeros(dims), np.array([4.0, 0.0]), vec.zeros(dims), vec.zeros(dims))
               for name in names}  # fmt: skip
    kept = LastFilling()
    for at, move, amount in moves:
        name = names[at]
        if move == "demand":
            held = np.array([float(amount), 0.0])
            demands[name] = QueueDemand(
                held, held + np.array([float(amount % 3), 0.0]), held, vec.zeros(dims)
            )
        books = [QueueBook(["gpu", "x"], total, policies, demands, share, kept=k) for k in (kept, None)]
        for book in books:
            if move in ("allocate", "release"):
                getattr(book, move)(name, np.array([float(amount), 0.0]))
        carried, fresh = books
        for queue in names:
            assert carried.order_key(queue) == fresh.order_key(queue)
            assert carried.overused(queue) == fresh.overused(queue)
            assert carried.attr(queue).deserved.tobytes() == fresh.attr(queue).deserved.tobytes()


def test_a_queues_order_and_overused_are_answered_again_only_when_its_vectors_move(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """allocate asks every queue with turns for its order key and Overused answer each pass: a kept book
    answers them from the last pass while the queue's allocation and share are the same vectors."""
    shares: list[int] = []
    compared: list[int] = []
    real_share, real_le = vec.share, vec.le
    monkeypatch.setattr(vec, "share", lambda a, d: shares.append(1) or real_share(a, d))
    monkeypatch.setattr(vec, "le", lambda a, b: compared.append(1) or real_le(a, b))
    policies = _policies(["a", "b"], 2)
    held = np.array([3.0, 0.0])
    demands = {name: QueueDemand(held, held, vec.zeros(2), vec.zeros(2)) for name in ("a", "b")}
    kept, total = LastFilling(), np.array([8.0, 0.0])
    first = QueueBook(["gpu", "x"], total, policies, demands, kept=kept)
    keys = [first.order_key(q) for q in ("a", "b")], [first.overused(q) for q in ("a", "b")]
    assert (len(shares), len(compared)) == (2, 2)
    second = QueueBook(["gpu", "x"], total, policies, demands, kept=kept)  # the next pass: nothing moved
    assert ([second.order_key(q) for q in ("a", "b")], [second.overused(q) for q in ("a", "b")]) == keys
    assert (len(shares), len(compared)) == (2, 2)
    second.allocate("a", np.array([1.0, 0.0]))  # a placement: a's allocation moved, b's did not
    second.order_key("a"), second.order_key("b"), second.overused("a"), second.overused("b")
    assert (len(shares), len(compared)) == (3, 3)


def test_the_inqueue_sum_and_the_room_are_taken_again_only_when_their_inputs_move() -> None:
    """The Inqueue sum is the same additions in the same order, kept while the parts hold the same bytes;
    the overcommit room is kept while the nodes' requested matrix holds the same bytes. Both read-only."""
    carried, dims = Carried(), 2
    parts = [np.array([1.0, 0.0]), np.array([0.5, 2.0])]
    first = carried.inqueue_sum(list(parts), dims)
    assert first.tolist() == [1.5, 2.0] and not first.flags.writeable
    assert carried.inqueue_sum(list(parts), dims) is first
    assert carried.inqueue_sum([parts[0], np.array([0.5, 2.0])], dims) is first  # the same bytes, new vector
    moved = carried.inqueue_sum([parts[0], np.array([-0.0, 2.0])], dims)  # one sign moved: summed again
    assert moved is not first and moved.tolist() == [1.0, 2.0]
    assert carried.inqueue_sum([parts[0], np.array([-0.0, 2.0])], 3 - 1) is moved
    assert carried.inqueue_sum([], 3).tolist() == [0.0, 0.0, 0.0]
    asked: list[int] = []

    def qvec(row: Any) -> Vec:
        asked.append(1)
        out: Vec = row.astype(np.float64)
        return out

    requested, total, factor = np.array([[1, 2], [3, 4]], dtype=np.int64), np.array([8.0, 8.0]), 1.5
    used, idle = carried.room(requested, total, factor, qvec)
    assert used.tolist() == [4.0, 6.0] and idle is not None and idle.tolist() == [8.0, 6.0]
    assert carried.room(requested, total, factor, qvec) == (used, idle) and asked == [1]
    requested[0, 0] += 1  # a pod bound: the matrix changed in place
    assert carried.room(requested, total, factor, qvec)[0].tolist() == [5.0, 6.0] and asked == [1, 1]


def test_enqueue_takes_the_shape_rows_once_while_the_lined_shapes_recur(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The lined ``minResources`` shapes as rows are built again only when the set of shapes changed."""
    made: list[int] = []
    real = enqueue._shape_rows
    monkeypatch.setattr(
        enqueue, "_shape_rows", lambda keys, index: made.append(len(keys)) or real(keys, index)
    )
    index = ResourceIndex.covering()
    shapes = {index.pod_vector({"nvidia.com/gpu": str(n)}).tobytes() for n in (1, 2)}
    carried = Carried()
    keys, rows, unasked = carried.shape_rows(shapes, index, enqueue._shape_rows)
    assert carried.shape_rows(set(shapes), index, enqueue._shape_rows)[1] is rows and made == [2]
    want, want_unasked = real(keys, index)
    assert rows.tobytes() == want.tobytes() and unasked.tolist() == want_unasked.tolist()
    shapes.add(index.pod_vector({"nvidia.com/gpu": "4"}).tobytes())
    assert len(carried.shape_rows(shapes, index, enqueue._shape_rows)[0]) == 3 and made == [2, 3]


def test_a_kept_filling_walks_a_queues_rounds_once_while_its_request_moves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A busy queue's request moves nearly every pass while the filling stands (it is still short of it):
    the span its rounds leave alone is taken once per filling, and no round is walked per pass."""
    walked: list[int] = []
    real = prop._same_rounds_one
    monkeypatch.setattr(prop, "_same_rounds_one", lambda r, o, n: walked.append(1) or real(r, o, n))
    total = np.array([8.0, 0.0])
    policies = _policies(["a", "b"], 2)
    kept, requests = LastFilling(), {"a": np.array([100.0, 0.0]), "b": np.array([100.0, 0.0])}
    first = kept.deserved(total, policies, requests)
    for step in range(1, 6):  # a stays far beyond its share
        requests["a"] = np.array([100.0 + step, 0.0])
        got = kept.deserved(total, policies, requests)
        assert got is first
        assert {n: v.tobytes() for n, v in got.items()} == {
            n: v.tobytes() for n, v in prop.proportion_deserved(total, policies, requests).items()
        }
    assert walked == []
