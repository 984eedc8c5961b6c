import numpy as np
import pytest

from gangplane.schedulers.core import Snapshot, find_victims
from gangplane.schedulers.core.preemption import victim_units
from schedulers.kube_builders import index_for, node, pod, snapshot


def test_bound_pods_counted_and_unknown_nodes_ignored() -> None:
    snap, _ = snapshot([node("a")], bound=[pod("x", cpu="2", node_name="a"), pod("y", node_name="gone")])
    assert snap.requested[0].tolist()[:3] == [2000, 0, 1]
    assert [p.key for p in snap.pods_on(0)] == ["ml/x"] and snap.location("ml/y") is None


def test_assume_forget_rollback() -> None:
    snap, [p, q] = snapshot([node("a"), node("b")], pending=[pod("p"), pod("q")])
    token = snap.checkpoint()
    snap.assume(p, 0)
    with pytest.raises(ValueError):
        snap.assume(p, 1)
    inner = snap.checkpoint()
    snap.assume(q, 1)
    snap.forget(p.key)
    assert [c[0] for c in snap.changes_since(token)] == ["assume", "assume", "forget"]
    snap.rollback(inner)
    assert snap.location(p.key) == 0 and snap.location(q.key) is None
    snap.rollback(token)
    assert snap.pods() == [] and not snap.requested.any()
    with pytest.raises(ValueError):
        snap.rollback(5)


def test_duplicate_node_names_rejected() -> None:
    nodes = [node("a"), node("a")]
    with pytest.raises(ValueError):
        Snapshot.from_objects(nodes, [], index_for(nodes))


def test_allocatable_is_read_only() -> None:
    snap, _ = snapshot([node("a")])
    with pytest.raises(ValueError):
        snap.allocatable[0, 0] = 1


def _full_cluster() -> tuple:
    nodes = [node("a", cpu="4"), node("b", cpu="4")]
    bound = [
        pod("low-old", cpu="2", priority=1, node_name="a", created=100),
        pod("low-new", cpu="2", priority=1, node_name="a", created=200),
        pod("mid", cpu="2", priority=5, node_name="b"),
        pod("top", cpu="2", priority=50, node_name="b"),
    ]
    return nodes, bound


@pytest.mark.parametrize(
    ("cpu", "priority", "expected"),
    [
        ("1", 10, ["ml/low-new"]),  # one victim is enough: the newest of the lowest priority
        ("4", 10, ["ml/low-new", "ml/low-old"]),  # a whole node: node a's two low pods, not mid + top
        ("2", 3, ["ml/low-new"]),
        ("4", 3, ["ml/low-new", "ml/low-old"]),
        ("6", 100, None),  # no node has 6 cpu
        ("4", 1, None),  # nothing has lower priority
    ],
    ids=["one", "node", "low-priority", "low-priority-node", "too-big", "no-lower"],
)
def test_find_victims(cpu: str, priority: int, expected: list[str] | None) -> None:
    nodes, bound = _full_cluster()
    snap, [p] = snapshot(nodes, bound=bound, pending=[pod("p", cpu=cpu, priority=priority)])
    before = snap.requested.copy()
    victims = find_victims(snap, p, lambda v: v.priority < p.priority)
    assert (None if victims is None else sorted(v.key for v in victims)) == (
        None if expected is None else sorted(expected)
    )
    assert np.array_equal(snap.requested, before)


def test_fits_already_means_no_victims() -> None:
    snap, [p] = snapshot([node("a")], pending=[pod("p")])
    assert find_victims(snap, p, lambda v: True) == []


def test_gang_victims_go_whole() -> None:
    nodes = [node("a", cpu="2"), node("b", cpu="2")]
    bound = [
        pod("g-0", group="g", node_name="a"),
        pod("g-1", group="g", node_name="b"),
        pod("solo", node_name="a"),
    ]
    snap, [p] = snapshot(nodes, bound=bound, pending=[pod("p", cpu="2", priority=5)])
    units = victim_units(snap, lambda v: True)
    assert [tuple(v.key for v in u) for u in units] == [("ml/g-0", "ml/g-1"), ("ml/solo",)]  # ties by key
    victims = find_victims(snap, p, lambda v: v.priority < 5)
    assert sorted(v.key for v in victims or []) == ["ml/g-0", "ml/g-1"]  # node b frees only with its gang
