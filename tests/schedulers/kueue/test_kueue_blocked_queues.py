"""Workloads a queue blocks, through the embedded Kueue's shell on a memory store (upstream kueue
``pkg/controller/core/workload_controller.go`` ``getQueueBlocker`` and ``pkg/cache/queue`` manager
``DeleteLocalQueue``; the Events after ``pkg/scheduler/scheduler.go`` ``requeueAndUpdate``):

- a deleted LocalQueue's pending workloads leave the ClusterQueue's queue and say ``Misconfigured``,
  "LocalQueue NAME doesn't exist"; admitted ones keep running; created again, it queues them again;
- a missing ClusterQueue says ``Misconfigured``, "ClusterQueue NAME doesn't exist", an inactive one
  ``Suspended``, "ClusterQueue NAME is inactive";
- only what the scheduler decides is announced with a Warning ``Pending`` Event: none of the above is, nor
  the reservation an eviction drops.
"""

from __future__ import annotations

from typing import Any

from kueue_shell import KUEUE, setup, trainjob, workload_of

from gangplane.schedulers.kueue.controller import CYCLE_KEY
from gangplane.store import MERGE_PATCH, catalog
from gangplane.store.memory import MemoryStore


def _submit(store: MemoryStore, kueue: Any, name: str, priority_class: str | None = None) -> None:
    store.create(catalog.TRAINJOBS, trainjob(name, priority_class))
    kueue.reconciler.reconcile(("ml", name))
    kueue.reconciler.reconcile(CYCLE_KEY)


def _reserved(store: MemoryStore, job: str) -> tuple[str, str, str]:
    found = next(c for c in workload_of(store, job)["status"]["conditions"] if c["type"] == "QuotaReserved")
    return found["status"], found["reason"], found["message"]


def _pending_events(store: MemoryStore, job: str) -> list[str]:
    name = workload_of(store, job)["metadata"]["name"]
    return [
        e["message"]
        for e in store.list(catalog.EVENTS).items
        if e["involvedObject"]["name"] == name and (e["type"], e["reason"]) == ("Warning", "Pending")
    ]


def _pending_count(store: MemoryStore, kind: Any, namespace: str, name: str) -> int:
    return int(store.get(kind, namespace, name)["status"]["pendingWorkloads"])


def _local_queue(cluster_queue: str = "cq") -> dict[str, Any]:
    return {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": "team", "namespace": "ml"},
            "spec": {"clusterQueue": cluster_queue}}  # fmt: skip


def test_a_deleted_local_queues_pending_workloads_leave_the_cluster_queue() -> None:
    store, _, kueue, _ = setup()
    for name in ("running", "waiting"):
        _submit(store, kueue, name)
    assert _reserved(store, "running")[0] == "True"
    assert _reserved(store, "waiting")[:2] == ("False", "WaitingForQuota")
    assert _pending_count(store, catalog.CLUSTER_QUEUES, "", "cq") == 1

    store.delete(catalog.LOCAL_QUEUES, "ml", "team")
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert _reserved(store, "waiting") == ("False", "Misconfigured", "LocalQueue team doesn't exist")
    assert _reserved(store, "running")[0] == "True"  # admitted: keeps its quota and runs
    assert _pending_count(store, catalog.CLUSTER_QUEUES, "", "cq") == 0
    assert kueue.reconciler.pending_in_cluster_queue("cq") == []
    assert len(_pending_events(store, "waiting")) == 1  # the scheduler's WaitingForQuota only

    store.create(catalog.LOCAL_QUEUES, _local_queue())
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert _reserved(store, "waiting")[:2] == ("False", "WaitingForQuota")
    assert [p.name for p in kueue.reconciler.pending_in_cluster_queue("cq") or []] == [
        workload_of(store, "waiting")["metadata"]["name"]
    ]


def test_a_deleted_local_queues_workload_is_not_admitted_when_quota_frees() -> None:
    store, clock, kueue, _ = setup()
    for name in ("running", "waiting"):
        _submit(store, kueue, name)
    store.delete(catalog.LOCAL_QUEUES, "ml", "team")
    kueue.reconciler.reconcile(CYCLE_KEY)
    store.delete(catalog.TRAINJOBS, "ml", "running")
    store.delete(catalog.WORKLOADS, "ml", workload_of(store, "running")["metadata"]["name"])
    clock.advance(2)  # past the requeue batching delay
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert _reserved(store, "waiting") == ("False", "Misconfigured", "LocalQueue team doesn't exist")


def test_a_missing_cluster_queue_is_said_without_a_pending_event() -> None:
    store, _, kueue, _ = setup()
    store.delete(catalog.LOCAL_QUEUES, "ml", "team")
    store.create(catalog.LOCAL_QUEUES, _local_queue("nope"))
    _submit(store, kueue, "orphan")
    assert _reserved(store, "orphan") == ("False", "Misconfigured", "ClusterQueue nope doesn't exist")
    assert _pending_events(store, "orphan") == []


def test_an_inactive_cluster_queue_is_said_without_a_pending_event() -> None:
    store, _, kueue, _ = setup()
    store.patch(catalog.CLUSTER_QUEUES, "", "cq", {"spec": {"stopPolicy": "Hold"}}, MERGE_PATCH)
    _submit(store, kueue, "held")
    assert _reserved(store, "held") == ("False", "Suspended", "ClusterQueue cq is inactive")
    assert _pending_events(store, "held") == []


def test_an_evictions_dropped_reservation_is_not_announced() -> None:
    """Only the scheduler's reasons are: the preempted workload's own ``QuotaReserved=False`` (the job
    reconciler's, with the eviction's message) is not, the scheduler's verdict on it afterwards is."""
    store, clock, kueue, _ = setup()
    _submit(store, kueue, "first")
    clock.advance(1)
    _submit(store, kueue, "urgent", priority_class="high")  # preempts first, which is then pending again
    evicted = next(c for c in workload_of(store, "first")["status"]["conditions"] if c["type"] == "Evicted")
    assert evicted["message"].startswith("Preempted to accommodate")
    assert evicted["message"] not in _pending_events(store, "first")
    clock.advance(2)
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert _reserved(store, "first")[1] == "WaitingForQuota"
    assert _pending_events(store, "first") == [_reserved(store, "first")[2]]
