"""The ``gangplane.dev/Waiting`` condition through the TrainJob reconciler (MemoryStore + ManualClock), and the
watches that feed it."""

from __future__ import annotations

from typing import Any

from harness import Cluster, torch_runtime

from builders import RuntimeBuilder, TrainJobBuilder
from gangplane.client.controller import Controller, Manager
from gangplane.client.informer import Handler
from gangplane.clock import ManualClock
from gangplane.controllers.manager import build_trainjob_controller, watch_pods
from gangplane.controllers.pending import WAITING_CONDITION
from gangplane.store import catalog
from gangplane.store.base import EventType, ListOptions
from gangplane.store.memory import MemoryStore

GANG_MESSAGE = "gang needs 2 × cpu=4; largest placement found 0 (2 nodes have cpu=2 free)"
QUEUED = {"kueue.x-k8s.io/queue-name": "team-a"}
QUOTA_MESSAGE = "couldn't assign flavors to pod set node: insufficient unused quota for cpu in flavor default"


def _start(cluster: Cluster, job: TrainJobBuilder, runtime: dict[str, Any] | None = None) -> None:
    cluster.create(catalog.CLUSTER_TRAINING_RUNTIMES, runtime or torch_runtime())
    cluster.create(catalog.TRAINJOBS, job.dict())
    cluster.settle()


def _trainjob(cluster: Cluster) -> dict[str, Any]:
    return cluster.get(catalog.TRAINJOBS, "mnist")


def _waiting(cluster: Cluster) -> dict[str, Any] | None:
    found = [c for c in _trainjob(cluster)["status"].get("conditions", []) if c["type"] == WAITING_CONDITION]
    return found[0] if found else None


def _events(cluster: Cluster) -> list[tuple[str, str, str]]:
    items = cluster.items(catalog.EVENTS)
    about = [
        e
        for e in items
        if e["involvedObject"]["kind"] == "TrainJob" and e["involvedObject"]["name"] == "mnist"
    ]
    return [
        (e["type"], e["reason"], e["message"]) for e in sorted(about, key=lambda e: e["metadata"]["name"])
    ]


def _unschedulable(cluster: Cluster, message: str) -> None:
    for pod in cluster.items(catalog.PODS):
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
        cluster.store.update_status(
            catalog.PODS, {**pod, "status": {"phase": "Pending", "conditions": [condition]}}
        )


def _bind_and_run(cluster: Cluster, phase: str = "Running") -> None:
    for pod in cluster.items(catalog.PODS):
        bound = cluster.store.update(catalog.PODS, {**pod, "spec": {**pod["spec"], "nodeName": "node-1"}})
        status = {"phase": phase, "conditions": [{"type": "PodScheduled", "status": "True"}]}
        cluster.store.update_status(catalog.PODS, {**bound, "status": status})


def test_unschedulable_pods_show_on_the_trainjob_until_they_run() -> None:
    cluster = Cluster()
    _start(cluster, TrainJobBuilder("mnist").num_nodes(2))
    assert _waiting(cluster) is not None
    assert _waiting(cluster)["reason"] == "AwaitingScheduler"
    cluster.clock.advance(1)  # events are named after the time: one per instant
    _unschedulable(cluster, GANG_MESSAGE)
    cluster.settle()
    waiting = _waiting(cluster)
    assert waiting is not None
    assert (waiting["status"], waiting["reason"]) == ("True", "PodsUnschedulable")
    assert waiting["message"] == f"2 of 2 pods unschedulable: {GANG_MESSAGE}"
    assert ("Warning", "PodsUnschedulable", waiting["message"]) in _events(cluster)
    cluster.clock.advance(1)
    _bind_and_run(cluster)
    cluster.settle()
    assert (
        "conditions" not in _trainjob(cluster)["status"]
    )  # the SDK maps a job without conditions to Running
    assert _events(cluster)[-1] == ("Normal", "AllPodsRunning", "all 2 pods running")


def test_bound_pods_wait_for_containers_then_completion_drops_nothing_else() -> None:
    cluster = Cluster()
    _start(cluster, TrainJobBuilder("mnist").num_nodes(2))
    _bind_and_run(cluster, phase="Pending")
    cluster.settle()
    waiting = _waiting(cluster)
    assert waiting is not None
    assert (waiting["reason"], waiting["message"]) == (
        "StartingContainers",
        "2/2 pods bound, 0 running; waiting for containers to start",
    )
    cluster.finish_pods("Succeeded")
    cluster.settle()
    conditions = _trainjob(cluster)["status"]["conditions"]
    assert [(c["type"], c["status"]) for c in conditions] == [("Complete", "True")]


def test_transition_time_is_kept_and_unchanged_status_is_not_rewritten() -> None:
    cluster = Cluster()
    _start(cluster, TrainJobBuilder("mnist").num_nodes(2))
    since = _waiting(cluster)["lastTransitionTime"]
    cluster.clock.advance(120)
    _unschedulable(cluster, GANG_MESSAGE)
    cluster.settle()
    assert _waiting(cluster)["lastTransitionTime"] == since
    version = _trainjob(cluster)["metadata"]["resourceVersion"]
    events = len(_events(cluster))
    cluster.clock.advance(5)
    cluster.trainjobs.reconcile(("default", "mnist"))
    assert _trainjob(cluster)["metadata"]["resourceVersion"] == version
    assert len(_events(cluster)) == events


class _Positions:
    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def position(self, namespace: str, workload: str) -> int | None:
        self.asked.append((namespace, workload))
        return 3


def _workload_for(trainjob: dict[str, Any], message: str) -> dict[str, Any]:
    meta = trainjob["metadata"]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "trainjob-mnist-00000",
            "namespace": "default",
            "labels": {"kueue.x-k8s.io/job-uid": meta["uid"]},
            "ownerReferences": [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                 "name": "mnist", "uid": meta["uid"], "controller": True}],
        },
        "spec": {"queueName": "team-a", "podSets": [{"name": "node", "count": 2, "template": {"spec": {
            "containers": [{"name": "node", "image": "busybox"}]}}}]},
        "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                                   "message": message, "lastTransitionTime": "2025-01-01T00:00:00Z"}]},
    }  # fmt: skip


def test_kueue_suspended_trainjob_shows_the_workload_message() -> None:
    cluster = Cluster()
    _start(cluster, TrainJobBuilder("mnist").num_nodes(2).suspend().set("metadata.labels", QUEUED))
    waiting = _waiting(cluster)
    assert waiting is not None
    assert (waiting["reason"], waiting["message"]) == (
        "QueuedByKueue",
        'waiting for Kueue to create the Workload for LocalQueue "team-a"',
    )
    types = [c["type"] for c in _trainjob(cluster)["status"]["conditions"]]
    assert types == [WAITING_CONDITION, "Suspended"]  # the State printer column still shows Suspended
    workload = _workload_for(_trainjob(cluster), QUOTA_MESSAGE)
    created = cluster.create(catalog.WORKLOADS, workload)
    cluster.store.update_status(catalog.WORKLOADS, {**created, "status": workload["status"]})
    cluster.clock.advance(1)
    positions = _Positions()
    cluster.trainjobs.positions = positions
    cluster.settle()
    assert _waiting(cluster)["message"] == (
        f'Workload trainjob-mnist-00000 queued in LocalQueue "team-a" (3 workloads ahead): {QUOTA_MESSAGE}'
    )
    assert positions.asked[-1] == ("default", "trainjob-mnist-00000")
    queued = (
        f'Workload trainjob-mnist-00000 queued in LocalQueue "team-a" (3 workloads ahead): {QUOTA_MESSAGE}'
    )
    expected = [
        ("Normal", "QueuedByKueue", 'waiting for Kueue to create the Workload for LocalQueue "team-a"'),
        ("Normal", "QueuedByKueue", queued),
    ]
    assert _events(cluster) == expected  # same reason, new message: a second event


def test_workload_of_another_trainjob_is_not_read() -> None:
    cluster = Cluster()
    _start(cluster, TrainJobBuilder("mnist").suspend().set("metadata.labels", QUEUED))
    stranger = _workload_for(_trainjob(cluster), QUOTA_MESSAGE)
    stranger["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    cluster.create(catalog.WORKLOADS, stranger)
    cluster.settle()
    assert "waiting for Kueue to create" in _waiting(cluster)["message"]


def test_user_suspension_is_named() -> None:
    cluster = Cluster()
    _start(cluster, TrainJobBuilder("mnist").suspend())
    waiting = _waiting(cluster)
    assert waiting is not None and waiting["reason"] == "Suspended"


def test_volcano_pod_group_condition_is_shown() -> None:
    cluster = Cluster()
    runtime = (
        RuntimeBuilder("torch-distributed").ml_policy(numNodes=1, torch={}).trainer_job().volcano().dict()
    )
    _start(cluster, TrainJobBuilder("mnist").num_nodes(2), runtime)
    group = cluster.get(catalog.VOLCANO_PODGROUPS, "mnist")
    message = "2/2 tasks in gang unschedulable: 0/3 nodes are unavailable: 3 Insufficient cpu"
    condition = {
        "type": "Unschedulable",
        "status": "True",
        "reason": "NotEnoughResources",
        "message": message,
    }
    status = {"phase": "Pending", "conditions": [condition]}
    cluster.store.update(catalog.VOLCANO_PODGROUPS, {**group, "status": status})
    cluster.clock.advance(1)
    cluster.settle()
    waiting = _waiting(cluster)
    assert waiting is not None
    assert (waiting["reason"], waiting["message"]) == (
        "GangUnschedulable",
        f"volcano PodGroup mnist: {message}",
    )
    assert _events(cluster)[-1] == ("Warning", "GangUnschedulable", waiting["message"])


def test_admitted_store_accepts_the_condition() -> None:
    cluster = Cluster(admitted=True)
    _start(cluster, TrainJobBuilder("mnist").num_nodes(2))
    _unschedulable(cluster, GANG_MESSAGE)
    cluster.settle()
    assert _waiting(cluster)["reason"] == "PodsUnschedulable"


# ---------------------------------------------------------------- watches


class _Informer:
    def __init__(self) -> None:
        self.handlers: list[Handler] = []

    def add_handler(self, handler: Handler) -> None:
        self.handlers.append(handler)


class _Idle:
    name = "idle"

    def reconcile(self, key: Any) -> Any:
        raise AssertionError("not called")


def _pod(**status: Any) -> dict[str, Any]:
    meta = {
        "name": "mnist-node-0-0-x",
        "namespace": "ns",
        "labels": {"jobset.sigs.k8s.io/jobset-name": "mnist"},
    }
    return {"metadata": meta, "spec": {}, "status": status}


def _keys(controller: Controller) -> list[Any]:
    keys = []
    while (key := controller.queue.get(0)) is not None:
        keys.append(key)
        controller.queue.done(key)
    return keys


def test_pod_events_requeue_the_trainjob_only_when_scheduling_changes() -> None:
    controller = Controller(_Idle(), ManualClock())
    informer = _Informer()
    watch_pods(controller, informer)  # type: ignore[arg-type]
    [handler] = informer.handlers
    pending = _pod(phase="Pending")
    handler(EventType.ADDED, pending, None)
    assert _keys(controller) == [("ns", "mnist")]
    ready = _pod(phase="Pending", conditions=[{"type": "Ready", "status": "False"}])
    handler(EventType.MODIFIED, ready, pending)
    assert _keys(controller) == []
    said = _pod(phase="Pending", conditions=[{"type": "PodScheduled", "status": "False", "message": "full"}])
    handler(EventType.MODIFIED, said, ready)
    assert _keys(controller) == [("ns", "mnist")]
    handler(EventType.MODIFIED, _pod(phase="Running"), said)
    handler(EventType.DELETED, said, said)
    assert _keys(controller) == [("ns", "mnist")]  # de-duplicated by the queue
    handler(EventType.ADDED, {"metadata": {"name": "bare", "namespace": "ns"}}, None)
    assert _keys(controller) == []


def test_trainjob_controller_watches_pods_workloads_and_kai_groups_when_served() -> None:
    manager = Manager(MemoryStore(clock=ManualClock()), ManualClock())
    build_trainjob_controller(manager)
    watched = set(manager._informers)  # no public listing of the shared informers
    assert (catalog.PODS, ListOptions(label_selector="jobset.sigs.k8s.io/jobset-name")) in watched
    assert {(catalog.WORKLOADS, ListOptions()), (catalog.KAI_PODGROUPS, ListOptions())} <= watched
    bare = Manager(MemoryStore(clock=ManualClock()), ManualClock())
    build_trainjob_controller(bare, served=lambda rt: rt.group not in ("kueue.x-k8s.io", "scheduling.run.ai"))
    kinds = {rt for rt, _ in bare._informers}
    assert catalog.WORKLOADS not in kinds and catalog.KAI_PODGROUPS not in kinds
