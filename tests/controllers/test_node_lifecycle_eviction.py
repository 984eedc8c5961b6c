"""Taint-based eviction (``pkg/controller/tainteviction/taint_eviction_test.go``; the ported cases name their
upstream test and case): pods on a node with NoExecute taints they do not tolerate are marked
``DisruptionTarget`` and deleted, at once or when their toleration runs out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from gangplane.client.controller import Controller, Manager
from gangplane.clock import ManualClock, rfc3339
from gangplane.controllers.taint_eviction import build_taint_eviction, eviction_time, no_execute_taints
from gangplane.errors import NotFound
from gangplane.store.catalog import EVENTS, LEASES, NODES, PODS
from gangplane.store.memory import MemoryStore

T0 = 1_767_225_600.0  # as the fixtures' clock starts (conftest.py)
Settle = Callable[[Controller], None]
NOW = T0 + 10


def taint(index: int, added: float | None = T0) -> dict[str, Any]:
    """``createNoExecuteTaint``: key testTaint<i>, value test<i>."""
    made: dict[str, Any] = {"key": f"testTaint{index}", "value": f"test{index}", "effect": "NoExecute"}
    if added is not None:
        made["timeAdded"] = rfc3339(added)
    return made


def toleration(index: int, seconds: int | None = None) -> dict[str, Any]:
    """``addToleration``: tolerates testTaint<i>; ``seconds`` None tolerates it forever."""
    made: dict[str, Any] = {"key": f"testTaint{index}", "value": f"test{index}", "effect": "NoExecute"}
    if seconds is not None:
        made["tolerationSeconds"] = seconds
    return made


def pod(*tolerations: dict[str, Any], node: str = "node1", name: str = "pod1") -> dict[str, Any]:
    spec = {
        "nodeName": node,
        "tolerations": list(tolerations),
        "containers": [{"name": "c", "image": "busybox"}],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def test_filter_no_execute_taints() -> None:
    """TestFilterNoExecuteTaints."""
    node = {"spec": {"taints": [taint(1), {"key": "two", "value": "two", "effect": "NoSchedule"}]}}
    assert [t["key"] for t in no_execute_taints(node)] == ["testTaint1"]
    assert no_execute_taints(None) == []


@pytest.mark.parametrize(
    ("the_pod", "taints", "due"),
    [
        pytest.param(pod(), [], None, id="TestCreatePod: scheduled on untainted Node"),
        pytest.param(pod(), [taint(1)], float("-inf"), id="TestCreatePod: schedule on tainted Node"),
        pytest.param(
            pod(toleration(1, 100)),
            [taint(1)],
            T0 + 100,
            id="TestCreatePod: schedule on tainted Node with finite toleration",
        ),
        pytest.param(
            pod(toleration(1)),
            [taint(1)],
            None,
            id="TestCreatePod: schedule on tainted Node with infinite toleration",
        ),
        pytest.param(
            pod(toleration(2)),
            [taint(1)],
            float("-inf"),
            id="TestCreatePod: schedule on tainted Node with infinite invalid toleration",
        ),
        pytest.param(
            pod(toleration(1, 100)),
            [taint(1), taint(2)],
            float("-inf"),
            id="TestUpdateNode: Only one added taint tolerated",
        ),
        pytest.param(
            pod(toleration(1, 1), toleration(2, 100)),
            [taint(1), taint(2)],
            T0 + 1,
            id="TestUpdateNode: Pod with multiple tolerations are evicted when first one runs out",
        ),
        pytest.param(
            pod(toleration(1, 60), toleration(2)),
            [taint(1), taint(2, added=T0 + 30)],
            T0 + 60,
            id="TestUpdateNodeWithMultipleTaints: the finite toleration decides",
        ),
        pytest.param(
            pod(toleration(1, -5)), [taint(1)], T0, id="TestGetMinTolerationTime: negative is at once"
        ),
        pytest.param(
            pod({"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}),
            [taint(1, added=None)],
            NOW + 300,
            id="wildcard toleration; a taint without timeAdded counts from when it was first seen",
        ),
    ],
)
def test_the_eviction_time_table(
    the_pod: dict[str, Any], taints: list[dict[str, Any]], due: float | None
) -> None:
    assert eviction_time(the_pod, taints, NOW) == due


# -- the controller on a store and informers, with an injected clock ----------------------------------------


@pytest.fixture
def eviction(store: MemoryStore, clock: ManualClock, manager: Manager) -> Controller:
    controller = build_taint_eviction(manager)
    store.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"}})
    # an agent serves node1, so a delete is graceful (store/graceful.py)
    spec = {"holderIdentity": "node1", "leaseDurationSeconds": 40, "renewTime": rfc3339(clock.now())}
    store.create(LEASES, {"metadata": {"name": "node1", "namespace": "kube-node-lease"}, "spec": spec})
    manager.start_informers()
    return controller


def set_taints(store: MemoryStore, *taints: dict[str, Any]) -> None:
    node = store.get(NODES, "", "node1")
    store.update(NODES, {**node, "spec": {"taints": list(taints)}})


def evicted(store: MemoryStore, name: str = "pod1") -> bool:
    try:
        current = store.get(PODS, "default", name)
    except NotFound:
        return True
    return bool(current["metadata"].get("deletionTimestamp"))


def test_a_pod_that_does_not_tolerate_a_new_taint_is_marked_and_deleted_gracefully(
    store: MemoryStore, manager: Manager, eviction: Controller, settle: Settle
) -> None:
    """TestUpdateNode "Added taint, expect node patched and deleted": the DisruptionTarget condition, an
    Event, then a graceful delete (the agent stops the pod; the pod stays until then)."""
    store.create(PODS, pod())
    store.create(PODS, pod(name="elsewhere", node="node2"))
    settle(eviction)
    assert not evicted(store)
    set_taints(store, taint(1))
    settle(eviction)
    gone = store.get(PODS, "default", "pod1")
    assert gone["metadata"]["deletionTimestamp"] and gone["metadata"]["deletionGracePeriodSeconds"] == 30
    (condition,) = gone["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"], condition["message"]) == (
        "DisruptionTarget",
        "True",
        "DeletionByTaintManager",
        "Taint manager: deleting due to NoExecute taint",
    )
    (event,) = store.list(EVENTS).items
    assert (event["reason"], event["message"]) == (
        "TaintManagerEviction",
        "Marking for deletion Pod default/pod1",
    )
    assert not evicted(store, "elsewhere")


def test_a_tolerating_pod_goes_when_its_toleration_runs_out_from_time_added(
    store: MemoryStore, clock: ManualClock, manager: Manager, eviction: Controller, settle: Settle
) -> None:
    """TestUpdateNode "Added tolerated taint": kept while tolerated, deleted when tolerationSeconds (counted
    from the taint's timeAdded) have passed; a pod tolerating forever is never deleted."""
    store.create(PODS, pod(toleration(1, 100)))
    store.create(PODS, pod(toleration(1), name="forever"))
    set_taints(store, taint(1, added=T0 - 40))  # added before this controller looked
    settle(eviction)
    assert not evicted(store) and eviction.queue.next_due() == T0 + 60
    clock.advance(59)
    settle(eviction)
    assert not evicted(store)
    clock.advance(1)
    settle(eviction)
    assert evicted(store) and not evicted(store, "forever")
    assert eviction.queue.next_due() is None


def test_a_removed_taint_cancels_the_eviction(
    store: MemoryStore, clock: ManualClock, manager: Manager, eviction: Controller, settle: Settle
) -> None:
    """TestUpdateNode "Taint removed": the timer still fires, finds nothing to do."""
    store.create(PODS, pod(toleration(1, 1)))
    set_taints(store, taint(1))
    settle(eviction)
    set_taints(store)
    settle(eviction)
    clock.advance(5)
    settle(eviction)
    assert not evicted(store)


def test_a_pod_bound_to_a_tainted_node_is_deleted(
    store: MemoryStore, manager: Manager, eviction: Controller, settle: Settle
) -> None:
    """TestUpdatePod "scheduling onto tainted Node" and "scheduling onto tainted Node with toleration"."""
    set_taints(store, taint(1))
    settle(eviction)
    store.create(PODS, pod(node=""))
    store.create(PODS, pod(toleration(1), node="", name="tolerating"))
    settle(eviction)
    for name in ("pod1", "tolerating"):
        current = store.get(PODS, "default", name)
        store.update(PODS, {**current, "spec": {**current["spec"], "nodeName": "node1"}})
    settle(eviction)
    assert evicted(store) and not evicted(store, "tolerating")
