"""Worked numbers for Volcano's proportion water-filling, capacity entitlements and the queue book."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane.schedulers.volcano import proportion as prop
from gangplane.schedulers.volcano.book import QueueBook, QueueDemand, SharePolicy
from gangplane.schedulers.volcano.proportion import QueuePolicy, QueueState

INF = np.inf


def v(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float64)


def policy(name: str, dims: int = 1, **kw: object) -> QueuePolicy:
    kw.setdefault("capability", np.full(dims, INF))
    kw.setdefault("guarantee", np.zeros(dims))
    return QueuePolicy(name=name, **kw)  # type: ignore[arg-type]


def test_weights_split_then_leftover_goes_to_the_hungry_queue() -> None:
    # 12 GPUs, a:b = 1:3; b wants only 4 so a ends with 3 + the 5 b left over.
    got = prop.proportion_deserved(
        v(12), [policy("a", weight=1), policy("b", weight=3)], {"a": v(10), "b": v(4)}
    )
    assert got["a"].tolist() == [8] and got["b"].tolist() == [4]


def test_capability_caps_the_water_level() -> None:
    got = prop.proportion_deserved(
        v(12), [policy("a", weight=1, capability=v(6)), policy("b", weight=3)], {"a": v(10), "b": v(4)}
    )
    assert got["a"].tolist() == [6] and got["b"].tolist() == [4]


def test_guarantee_is_reserved_from_every_other_queue() -> None:
    # a guarantees 5 of 10 but asks 2: a keeps 5, b's reach is 10 − 5 = 5.
    policies = [policy("a", guarantee=v(5)), policy("b")]
    got = prop.proportion_deserved(v(10), policies, {"a": v(2), "b": v(10)})
    assert got["a"].tolist() == [5] and got["b"].tolist() == [5]
    assert prop.real_capabilities(v(10), policies)["b"].tolist() == [5]


def test_queue_without_demand_deserves_nothing() -> None:
    got = prop.proportion_deserved(v(8, 80), [policy("a", 2), policy("b", 2)], {"a": v(8, 16)})
    assert got["a"].tolist() == [8, 16] and got["b"].tolist() == [0, 0]


@settings(max_examples=150, deadline=None)
@given(
    total=st.integers(0, 64),
    queues=st.lists(
        st.tuples(st.integers(1, 5), st.integers(0, 64), st.one_of(st.none(), st.integers(0, 64))),
        min_size=1,
        max_size=5,
    ),
)
def test_water_filling_never_exceeds_request_capability_or_cluster(
    total: int, queues: list[tuple[int, int, int | None]]
) -> None:
    policies = [
        policy(f"q{i}", weight=w, capability=v(INF if cap is None else cap))
        for i, (w, _, cap) in enumerate(queues)
    ]
    requests = {f"q{i}": v(req) for i, (_, req, _) in enumerate(queues)}
    got = prop.proportion_deserved(v(total), policies, requests)
    assert sum(d[0] for d in got.values()) <= total + 1e-6
    for p in policies:
        assert got[p.name][0] <= requests[p.name][0] + 1e-6
        assert got[p.name][0] <= p.capability[0] + 1e-6
    # Work-conserving: either everyone capped (request or capability) or the cluster is fully handed out.
    unmet = [p for p in policies if got[p.name][0] < min(requests[p.name][0], p.capability[0]) - 1e-6]
    if unmet:
        assert sum(d[0] for d in got.values()) == pytest.approx(total)


def test_capacity_deserved_is_clamped_between_guarantee_and_real_capability() -> None:
    a = policy("a", deserved=v(20), guarantee=v(2), capability=v(12))
    cap = prop.real_capabilities(v(16), [a])["a"]
    assert cap.tolist() == [12]
    assert prop.capacity_deserved(a, cap).tolist() == [12]
    best_effort = policy("b", guarantee=v(1))
    assert prop.capacity_deserved(best_effort, v(16)).tolist() == [1]


def test_hierarchy_inherits_unbounded_dimensions_and_subtracts_sibling_guarantees() -> None:
    policies = [
        policy("org", dims=2, capability=v(10, INF)),
        policy("team-a", dims=2, parent="org", guarantee=v(3, 0)),
        policy("team-b", dims=2, parent="org", capability=v(INF, 5)),
    ]
    caps = prop.hierarchical_capabilities(v(16, 100), policies)
    assert caps["org"].tolist() == [10, 100]
    assert caps["team-a"].tolist() == [10, 100]
    assert caps["team-b"].tolist() == [7, 5]


def test_hierarchy_rejects_unknown_parents_and_cycles() -> None:
    with pytest.raises(ValueError, match="unknown parent"):
        prop.hierarchy([policy("a", parent="ghost")])
    with pytest.raises(ValueError, match="cycle"):
        prop.hierarchy([policy("a", parent="b"), policy("b", parent="a")])


def demand(allocated: float, request: float) -> QueueDemand:
    return QueueDemand(v(allocated), v(request), v(0), v(0))


def test_book_proportion_caps_at_deserved_and_says_why() -> None:
    book = QueueBook(
        ["nvidia.com/gpu"],
        v(10),
        [policy("team-a"), policy("team-b")],
        {"team-a": demand(2, 20), "team-b": demand(0, 20)},
    )
    assert book.attr("team-a").deserved.tolist() == [5]
    assert book.allocatable("team-a", v(3))
    assert book.allocatable_reason("team-a", v(4)) == (
        "queue team-a at its deserved share nvidia.com/gpu=5, 2 in use, 4 more requested"
    )
    book.allocate("team-a", v(3))
    assert book.overused("team-a") and not book.overused("team-b")
    assert book.order_key("team-b") < book.order_key("team-a")


def test_book_capacity_lets_a_queue_borrow_up_to_capability() -> None:
    policies = [policy("a", deserved=v(4), capability=v(8)), policy("b", deserved=v(6))]
    book = QueueBook(["cpu"], v(10_000), policies, {"a": demand(0, 10)}, policy=SharePolicy.CAPACITY)
    assert book.allocatable("a", v(8)) and not book.allocatable("a", v(9))
    book.allocate("a", v(7))
    assert book.reclaimable("a", v(1))  # above its deserved 4
    assert not book.preemptive("a", v(1))  # already past deserved on its only dimension
    assert book.preemptive("b", v(3))


def test_closed_queue_admits_nothing() -> None:
    book = QueueBook(["cpu"], v(10), [policy("a", state=QueueState.CLOSED)], {})
    assert book.allocatable_reason("a", v(1)) == "queue a is Closed"
    assert book.enqueue_reason("a", v(1)) == "queue a is Closed"


def test_not_reclaimable_queue_keeps_its_work() -> None:
    book = QueueBook(["cpu"], v(10), [policy("a", reclaimable=False), policy("b")], {"a": demand(10, 10)})
    assert not book.reclaimable("a", v(1))


def test_hierarchical_capacity_checks_every_ancestor() -> None:
    policies = [
        policy("org", capability=v(6), deserved=v(6)),
        policy("a", parent="org", deserved=v(6)),
        policy("b", parent="org", deserved=v(6)),
    ]
    book = QueueBook(
        ["cpu"], v(10), policies, {"a": demand(4, 4)}, policy=SharePolicy.CAPACITY, hierarchical=True
    )
    assert book.attr("org").allocated.tolist() == [4]
    assert book.chain("a") == ["a", "org"]
    assert not book.is_leaf("org") and book.is_leaf("a")
    reason = book.allocatable_reason("b", v(3))
    assert reason is not None and reason.startswith("queue org at its capability")
