"""Zone disruption (``node_lifecycle_controller_test.go`` TestMonitorNodeHealthEvictPodsWithDisruption; the
states as ``ComputeZoneState`` computes them): the node lifecycle controller adds no NoExecute taint where
every zone has lost every node (its own trouble, e.g. a suspended machine), nor in a small zone that lost most
of its nodes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from gangplane.client.controller import Controller, Manager
from gangplane.clock import ManualClock, rfc3339
from gangplane.controllers.node_health import desired_taints
from gangplane.controllers.node_lifecycle import build_node_lifecycle
from gangplane.controllers.node_zones import NoExecute, ZoneState, no_execute_mode, zone_of, zone_state
from gangplane.store.catalog import LEASES, NODES
from gangplane.store.memory import MemoryStore

Settle = Callable[[Controller], None]
GRACE = 50.0
UNREACHABLE = "node.kubernetes.io/unreachable"


@pytest.mark.parametrize(
    ("ready", "not_ready", "state"),
    [
        pytest.param(0, 0, ZoneState.NORMAL, id="no node"),
        pytest.param(3, 0, ZoneState.NORMAL, id="all ready"),
        pytest.param(0, 1, ZoneState.FULL, id="the only node down"),
        pytest.param(1, 2, ZoneState.NORMAL, id="two down: never partial"),
        pytest.param(2, 3, ZoneState.PARTIAL, id="three of five down: 60 % >= 55 %"),
        pytest.param(3, 3, ZoneState.NORMAL, id="half down: under 55 %"),
    ],
)
def test_the_zone_state_table(ready: int, not_ready: int, state: ZoneState) -> None:
    assert zone_state(ready, not_ready) is state


@pytest.mark.parametrize(
    ("counts", "mode"),
    [
        pytest.param({"a": (0, 2)}, NoExecute.REMOVE, id="Only zone is down - eviction shouldn't take place"),
        pytest.param(
            {"a": (0, 2), "b": (0, 1)}, NoExecute.REMOVE, id="Both zones down - eviction shouldn't take place"
        ),
        pytest.param(
            {"a": (0, 2), "b": (1, 0)}, NoExecute.FOLLOW, id="One zone is down - eviction should take place"
        ),
        pytest.param({"a": (2, 3)}, NoExecute.HOLD, id="small zone mostly down: rate 0"),
        pytest.param({"a": (20, 31)}, NoExecute.FOLLOW, id="large zone mostly down: the secondary rate"),
        pytest.param({"a": (3, 1)}, NoExecute.FOLLOW, id="normal"),
    ],
)
def test_the_no_execute_mode_table(counts: dict[str, tuple[int, int]], mode: NoExecute) -> None:
    assert no_execute_mode("a", counts) is mode


def test_zone_of_reads_region_and_zone() -> None:
    labels = {"topology.kubernetes.io/region": "r", "topology.kubernetes.io/zone": "z"}
    assert zone_of({"metadata": {"labels": labels}}) == "r:\x00:z"
    assert zone_of({"metadata": {}}) == ""


def test_hold_swaps_or_removes_but_adds_no_no_execute_taint() -> None:
    def node(ready: str, *keys: str) -> dict[str, Any]:
        taints = [{"key": k, "effect": "NoExecute"} for k in keys]
        conditions = [{"type": "Ready", "status": ready}]
        return {"metadata": {"name": "n"}, "spec": {"taints": taints}, "status": {"conditions": conditions}}

    added = desired_taints(node("Unknown"), 0, NoExecute.HOLD)
    assert added == [{"key": UNREACHABLE, "effect": "NoSchedule", "timeAdded": rfc3339(0)}]
    swapped = desired_taints(node("False", UNREACHABLE), 0, NoExecute.HOLD) or []
    assert {(t["key"], t["effect"]) for t in swapped} == {
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/not-ready", "NoSchedule"),
    }
    assert desired_taints(node("Unknown", UNREACHABLE), 0, NoExecute.REMOVE) == [
        {"key": UNREACHABLE, "effect": "NoSchedule", "timeAdded": rfc3339(0)}
    ]


def register(store: MemoryStore, clock: ManualClock, name: str) -> None:
    created = store.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    beat = rfc3339(clock.now())
    ready = {"type": "Ready", "status": "True", "lastHeartbeatTime": beat, "lastTransitionTime": beat}
    store.update_status(NODES, {**created, "status": {"conditions": [ready]}})
    spec = {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": rfc3339(clock.now())}
    store.create(LEASES, {"metadata": {"name": name, "namespace": "kube-node-lease"}, "spec": spec})


def no_execute(store: MemoryStore) -> dict[str, bool]:
    nodes = store.list(NODES).items
    return {
        n["metadata"]["name"]: any(t["effect"] == "NoExecute" for t in n["spec"].get("taints") or ())
        for n in nodes
    }


def test_when_every_node_goes_down_at_once_none_is_tainted_no_execute_until_one_returns(
    store: MemoryStore, clock: ManualClock, manager: Manager, settle: Settle
) -> None:
    """A suspended machine or a stalled control plane: every Lease looks stale at once. Upstream takes
    that for its own trouble (all zones in FullDisruption) and evicts nothing; once one node is ready again
    the others, still Unknown, are tainted as usual, at the zone's rate: its limiter was swapped to 0 and back,
    which leaves it empty (``SwapLimiter``), so the first taint waits one token (10 s at 0.1 nodes/s)."""
    lifecycle = build_node_lifecycle(manager, grace=GRACE)
    manager.start_informers()
    for name in ("n1", "n2"):
        register(store, clock, name)
    settle(lifecycle)
    clock.advance(GRACE + 600)  # the machine slept ten minutes
    settle(lifecycle)
    assert no_execute(store) == {"n1": False, "n2": False}
    assert all(any(t["effect"] == "NoSchedule" for t in n["spec"]["taints"]) for n in store.list(NODES).items)
    node = store.get(NODES, "", "n2")  # n2's agent re-registers: Ready again
    beat = rfc3339(clock.now())
    ready = {"type": "Ready", "status": "True", "lastHeartbeatTime": beat, "lastTransitionTime": beat}
    store.update_status(NODES, {**node, "status": {"conditions": [ready]}})
    settle(lifecycle)
    assert no_execute(store) == {"n1": False, "n2": False}
    clock.advance(10)
    settle(lifecycle)
    assert no_execute(store) == {"n1": True, "n2": False}
