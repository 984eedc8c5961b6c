"""The pod garbage collector: orphaned pods, and terminating pods that are unscheduled or whose node agent is
gone, are failed and force-deleted (``pkg/controller/podgc/gc_controller.go``); others are left."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from job_passes import settle_plan

from gangplane.client.controller import Controller, Manager
from gangplane.clock import ManualClock, rfc3339
from gangplane.controllers.podgc import ORPHANED_CONDITION, agent_gone_in, build_pod_gc, failed_status
from gangplane.errors import NotFound
from gangplane.store.base import ListOptions
from gangplane.store.catalog import LEASES, NODES, PODS
from gangplane.store.memory import MemoryStore

T0 = 1_767_225_600.0  # as the fixtures' clock starts (conftest.py)


def lease(node: str, renewed: float) -> dict[str, Any]:
    spec = {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": rfc3339(renewed)}
    return {"metadata": {"name": node, "namespace": "kube-node-lease"}, "spec": spec}


def running_pod(name: str, node: str = "n1", *, hold: bool = False, phase: str = "Running") -> dict[str, Any]:
    """A pod bound to ``node``; ``hold`` adds a finalizer, so what PodGC wrote stays visible after its delete."""
    spec = {"nodeName": node, "containers": [{"name": "main", "image": "busybox"}]}
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if hold:
        meta["finalizers"] = ["test.gangplane.io/hold"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def put(store: MemoryStore, pod: dict[str, Any]) -> dict[str, Any]:
    """Create ``pod`` and write its status (a create does not store the status subresource)."""
    created = store.create(PODS, pod)
    return store.update_status(PODS, {**created, "status": pod["status"]})


def node(name: str = "n1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def exists(store: MemoryStore, name: str) -> bool:
    try:
        store.get(PODS, "default", name)
    except NotFound:
        return False
    return True


@pytest.fixture
def gc(store: MemoryStore, manager: Manager) -> Controller:
    controller = build_pod_gc(manager)
    store.create(NODES, node("n1"))
    manager.start_informers()
    nodes = manager.informer(NODES)
    assert wait_for(lambda: nodes.get("", "n1") is not None)
    return controller


def wait_for(check: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + 10
    while not check() and time.monotonic() < deadline:
        time.sleep(0.01)
    return check()


def lease_seen(manager: Manager, present: bool) -> None:
    """Wait until the collector's Lease informer agrees with the store (it reads the Lease from there)."""
    leases = manager.informer(LEASES, ListOptions(namespace="kube-node-lease"))
    deadline = time.monotonic() + 10
    while (leases.get("kube-node-lease", "n1") is not None) != present and time.monotonic() < deadline:
        time.sleep(0.01)


def drain(controller: Controller) -> None:
    while controller.process_one(timeout=0.5):
        pass


def test_the_agent_gone_in_table(clock: ManualClock) -> None:
    pod = running_pod("p")
    assert agent_gone_in(pod, lease("n1", T0), T0 + 10) == 30
    assert agent_gone_in(pod, lease("n1", T0), T0 + 50) == 0
    assert agent_gone_in(pod, None, T0) == 0
    assert agent_gone_in(running_pod("p", node=""), lease("n1", T0), T0) == 0


def test_a_terminating_pod_of_a_live_agent_is_left_until_its_lease_expires(
    store: MemoryStore, clock: ManualClock, manager: Manager, gc: Controller
) -> None:
    store.create(LEASES, lease("n1", T0))
    lease_seen(manager, True)
    store.create(PODS, running_pod("a"))
    store.delete(PODS, "default", "a")  # graceful: the Lease says an agent serves n1
    drain(gc)
    assert exists(store, "a")
    clock.advance(41)  # the agent never renewed: the node lifecycle's grace is over
    gc.enqueue(("default", "a"))
    drain(gc)
    assert not exists(store, "a")


def test_a_terminating_pod_whose_node_lease_is_gone_is_deleted(
    store: MemoryStore, manager: Manager, gc: Controller
) -> None:
    store.create(LEASES, lease("n1", T0))
    store.create(PODS, running_pod("a"))
    store.create(PODS, running_pod("b"))
    store.delete(PODS, "default", "a")
    store.delete(LEASES, "kube-node-lease", "n1")
    lease_seen(manager, False)
    gc.enqueue(("default", "a"))
    drain(gc)
    assert not exists(store, "a")
    assert exists(store, "b")  # not terminating: never the collector's


def settle(store: MemoryStore, manager: Manager, controller: Controller) -> None:
    """Wait until the shared pod and Node informers hold what the store holds, then drain ``controller``:
    on a loaded machine an informer may lag behind a drain's idle timeout."""

    def versions(items: list[dict[str, Any]]) -> set[tuple[str, str]]:
        return {(o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in items}

    def caught_up() -> bool:
        return all(
            versions(manager.informer(rt).list()) == versions(store.list(rt).items) for rt in (PODS, NODES)
        )

    assert wait_for(caught_up)
    drain(controller)


def conditions(pod: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    found = pod["status"].get("conditions") or []
    return {c["type"]: (c["status"], c.get("reason", ""), c.get("message", "")) for c in found}


def test_the_failed_status_table() -> None:
    """``markFailedAndDeletePodWithCondition``: non-terminal pods become Failed (with the condition if one is
    given); Succeeded and Failed pods get no status write."""
    failed = failed_status(running_pod("p"), ORPHANED_CONDITION, T0)
    assert failed is not None and failed["status"]["phase"] == "Failed"
    assert conditions(failed) == {
        "DisruptionTarget": ("True", "DeletionByPodGC", "PodGC: node no longer exists")
    }
    assert failed["status"]["conditions"][0]["lastTransitionTime"] == rfc3339(T0)
    plain = failed_status(running_pod("p", phase="Pending"), None, T0)
    assert plain is not None and plain["status"] == {"phase": "Failed"}
    assert failed_status(running_pod("p", phase="Succeeded"), ORPHANED_CONDITION, T0) is None
    assert failed_status(running_pod("p", phase="Failed"), ORPHANED_CONDITION, T0) is None


def test_a_pod_of_a_deleted_node_is_failed_with_disruption_target_then_deleted_after_the_quarantine(
    store: MemoryStore, clock: ManualClock, manager: Manager, gc: Controller
) -> None:
    put(store, running_pod("a", hold=True))
    put(store, running_pod("elsewhere", node="n2"))
    store.create(NODES, node("n2"))
    settle(store, manager, gc)
    store.delete(NODES, "", "n1")  # the Node's deletion queues its pods
    nodes = manager.informer(NODES)
    assert wait_for(lambda: nodes.get("", "n1") is None)
    settle(store, manager, gc)
    assert store.get(PODS, "default", "a")["status"] == {"phase": "Running"}  # quarantined, not yet gone
    clock.advance(41)
    settle(store, manager, gc)  # the quarantine's requeue, on the injected clock
    pod = store.get(PODS, "default", "a")
    assert pod["status"]["phase"] == "Failed"
    assert conditions(pod)["DisruptionTarget"] == ("True", "DeletionByPodGC", "PodGC: node no longer exists")
    assert pod["metadata"]["deletionTimestamp"] and pod["metadata"]["deletionGracePeriodSeconds"] == 0
    assert store.get(PODS, "default", "elsewhere")["status"] == {"phase": "Running"}


def test_an_already_failed_orphan_is_deleted_without_a_status_write(
    store: MemoryStore, clock: ManualClock, manager: Manager, gc: Controller
) -> None:
    before = put(store, running_pod("a", node="gone", hold=True, phase="Failed"))
    settle(store, manager, gc)
    clock.advance(41)
    settle(store, manager, gc)
    pod = store.get(PODS, "default", "a")
    assert pod["metadata"]["deletionTimestamp"] and pod["status"] == before["status"]
    assert "conditions" not in pod["status"]


def test_a_node_back_within_the_quarantine_saves_its_pods(
    store: MemoryStore, clock: ManualClock, manager: Manager, gc: Controller
) -> None:
    put(store, running_pod("a", node="late"))
    settle(store, manager, gc)
    store.create(NODES, node("late"))
    assert wait_for(lambda: manager.informer(NODES).get("", "late") is not None)
    clock.advance(41)
    settle(store, manager, gc)
    assert exists(store, "a")


def test_each_deletion_of_a_node_gets_a_quarantine_of_its_own(
    store: MemoryStore, clock: ManualClock, manager: Manager, gc: Controller
) -> None:
    put(store, running_pod("early", node="late"))
    settle(store, manager, gc)  # "late" is missing: its quarantine starts
    store.delete(PODS, "default", "early")  # no Lease behind "late": gone at once, never reconciled again
    store.create(NODES, node("late"))
    assert wait_for(lambda: manager.informer(NODES).get("", "late") is not None)
    clock.advance(100)
    put(store, running_pod("a", node="late"))
    store.delete(NODES, "", "late")
    assert wait_for(lambda: manager.informer(NODES).get("", "late") is None)
    settle(store, manager, gc)
    assert exists(store, "a")  # the quarantine counts from this deletion, not from the first absence
    clock.advance(41)
    settle(store, manager, gc)
    assert not exists(store, "a")


def test_an_unscheduled_terminating_pod_is_failed_without_a_condition_and_deleted_at_once(
    store: MemoryStore, manager: Manager, gc: Controller
) -> None:
    put(store, running_pod("a", node="", hold=True, phase="Pending"))
    store.delete(PODS, "default", "a")  # unbound: grace 0, but the finalizer keeps it Terminating
    settle(store, manager, gc)
    pod = store.get(PODS, "default", "a")
    assert pod["status"] == {"phase": "Failed"}  # gcUnscheduledTerminating: no DisruptionTarget
    store.patch(PODS, "default", "a", {"metadata": {"finalizers": None}}, "merge")
    assert not exists(store, "a")


def test_a_terminating_pod_of_a_gone_agent_is_failed_without_a_condition(
    store: MemoryStore, clock: ManualClock, manager: Manager, gc: Controller
) -> None:
    store.create(LEASES, lease("n1", T0))
    lease_seen(manager, True)
    put(store, running_pod("a", hold=True))
    store.delete(PODS, "default", "a")
    clock.advance(41)
    settle(store, manager, gc)
    pod = store.get(PODS, "default", "a")
    assert pod["status"] == {"phase": "Failed"} and pod["metadata"]["deletionGracePeriodSeconds"] == 0


@pytest.mark.parametrize(
    ("action", "failed", "job_failed"), [("Ignore", 0, None), ("Count", 1, "BackoffLimitExceeded")]
)
def test_a_job_pod_failure_policy_matches_what_podgc_writes(
    action: str, failed: int, job_failed: str | None
) -> None:
    """The Job controller (``job_policy.plan``) reads the orphan's status as PodGC leaves it: ``Ignore`` on
    ``DisruptionTarget`` replaces the pod without counting it against ``backoffLimit: 0``."""
    rules = [{"action": action, "onPodConditions": [{"type": "DisruptionTarget"}]}]
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default", "uid": "u"},
           "spec": {"completions": 1, "parallelism": 1, "backoffLimit": 0, "podFailurePolicy": {"rules": rules},
                    "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}],
                                          "restartPolicy": "Never"}}}}  # fmt: skip
    pod = running_pod("j-abcde")
    pod["metadata"].update(
        uid="p",
        labels={"batch.kubernetes.io/controller-uid": "u"},
        creationTimestamp=rfc3339(T0),
        finalizers=["batch.kubernetes.io/job-tracking"],  # as the Job controller creates it
    )
    orphan = failed_status(pod, ORPHANED_CONDITION, T0 + 5)
    assert orphan is not None
    decided = settle_plan(job, [orphan], T0 + 60)
    reasons = {c["type"]: c.get("reason") for c in decided.status.get("conditions") or []}
    assert decided.status.get("failed", 0) == failed and reasons.get("Failed") == job_failed
    assert len(decided.create_pods) == (1 if action == "Ignore" else 0)
