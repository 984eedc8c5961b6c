import numpy as np
import pytest

from gangplane.schedulers.core import Strategy, place_gang
from gangplane.schedulers.core.gang import choose_nodes, member_capacity
from schedulers.kube_builders import node, pod, snapshot


def _gpu_cluster(n: int = 4, gpus: int = 2) -> list[dict]:
    return [node(f"n{i}", cpu="16", gpu=gpus) for i in range(n)]


def _members(count: int, prefix: str = "w", **kw) -> list[dict]:
    return [pod(f"{prefix}-{i}", gpu=1, group=prefix, **kw) for i in range(count)]


def _nodes_used(placement) -> list[str]:
    return [b.node for b in placement.bindings]


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        (Strategy.BINPACK, ["n0", "n0", "n1", "n1", "n2", "n2"]),
        (Strategy.SPREAD, ["n0", "n0", "n1", "n1", "n2", "n3"]),
    ],
    ids=["binpack", "spread"],
)
def test_places_whole_gang(strategy: Strategy, expected: list[str]) -> None:
    snap, members = snapshot(_gpu_cluster(), pending=_members(6))
    placement = place_gang(snap, members, min_member=6, strategy=strategy)
    assert placement.ok and placement.best == 6 and placement.unplaced == ()
    assert _nodes_used(placement) == expected
    assert int(snap.requested[:, snap.index.position("nvidia.com/gpu")].sum()) == 6


def test_spread_prefers_emptier_nodes() -> None:
    snap, members = snapshot(_gpu_cluster(), bound=[pod("x", gpu=1, node_name="n0")], pending=_members(2))
    placement = place_gang(snap, members, min_member=2, strategy=Strategy.SPREAD)
    assert _nodes_used(placement) == ["n1", "n2"]


def test_binpack_prefers_fuller_nodes() -> None:
    snap, members = snapshot(
        _gpu_cluster(gpus=4), bound=[pod("x", gpu=1, node_name="n2")], pending=_members(3)
    )
    placement = place_gang(snap, members, min_member=3, strategy=Strategy.BINPACK)
    assert _nodes_used(placement) == ["n2", "n2", "n2"]


def test_all_or_nothing_failure_changes_nothing() -> None:
    snap, members = snapshot(_gpu_cluster(), pending=_members(9))
    before = snap.requested.copy()
    placement = place_gang(snap, members, min_member=9)
    assert not placement.ok and placement.bindings == () and placement.best == 8
    assert np.array_equal(snap.requested, before) and snap.pods() == []
    assert "gang needs 9 pods (cpu=1, nvidia.com/gpu=1 each); largest placement found 8" in placement.message
    assert "0/4 nodes are available: 4 Insufficient nvidia.com/gpu." in placement.message


def test_min_member_below_size_places_what_fits() -> None:
    snap, members = snapshot(_gpu_cluster(), pending=_members(10))
    placement = place_gang(snap, members, min_member=6)
    assert placement.ok and placement.best == 8 and len(placement.unplaced) == 2


def test_mixed_shapes_largest_first() -> None:
    pods = [pod("launcher", cpu="1", group="g"), *(pod(f"w{i}", cpu="2", gpu=2, group="g") for i in range(4))]
    snap, members = snapshot(_gpu_cluster(), pending=pods)
    placement = place_gang(snap, members, min_member=5)
    assert placement.ok
    assert [b.pod_key for b in placement.bindings][:4] == ["ml/w0", "ml/w1", "ml/w2", "ml/w3"]


def test_mixed_shape_failure_message() -> None:
    pods = [pod("launcher", cpu="1", group="g"), *(pod(f"w{i}", cpu="2", gpu=2, group="g") for i in range(4))]
    snap, members = snapshot(_gpu_cluster(2), pending=pods)
    placement = place_gang(snap, members, min_member=5)
    assert not placement.ok and placement.best == 3
    assert "gang needs 5 pods (4 × cpu=2, nvidia.com/gpu=2; 1 × cpu=1)" in placement.message


def test_allowed_mask_restricts_nodes() -> None:
    snap, members = snapshot(_gpu_cluster(), pending=_members(2))
    allowed = np.array([False, False, True, False])
    placement = place_gang(snap, members, min_member=2, allowed=allowed)
    assert _nodes_used(placement) == ["n2", "n2"]


def test_min_member_larger_than_gang() -> None:
    snap, members = snapshot(_gpu_cluster(), pending=_members(2))
    placement = place_gang(snap, members, min_member=3)
    assert not placement.ok and placement.message == "gang needs 3 pods but has 2"


def test_member_capacity_integer_division() -> None:
    snap, members = snapshot(
        [node("a", cpu="7", gpu=3), node("b", cpu="2", gpu=8)], pending=[pod("p", cpu="2", gpu=1)]
    )
    assert member_capacity(snap, members[0].requests, np.arange(2)).tolist() == [3, 1]


def test_choose_nodes_respects_constraints() -> None:
    nodes = [node("a", gpu=2, labels={"pool": "x"}), node("b", gpu=2)]
    snap, [p] = snapshot(nodes, pending=[pod("p", gpu=1, nodeSelector={"pool": "x"})])
    assert choose_nodes(snap, p, 5, Strategy.SPREAD).tolist() == [0, 0]


def test_deterministic() -> None:
    results = []
    for _ in range(2):
        snap, members = snapshot(_gpu_cluster(8, 3), pending=_members(13))
        results.append(place_gang(snap, members, min_member=13, strategy=Strategy.SPREAD).bindings)
    assert results[0] == results[1]
