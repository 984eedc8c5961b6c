"""The node lifecycle controller: health from heartbeats, the conditions it sets and the taints that follow
(``pkg/controller/nodelifecycle/node_lifecycle_controller_test.go``; the ported cases name their upstream
test and case)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from gangplane.agent import heartbeat
from gangplane.client.controller import Controller, Manager
from gangplane.clock import ManualClock, rfc3339
from gangplane.controllers.node_health import (
    Health,
    desired_taints,
    grace_left,
    mark_unknown,
    observe,
    pod_not_ready,
)
from gangplane.controllers.node_lifecycle import NodeLifecycle, build_node_lifecycle
from gangplane.store.catalog import EVENTS, LEASES, NODES, PODS
from gangplane.store.memory import MemoryStore

T0 = 1_767_225_600.0  # as the fixtures' clock starts (conftest.py)
Settle = Callable[[Controller], None]
GRACE, STARTUP = 50.0, 60.0
UNREACHABLE, NOT_READY = "node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"
TYPES = ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")


def cond(type_: str, status: str, beat: float = T0) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "lastHeartbeatTime": rfc3339(beat),
        "lastTransitionTime": rfc3339(beat),
    }


def node_dict(
    ready: str | None = "True", *, beat: float = T0, created: float = T0, **spec: Any
) -> dict[str, Any]:
    """A Node as an agent posts it: the pressure conditions False and Ready as given (None: no status)."""
    status: dict[str, Any] = {}
    if ready is not None:
        status["conditions"] = [*(cond(t, "False", beat) for t in TYPES[:3]), cond("Ready", ready, beat)]
    meta = {"name": "n1", "creationTimestamp": rfc3339(created)}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": status}


def lease(renewed: float, node: str = "n1") -> dict[str, Any]:
    spec = {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": rfc3339(renewed)}
    return {"metadata": {"name": node, "namespace": "kube-node-lease"}, "spec": spec}


def statuses(node: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c.get("reason", "")) for c in node["status"].get("conditions") or ()}


def keys(taints: list[dict[str, Any]] | None) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in taints or ()}


# -- observe: when the agent was last seen alive ------------------------------------------------------------


@pytest.mark.parametrize(
    ("saved", "node", "renewed", "probed"),
    [
        pytest.param(None, node_dict(), None, T0 + 100, id="first seen: now, whatever the heartbeat says"),
        pytest.param(None, node_dict(None, created=T0), None, T0, id="never posted: from creation"),
        pytest.param(
            Health(T0 + 10, rfc3339(T0), None), node_dict(), None, T0 + 10, id="same heartbeat: kept"
        ),
        pytest.param(
            Health(T0 + 10, rfc3339(T0), None),
            node_dict(beat=T0 + 5),
            None,
            T0 + 100,
            id="new heartbeat: now",
        ),
        pytest.param(
            Health(T0 + 10, rfc3339(T0), T0 + 3), node_dict(), T0 + 4, T0 + 100, id="lease renewed: now"
        ),
        pytest.param(
            Health(T0 + 10, rfc3339(T0), T0 + 3), node_dict(), T0 + 3, T0 + 10, id="same lease renewal: kept"
        ),
        pytest.param(Health(T0 + 10, rfc3339(T0), T0 + 3), node_dict(), None, T0 + 10, id="lease gone: kept"),
    ],
)
def test_the_observe_table(
    saved: Health | None, node: dict[str, Any], renewed: float | None, probed: float
) -> None:
    """``tryUpdateNodeHealth``'s cases: the probe time is this controller's clock, not the agent's."""
    seen = observe(saved, node, lease(renewed) if renewed is not None else None, T0 + 100)
    assert seen.probed == probed


def test_grace_left_uses_the_startup_grace_for_a_node_that_never_posted_status() -> None:
    health = Health(T0, None, None)
    assert grace_left(node_dict(), health, T0 + 10, GRACE, STARTUP) == 40
    assert grace_left(node_dict(None), health, T0 + 10, GRACE, STARTUP) == 50


# -- mark_unknown -------------------------------------------------------------------------------------------


def test_mark_unknown_sets_every_kubelet_condition_unknown_and_keeps_the_heartbeat() -> None:
    """TestMonitorNodeHealthUpdateStatus "Node created long time ago, with status updated by kubelet exceeds
    grace period": Ready and the pressure conditions become Unknown, NodeStatusUnknown."""
    network = {"type": "NetworkUnavailable", "status": "False"}
    node = node_dict()
    node["status"]["conditions"].append(network)
    marked = mark_unknown(node, T0 + 60)
    assert marked is not None
    assert statuses(marked) == {
        **{t: ("Unknown", "NodeStatusUnknown") for t in TYPES},
        "NetworkUnavailable": ("False", ""),  # managed by the control plane, left alone
    }
    ready = next(c for c in marked["status"]["conditions"] if c["type"] == "Ready")
    assert ready["message"] == "Kubelet stopped posting node status."
    assert ready["lastHeartbeatTime"] == rfc3339(T0) and ready["lastTransitionTime"] == rfc3339(T0 + 60)
    assert statuses(node)["Ready"] == ("True", "")  # the input is not edited
    assert mark_unknown(marked, T0 + 70) is None  # already Unknown: nothing to write


def test_mark_unknown_adds_never_posted_conditions() -> None:
    """TestMonitorNodeHealthUpdateStatus "Node created long time ago, with no status."."""
    marked = mark_unknown(node_dict(None, created=T0), T0 + 61)
    assert marked is not None
    assert statuses(marked) == {t: ("Unknown", "NodeStatusNeverUpdated") for t in TYPES}
    assert {c["lastHeartbeatTime"] for c in marked["status"]["conditions"]} == {rfc3339(T0)}


# -- desired_taints: TestTaintsNodeByCondition, TestApplyNoExecuteTaints, TestSwapUnreachableNotReadyTaints --


def with_conditions(node: dict[str, Any], **statuses: str) -> dict[str, Any]:
    conditions = [c for c in node["status"]["conditions"] if c["type"] not in statuses]
    return {**node, "status": {"conditions": [*conditions, *(cond(t, s) for t, s in statuses.items())]}}


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        pytest.param(node_dict(), set(), id="healthy: none"),
        pytest.param(
            with_conditions(node_dict(), NetworkUnavailable="True"),
            {("node.kubernetes.io/network-unavailable", "NoSchedule")},
            id="NetworkUnavailable is true",
        ),
        pytest.param(
            with_conditions(node_dict(), MemoryPressure="True", DiskPressure="True", PIDPressure="True"),
            {(f"node.kubernetes.io/{k}-pressure", "NoSchedule") for k in ("memory", "disk", "pid")},
            id="pressure conditions are true",
        ),
        pytest.param(
            node_dict("False"), {(NOT_READY, "NoSchedule"), (NOT_READY, "NoExecute")}, id="Ready is false"
        ),
        pytest.param(
            node_dict("Unknown"),
            {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")},
            id="Ready is unknown",
        ),
        pytest.param(
            node_dict(unschedulable=True),
            {("node.kubernetes.io/unschedulable", "NoSchedule")},
            id="unschedulable node",
        ),
    ],
)
def test_the_taints_by_condition_table(node: dict[str, Any], expected: set[tuple[str, str]]) -> None:
    assert keys(desired_taints(node, T0) or node["spec"].get("taints")) == expected


def test_taints_swap_between_unreachable_and_not_ready_and_go_when_ready() -> None:
    """TestSwapUnreachableNotReadyTaints; ``markNodeAsReachable`` when Ready is True again. Other taints stay
    in place; a taint already there keeps its timeAdded."""
    mine = {"key": "example.com/dedicated", "value": "gpu", "effect": "NoSchedule"}
    unknown = node_dict("Unknown", taints=[mine])
    taints = desired_taints(unknown, T0)
    assert taints is not None and taints[0] == mine
    assert keys(taints) == {
        ("example.com/dedicated", "NoSchedule"),
        (UNREACHABLE, "NoSchedule"),
        (UNREACHABLE, "NoExecute"),
    }
    assert {t.get("timeAdded") for t in taints[1:]} == {rfc3339(T0)}
    assert desired_taints({**unknown, "spec": {"taints": taints}}, T0 + 5) is None  # written once
    not_ready = node_dict("False", taints=taints)
    swapped = desired_taints(not_ready, T0 + 5)
    assert keys(swapped) == {
        ("example.com/dedicated", "NoSchedule"),
        (NOT_READY, "NoSchedule"),
        (NOT_READY, "NoExecute"),
    }
    assert desired_taints(node_dict("True", taints=swapped), T0 + 9) == [mine]


def test_a_node_without_ready_keeps_its_no_execute_taints() -> None:
    """``monitorNodeHealth`` touches NoExecute taints only for a node with a Ready condition."""
    taint = {"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": rfc3339(T0)}
    assert desired_taints(node_dict(None, taints=[taint]), T0) is None


# -- the controller on a store and informers, with an injected clock ----------------------------------------


@pytest.fixture
def lifecycle(manager: Manager) -> Controller:
    controller = build_node_lifecycle(manager, grace=GRACE, startup_grace=STARTUP)
    manager.start_informers()
    return controller


def agent_node(store: MemoryStore, clock: ManualClock, name: str = "n1") -> dict[str, Any]:
    """Register a node as an agent does: the Node, its status with fresh heartbeats, and its Lease."""
    created = store.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    status = {
        "conditions": [
            *(cond(t, "False", clock.now()) for t in TYPES[:3]),
            cond("Ready", "True", clock.now()),
        ]
    }
    store.create(LEASES, lease(clock.now(), name))
    return store.update_status(NODES, {**created, "status": status})


def renew(store: MemoryStore, clock: ManualClock, name: str = "n1") -> None:
    current = store.get(LEASES, "kube-node-lease", name)
    store.update(LEASES, {**current, "spec": {**current["spec"], "renewTime": rfc3339(clock.now())}})


def advance(store: MemoryStore, clock: ManualClock, seconds: float) -> None:
    """Time passes; n2, the live neighbour, renews its Lease meanwhile (a zone whose every node is down
    gets no NoExecute taint: node_zones.py)."""
    clock.advance(seconds)
    renew(store, clock, "n2")


def test_an_agent_that_stops_renewing_is_marked_unknown_and_tainted_after_the_grace_period(
    store: MemoryStore, clock: ManualClock, manager: Manager, lifecycle: Controller, settle: Settle
) -> None:
    """TestMonitorNodeHealthUpdateNodeAndPodStatusWithLease: a renewed Lease keeps the node healthy although
    its status is old; once renewals stop, the grace period (from the last one seen) marks it Unknown."""
    agent_node(store, clock)
    agent_node(store, clock, "n2")
    settle(lifecycle)
    for _ in range(3):  # 120 s of renewals: the status is never rewritten, the Lease vouches for it
        advance(store, clock, 40)
        renew(store, clock)
        settle(lifecycle)
    assert statuses(store.get(NODES, "", "n1"))["Ready"] == ("True", "")
    # one timer per node, not one per renewal: the one armed at T0+80 fires at T0+130 and re-arms then
    assert lifecycle.queue.next_due() == T0 + 80 + GRACE
    written = store.get(NODES, "", "n1")["metadata"]["resourceVersion"]
    advance(store, clock, GRACE - 1)
    settle(lifecycle)
    assert store.get(NODES, "", "n1")["metadata"]["resourceVersion"] == written  # nothing written early
    advance(store, clock, 1)
    settle(lifecycle)
    node = store.get(NODES, "", "n1")
    assert statuses(node)["Ready"] == ("Unknown", "NodeStatusUnknown")
    assert keys(node["spec"]["taints"]) == {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}
    assert ("", "n1") not in lifecycle.queue._due  # an unknown node waits for a change, no timer


def test_a_returning_agent_is_untainted_once_it_posts_ready(
    store: MemoryStore, clock: ManualClock, manager: Manager, lifecycle: Controller, settle: Settle
) -> None:
    """The agent comes back (a fresh Lease, Ready True in its re-registration): the taints go."""
    agent_node(store, clock)
    agent_node(store, clock, "n2")
    settle(lifecycle)
    advance(store, clock, GRACE + 1)
    settle(lifecycle)
    assert keys(store.get(NODES, "", "n1")["spec"].get("taints"))
    renew(store, clock)
    settle(lifecycle)
    assert keys(store.get(NODES, "", "n1")["spec"]["taints"]) == {
        (UNREACHABLE, "NoSchedule"),
        (UNREACHABLE, "NoExecute"),
    }
    node = store.get(NODES, "", "n1")
    status = {
        "conditions": [cond(t, "False", clock.now()) for t in TYPES[:3]]
        + [cond("Ready", "True", clock.now())]
    }
    store.update_status(NODES, {**node, "status": status})
    settle(lifecycle)
    assert store.get(NODES, "", "n1")["spec"]["taints"] == []


def test_a_restarted_controller_gives_every_node_a_full_grace_period(
    store: MemoryStore, clock: ManualClock, manager: Manager, settle: Settle
) -> None:
    """Health is this controller's observation: Nodes whose heartbeats are old when it starts (a restart of
    ``gangplane up``) get a grace period from then, time for their agents to come back."""
    agent_node(store, clock)
    clock.advance(600)  # the control plane was down for ten minutes
    controller = build_node_lifecycle(manager, grace=GRACE, startup_grace=STARTUP)
    manager.start_informers()
    settle(controller)
    assert statuses(store.get(NODES, "", "n1"))["Ready"] == ("True", "")
    assert controller.queue.next_due() == T0 + 600 + GRACE


def test_a_node_with_neither_status_nor_lease_is_marked_after_the_startup_grace(
    store: MemoryStore, clock: ManualClock, manager: Manager, lifecycle: Controller, settle: Settle
) -> None:
    """TestMonitorNodeHealthUpdateStatus "Node created recently, with no status": left alone until
    ``nodeStartupGracePeriod`` after its creation, then NodeStatusNeverUpdated."""
    store.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    agent_node(store, clock, "n2")
    settle(lifecycle)
    advance(store, clock, STARTUP - 1)
    settle(lifecycle)
    assert not store.get(NODES, "", "n1").get("status", {}).get("conditions")
    advance(store, clock, 1)
    settle(lifecycle)
    node = store.get(NODES, "", "n1")
    assert statuses(node)["Ready"] == ("Unknown", "NodeStatusNeverUpdated")
    assert keys(node["spec"]["taints"]) == {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}


def test_a_deleted_node_is_forgotten(
    store: MemoryStore, clock: ManualClock, manager: Manager, lifecycle: Controller, settle: Settle
) -> None:
    agent_node(store, clock)
    settle(lifecycle)
    reconciler = lifecycle.reconciler
    assert isinstance(reconciler, NodeLifecycle) and reconciler.health("n1") is not None
    store.delete(NODES, "", "n1")
    settle(lifecycle)
    assert reconciler.health("n1") is None


def test_pod_not_ready_sets_only_a_true_ready_condition_false() -> None:
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": rfc3339(T0)}
    scheduled = {"type": "PodScheduled", "status": "True"}
    the_pod = {"metadata": {"name": "p"}, "status": {"phase": "Running", "conditions": [scheduled, ready]}}
    marked = pod_not_ready(the_pod, T0 + 5)
    assert marked is not None and marked["status"]["phase"] == "Running"
    assert marked["status"]["conditions"] == [
        scheduled,
        {"type": "Ready", "status": "False", "lastTransitionTime": rfc3339(T0 + 5)},
    ]
    assert pod_not_ready(marked, T0 + 6) is None
    assert pod_not_ready({"metadata": {"name": "p"}, "status": {"phase": "Pending"}}, T0) is None


def test_the_pods_of_an_unknown_node_are_marked_not_ready_with_events(
    store: MemoryStore, clock: ManualClock, manager: Manager, lifecycle: Controller, settle: Settle
) -> None:
    """TestMonitorNodeHealthMarkPodsNotReady: when the node goes Unknown its pods' Ready turns False, with a
    NodeNotReady Event on the node and on each pod; pods of other nodes are left alone."""
    agent_node(store, clock)
    ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    for name, node in (("here", "n1"), ("there", "n2")):
        spec = {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}
        created = store.create(
            PODS,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": "default"},
                "spec": spec,
            },
        )
        store.update_status(PODS, {**created, "status": ready})
    settle(lifecycle)
    clock.advance(GRACE)
    settle(lifecycle)
    pod_ready = {
        n: store.get(PODS, "default", n)["status"]["conditions"][0]["status"] for n in ("here", "there")
    }
    assert pod_ready == {"here": "False", "there": "True"}
    events = {(e["involvedObject"]["kind"], e["reason"], e["message"]) for e in store.list(EVENTS).items}
    assert events == {
        ("Node", "NodeNotReady", "Node n1 status is now: NodeNotReady"),
        ("Pod", "NodeNotReady", "Node is not ready"),
    }


def test_an_agent_cut_off_and_back_reposts_ready_and_its_node_is_untainted(
    store: MemoryStore, clock: ManualClock, manager: Manager, lifecycle: Controller, settle: Settle
) -> None:
    """An agent whose heartbeats stopped arriving for a while (a suspended machine) finds its Node marked
    Unknown at its next heartbeat and posts Ready again, as the kubelet does; the taints then go."""
    agent_node(store, clock)
    agent_node(store, clock, "n2")
    settle(lifecycle)
    advance(store, clock, GRACE + 1)
    settle(lifecycle)
    assert statuses(store.get(NODES, "", "n1"))["Ready"] == ("Unknown", "NodeStatusUnknown")
    heartbeat.renew(store, clock, "n1")
    heartbeat.repost_unless_ready(store, clock, "n1")
    settle(lifecycle)
    node = store.get(NODES, "", "n1")
    assert statuses(node)["Ready"] == ("True", "KubeletReady") and node["spec"]["taints"] == []
    written = node["metadata"]["resourceVersion"]
    heartbeat.repost_unless_ready(store, clock, "n1")  # Ready already: nothing to write
    assert store.get(NODES, "", "n1")["metadata"]["resourceVersion"] == written


def test_registration_status_write_survives_a_taint_written_meanwhile(
    store: MemoryStore, clock: ManualClock
) -> None:
    """An agent re-registering a node the controller marked refreshes the spec (dropping the taints), then
    writes the status; the controller may re-taint in between. The status write has no resourceVersion
    precondition (the kubelet PATCHes its status), so the registration does not fail with a Conflict."""
    stale = agent_node(store, clock)
    current = store.get(NODES, "", "n1")
    store.update(NODES, {**current, "spec": {"taints": [{"key": UNREACHABLE, "effect": "NoSchedule"}]}})
    written = heartbeat._post_status(store, stale, {"conditions": [cond("Ready", "True", clock.now())]})
    assert written["spec"]["taints"] and statuses(written)["Ready"] == ("True", "")
