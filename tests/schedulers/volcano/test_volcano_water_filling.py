"""The proportion plugin's water-filling on Python floats (``proportion.proportion_deserved``) gives, to the
bit, what the vector form it replaced gives (kept here as the reference): the same IEEE operations in the
same order, so queue shares and every decision built on them are unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane.schedulers.volcano import proportion as prop
from gangplane.schedulers.volcano import vec
from gangplane.schedulers.volcano.filling import LastFilling
from gangplane.schedulers.volcano.proportion import QueuePolicy, proportion_deserved, real_capabilities
from gangplane.schedulers.volcano.vec import Vec


def vector_form(total: Vec, policies: list[QueuePolicy], requests: dict[str, Vec]) -> dict[str, Vec]:
    dims = len(total)
    caps = real_capabilities(total, policies)
    deserved = {p.name: vec.zeros(dims) for p in policies}
    satisfied: set[str] = set()
    remaining = total.copy()
    for _ in range(len(policies) + 64):
        weight = sum(p.weight for p in policies if p.name not in satisfied)
        if weight == 0:
            break
        increased, decreased = vec.zeros(dims), vec.zeros(dims)
        for p in policies:
            if p.name in satisfied:
                continue
            request, old = requests.get(p.name, vec.zeros(dims)), deserved[p.name]
            grant = remaining * p.weight / weight
            new = np.maximum(np.minimum(np.minimum(old + grant, caps[p.name]), request), p.guarantee)
            deserved[p.name] = new
            if vec.le(request, new) or vec.equal(new, old):
                satisfied.add(p.name)
            increased += vec.positive_part(new - old)
            decreased += vec.positive_part(old - new)
        before = remaining
        remaining = vec.positive_part(remaining - increased + decreased)
        if vec.is_empty(remaining) or vec.equal(remaining, before):
            break
    return deserved


amounts = st.one_of(st.integers(0, 1000).map(float), st.floats(0, 1e6), st.just(64e9))
caps = st.one_of(st.just(float("inf")), st.integers(0, 500).map(float), st.floats(0, 1000))


@settings(max_examples=300, deadline=None)
@given(data=st.data(), dims=st.integers(1, 5), queues=st.integers(1, 15))
def test_float_water_filling_equals_the_vector_form(data: st.DataObject, dims: int, queues: int) -> None:

    def vectors(elements: st.SearchStrategy[float]) -> st.SearchStrategy[Vec]:
        return st.lists(elements, min_size=dims, max_size=dims).map(np.array)

    total = data.draw(vectors(amounts))
    policies = [
        QueuePolicy(
            name=f"q{i}",
            capability=data.draw(vectors(caps)),
            guarantee=data.draw(vectors(st.sampled_from([0.0, 0.0, 5.0, 50.0]))),
            weight=data.draw(st.integers(1, 7)),
        )
        for i in range(queues)
    ]
    requests = {p.name: data.draw(vectors(amounts)) for p in policies if data.draw(st.booleans())}
    expected = vector_form(total, policies, requests)
    got = proportion_deserved(total, policies, requests)
    assert got.keys() == expected.keys()
    for name in expected:
        assert got[name].tobytes() == expected[name].tobytes()  # to the bit


@settings(max_examples=200, deadline=None)
@given(data=st.data(), dims=st.integers(1, 4), queues=st.integers(1, 8))
def test_kept_filling_equals_a_fresh_one_as_requests_move(
    data: st.DataObject, dims: int, queues: int
) -> None:
    """``LastFilling`` reuses the last filling when the changed requests cap no round differently; every
    answer, reused or not, is the fresh filling's to the bit (requests move a little or a lot, as arrivals
    and ends move them, so both the reuse and the recomputation are taken)."""

    def vectors(elements: st.SearchStrategy[float]) -> st.SearchStrategy[Vec]:
        return st.lists(elements, min_size=dims, max_size=dims).map(np.array)

    total = data.draw(vectors(st.integers(0, 64).map(float)))
    policies = [
        QueuePolicy(
            name=f"q{i}",
            capability=data.draw(vectors(st.sampled_from([float("inf"), 8.0, 32.0]))),
            guarantee=data.draw(vectors(st.sampled_from([0.0, 0.0, 0.0, 4.0]))),
            weight=data.draw(st.integers(1, 4)),
        )
        for i in range(queues)
    ]
    kept, requests = LastFilling(), {p.name: vec.zeros(dims) for p in policies}
    for _ in range(data.draw(st.integers(1, 12))):
        name = data.draw(st.sampled_from(sorted(requests)))
        step = data.draw(vectors(st.sampled_from([0.0, 1.0, 8.0, 64.0])))
        sign = data.draw(st.sampled_from([1.0, -1.0]))
        requests[name] = np.maximum(requests[name] + sign * step, 0.0)
        got = kept.deserved(total, policies, requests)
        expected = proportion_deserved(total, policies, requests)
        assert {n: v.tobytes() for n, v in got.items()} == {n: v.tobytes() for n, v in expected.items()}


@settings(max_examples=300, deadline=None)
@given(data=st.data(), queues=st.integers(1, 15))
def test_one_dimension_filling_equals_the_vector_form(data: st.DataObject, queues: int) -> None:
    """Every queue asking for one resource alone (a GPU trace) takes the float path of the filling
    (``proportion._water_fill_one``): still the vector form to the bit, and no list compared per value."""
    total = np.array([data.draw(amounts), 0.0, data.draw(st.sampled_from([0.0, 7.0]))])
    policies = [
        QueuePolicy(
            name=f"q{i}",
            capability=np.array([data.draw(caps), float("inf"), float("inf")]),
            guarantee=np.array([data.draw(st.sampled_from([0.0, 0.0, 5.0, 50.0])), 0.0, 0.0]),
            weight=data.draw(st.integers(1, 7)),
        )
        for i in range(queues)
    ]
    requests = {
        p.name: np.array([data.draw(amounts), 0.0, 0.0]) for p in policies if data.draw(st.booleans())
    }
    requests["q0"] = np.array([float(data.draw(st.integers(1, 1000))), 0.0, 0.0])  # one dimension active
    expected = vector_form(total, policies, requests)
    with _no_list_comparison():
        got = proportion_deserved(total, policies, requests)
    assert {n: v.tobytes() for n, v in got.items()} == {n: v.tobytes() for n, v in expected.items()}


@contextmanager
def _no_list_comparison() -> Iterator[None]:
    def refuse(a: list[float], b: list[float]) -> bool:
        raise AssertionError("the one-dimension filling compared lists")

    kept = prop._le
    prop._le = refuse
    try:
        yield
    finally:
        prop._le = kept


def test_a_kept_filling_picks_its_bounds_once_while_total_and_specs_recur(monkeypatch: Any) -> None:
    """The capabilities, guarantees and what is left to give, on the active dimensions, are taken once
    for every filling over the same total, specs and active dimensions; refillings read only requests."""
    picked: list[int] = []
    real = prop.idle_beyond
    monkeypatch.setattr(prop, "idle_beyond", lambda left, on: picked.append(len(on)) or real(left, on))
    total = np.array([64.0, 0.0])
    policies = [QueuePolicy(f"q{i}", np.array([np.inf, np.inf]), vec.zeros(2)) for i in range(3)]
    kept, requests = LastFilling(), {p.name: np.array([1.0, 0.0]) for p in policies}
    for step in range(1, 6):  # each one a request met by its share: the filling runs again
        requests["q0"] = np.array([float(step), 0.0])
        got = kept.deserved(total, policies, requests)
        assert got["q0"].tolist() == [float(step), 0.0]
    assert picked == [1]
    requests["q1"] = np.array([1.0, 2.0])  # a second dimension asked for: taken again
    kept.deserved(total, policies, requests)
    assert picked == [1, 2]
