"""The NoExecute tainting rate limit per zone: the queue and token bucket (``pkg/controller/nodelifecycle/
scheduler/rate_limited_queue_test.go``: TestTryOrdering, TestDelNode, TestSwapLimiter), the zone's rate
(``node_lifecycle_controller_test.go`` TestMonitorNodeHealthEvictPodsWithDisruption: ``setLimiterInZone``), and
the controller tainting nodes that go down together one every ``1/--node-eviction-rate`` seconds."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gangplane.client.controller import Controller, Manager
from gangplane.clock import ManualClock, rfc3339
from gangplane.controllers.node_eviction import EvictionRates, ZoneTainters
from gangplane.controllers.node_lifecycle import build_node_lifecycle
from gangplane.controllers.node_zones import zone_rate
from gangplane.store.catalog import LEASES, NODES
from gangplane.store.memory import MemoryStore

Settle = Callable[[Controller], None]
GRACE = 50.0


def test_try_ordering_taints_first_come_first_and_one_per_token() -> None:
    """TestTryOrdering: the head goes first; burst 1, so one at once and then one every 1/qps seconds."""
    clock = ManualClock(0)
    tainters = ZoneTainters(clock)
    assert tainters.admit("z", "a") == 0.0  # a new zone's bucket is full
    assert tainters.admit("z", "b") == 10.0
    assert tainters.admit("z", "c") == 20.0  # one ahead of it
    clock.advance(10)
    assert tainters.admit("z", "c") == 10.0  # not its turn: "b" is first in line
    assert tainters.admit("z", "b") == 0.0
    assert tainters.admit("z", "c") == 10.0
    assert tainters.queued("z") == ["c"]


def test_del_node_wakes_the_nodes_behind_it() -> None:
    """TestDelNode: a node ready again leaves the line; those behind it move up."""
    clock = ManualClock(0)
    tainters = ZoneTainters(clock)
    for name in ("a", "b", "c"):
        tainters.admit("z", name)
    assert tainters.queued("z") == ["b", "c"]  # "a" took the full bucket's token
    assert tainters.forget("b") == ["c"]
    assert tainters.forget("nobody") == []
    assert tainters.admit("z", "c") == 10.0


@pytest.mark.parametrize(
    ("drained", "swapped_to", "wait"),
    [
        pytest.param(False, 0.01, 0.0, id="a full bucket stays full"),
        pytest.param(True, 0.01, 100.0, id="an empty bucket stays empty at the new rate"),
        pytest.param(False, 0.0, None, id="rate 0 never taints"),
    ],
)
def test_swap_limiter(drained: bool, swapped_to: float, wait: float | None) -> None:
    """TestSwapLimiter: ``SwapLimiter`` keeps an empty limiter empty (the drain when Burst is 1)."""
    clock = ManualClock(0)
    tainters = ZoneTainters(clock)
    if drained:
        assert tainters.admit("z", "first") == 0.0
    tainters.swap("z", swapped_to)
    assert tainters.admit("z", "next") == wait


def test_a_zone_swapped_to_zero_and_back_starts_empty() -> None:
    """Leaving master disruption mode: the limiters were 0, so the first taint waits one token."""
    clock = ManualClock(0)
    tainters = ZoneTainters(clock)
    tainters.swap("z", 0.0)
    tainters.swap("z", 0.1)
    assert tainters.admit("z", "n") == 10.0


RATES = EvictionRates(
    node_eviction_rate=0.1, secondary_node_eviction_rate=0.01, large_cluster_size_threshold=50
)


@pytest.mark.parametrize(
    ("counts", "rate"),
    [
        pytest.param({"a": (3, 1)}, 0.1, id="normal zone: --node-eviction-rate"),
        pytest.param({"a": (2, 3)}, 0.0, id="small partially disrupted zone: 0"),
        pytest.param(
            {"a": (20, 31)}, 0.01, id="large partially disrupted zone: --secondary-node-eviction-rate"
        ),
        pytest.param({"a": (0, 2), "b": (1, 0)}, 0.1, id="one zone fully disrupted: the healthy rate"),
        pytest.param({"a": (0, 2), "b": (0, 1)}, 0.0, id="every zone fully disrupted: 0"),
    ],
)
def test_the_zone_rate_table(counts: dict[str, tuple[int, int]], rate: float) -> None:
    assert zone_rate("a", counts, RATES) == rate


def test_the_large_cluster_size_threshold_is_a_flag() -> None:
    rates = EvictionRates(large_cluster_size_threshold=4)
    assert zone_rate("a", {"a": (2, 3)}, rates) == 0.01


def register(store: MemoryStore, clock: ManualClock, name: str) -> None:
    created = store.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    beat = rfc3339(clock.now())
    ready = {"type": "Ready", "status": "True", "lastHeartbeatTime": beat, "lastTransitionTime": beat}
    store.update_status(NODES, {**created, "status": {"conditions": [ready]}})
    spec = {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": beat}
    store.create(LEASES, {"metadata": {"name": name, "namespace": "kube-node-lease"}, "spec": spec})


def renew(store: MemoryStore, clock: ManualClock, names: list[str]) -> None:
    for name in names:
        lease = store.get(LEASES, "kube-node-lease", name)
        store.update(LEASES, {**lease, "spec": {**lease["spec"], "renewTime": rfc3339(clock.now())}})


def no_execute(store: MemoryStore) -> set[str]:
    return {
        n["metadata"]["name"]
        for n in store.list(NODES).items
        if any(t["effect"] == "NoExecute" for t in (n.get("spec") or {}).get("taints") or ())
    }


def test_nodes_down_together_are_tainted_one_every_ten_seconds(
    store: MemoryStore, clock: ManualClock, manager: Manager, settle: Settle
) -> None:
    """Three of ten nodes stop (a Normal zone: 30 % down): the first is tainted NoExecute at once, the others
    10 s apart (--node-eviction-rate 0.1); NoSchedule taints are not limited."""
    lifecycle = build_node_lifecycle(manager, grace=GRACE)
    manager.start_informers()
    names = [f"n{i}" for i in range(10)]
    for name in names:
        register(store, clock, name)
    settle(lifecycle)
    live = names[3:]
    clock.advance(GRACE + 1)
    renew(store, clock, live)
    settle(lifecycle)
    assert len(no_execute(store)) == 1
    unreachable = [n for n in store.list(NODES).items if n["metadata"]["name"] in names[:3]]
    assert all(
        any(t["effect"] == "NoSchedule" for t in n.get("spec", {}).get("taints") or ()) for n in unreachable
    )
    clock.advance(9)
    renew(store, clock, live)
    settle(lifecycle)
    assert len(no_execute(store)) == 1
    clock.advance(1)
    settle(lifecycle)
    assert len(no_execute(store)) == 2
    clock.advance(10)
    renew(store, clock, live)
    settle(lifecycle)
    assert no_execute(store) == set(names[:3])


def test_a_node_ready_again_leaves_the_line_and_the_next_moves_up(
    store: MemoryStore, clock: ManualClock, manager: Manager, settle: Settle
) -> None:
    lifecycle = build_node_lifecycle(manager, grace=GRACE, rates=EvictionRates(node_eviction_rate=0.05))
    manager.start_informers()
    names = [f"n{i}" for i in range(10)]
    for name in names:
        register(store, clock, name)
    settle(lifecycle)
    clock.advance(GRACE + 1)
    renew(store, clock, names[3:])
    settle(lifecycle)
    first = no_execute(store)
    assert len(first) == 1  # the others wait 20 s and 40 s at 0.05 nodes/s
    second = sorted(set(names[:3]) - first)[0]  # returns before its turn
    node = store.get(NODES, "", second)
    beat = rfc3339(clock.now())
    ready = {"type": "Ready", "status": "True", "lastHeartbeatTime": beat, "lastTransitionTime": beat}
    store.update_status(NODES, {**node, "status": {"conditions": [ready]}})
    settle(lifecycle)
    clock.advance(20)
    renew(store, clock, [n for n in names if n not in names[:3] or n == second])
    settle(lifecycle)
    assert no_execute(store) == set(names[:3]) - {second}
