"""Workload lifecycle as upstream's workload and job reconcilers: deleting a TrainJob frees its quota and its
queue position at once, the ``resource-in-use`` finalizer goes once the Workload is deleted, finished or
orphaned, and a restarted controller repairs what a crash left behind."""

from __future__ import annotations

from typing import Any

from kueue_shell import conditions, setup, trainjob, workload_of

from gangplane.api.scheduling import kueue as kq
from gangplane.clock import parse_rfc3339, rfc3339
from gangplane.errors import NotFound
from gangplane.schedulers.kueue.controller import CYCLE_KEY, build_kueue_controller
from gangplane.store import MERGE_PATCH, catalog
from gangplane.store.memory import MemoryStore

# The ClusterQueue holds 4 GPUs; each TrainJob asks for 2 pods x 2 GPUs: one runs, the rest queue.


def _submit(store: MemoryStore, kueue: Any, clock: Any, *names: str) -> None:
    for name in names:
        store.create(catalog.TRAINJOBS, trainjob(name))
        kueue.reconciler.reconcile(("ml", name))
        clock.advance(2)  # distinct creation times: a fixed queue order
    kueue.reconciler.reconcile(CYCLE_KEY)


def _suspended(store: MemoryStore, name: str) -> bool:
    return bool(store.get(catalog.TRAINJOBS, "ml", name)["spec"]["suspend"])


def _workloads(store: MemoryStore) -> list[str]:
    return sorted(w["metadata"]["ownerReferences"][0]["name"] for w in store.list(catalog.WORKLOADS).items)


def test_deleting_a_pending_trainjob_frees_its_queue_position_at_once() -> None:
    store, clock, kueue, _ = setup()
    _submit(store, kueue, clock, "running", "second", "third")
    third = workload_of(store, "third")["metadata"]["name"]
    assert kueue.reconciler.position("ml", third) == 1
    moved: list[tuple[str, str]] = []
    kueue.reconciler.on_position_changed = moved.append
    store.delete(catalog.TRAINJOBS, "ml", "second")
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert moved == [("ml", "third")]  # the TrainJob controller is told: its "1 workload ahead" is stale
    assert _workloads(store) == ["running", "third"]  # not left Terminating behind the finalizer
    assert kueue.reconciler.position("ml", third) == 0
    assert [p.name for p in kueue.reconciler.pending_in_cluster_queue("cq") or []] == [third]


def test_deleting_an_admitted_trainjob_frees_its_quota_at_once() -> None:
    store, clock, kueue, _ = setup()
    _submit(store, kueue, clock, "running", "waiting")
    assert _suspended(store, "waiting")
    store.delete(catalog.TRAINJOBS, "ml", "running")
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert _workloads(store) == ["waiting"]
    clock.advance(1)  # Kueue's batched requeue of the inadmissible workloads
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert not _suspended(store, "waiting")
    assert conditions(workload_of(store, "waiting"))["Admitted"][0] == "True"


def test_a_deleted_workload_of_a_live_trainjob_stops_the_job_and_is_recreated() -> None:
    """Upstream's job reconciler step 1.1: the job is stopped, the finalizer removed; a new Workload follows."""
    store, clock, kueue, _ = setup()
    _submit(store, kueue, clock, "job")
    name = workload_of(store, "job")["metadata"]["name"]
    store.delete(catalog.WORKLOADS, "ml", name)
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert _suspended(store, "job")
    assert _workloads(store) == []
    kueue.reconciler.reconcile(("ml", "job"))
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert conditions(workload_of(store, "job"))["Admitted"][0] == "True"
    assert not _suspended(store, "job")


def test_finished_workload_loses_its_finalizer() -> None:
    store, clock, kueue, _ = setup()
    _submit(store, kueue, clock, "job")
    job = store.get(catalog.TRAINJOBS, "ml", "job")
    job["status"] = {
        "conditions": [{"type": "Complete", "status": "True", "reason": "Completed", "message": "ok"}]
    }
    store.update_status(catalog.TRAINJOBS, job)
    kueue.reconciler.reconcile(CYCLE_KEY)  # writes Finished
    kueue.reconciler.reconcile(CYCLE_KEY)  # the pass that Workload update wakes removes the finalizer
    done = workload_of(store, "job")
    assert conditions(done)["Finished"] == ("True", "Succeeded")
    assert kq.RESOURCE_IN_USE_FINALIZER not in (done["metadata"].get("finalizers") or [])


def test_orphaned_workload_is_finished_owner_not_found_and_released() -> None:
    store, clock, kueue, _ = setup()
    _submit(store, kueue, clock, "job", "next")
    orphan = workload_of(store, "job")
    orphan["metadata"]["ownerReferences"][0]["uid"] = "a-trainjob-that-is-gone"
    store.update(catalog.WORKLOADS, orphan)
    kueue.reconciler.reconcile(CYCLE_KEY)
    found = workload_of(store, "job")
    assert conditions(found)["Finished"] == ("True", "OwnerNotFound")
    assert next(c for c in found["status"]["conditions"] if c["type"] == "Finished")["message"] == (
        "The workload's owner no longer exists"
    )
    assert not found["metadata"].get("finalizers")
    clock.advance(1)
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert not _suspended(store, "next")


def test_restart_repairs_a_terminating_workload_left_by_a_crash() -> None:
    """The TrainJob is deleted while no Kueue runs: its Workload stays Terminating, holding quota on paper.
    A new controller's first pass releases it, removes the finalizer, and admits the next job."""
    store, clock, kueue, _ = setup()
    _submit(store, kueue, clock, "running", "waiting")
    store.delete(catalog.TRAINJOBS, "ml", "running")  # the old controller never sees it
    [terminating] = [w for w in store.list(catalog.WORKLOADS).items if w["metadata"].get("deletionTimestamp")]
    restarted = build_kueue_controller(store, clock)
    restarted.reconciler.reconcile(CYCLE_KEY)
    try:
        store.get(catalog.WORKLOADS, "ml", terminating["metadata"]["name"])
        raise AssertionError("the Terminating Workload is still there")
    except NotFound:
        pass
    clock.advance(1)
    restarted.reconciler.reconcile(CYCLE_KEY)
    assert not _suspended(store, "waiting")


def test_restart_starts_an_admitted_job_left_suspended() -> None:
    """A crash between writing the admission and unsuspending the job: the restarted controller starts it."""
    store, clock, kueue, _ = setup()
    _submit(store, kueue, clock, "job")
    job = store.get(catalog.TRAINJOBS, "ml", "job")
    job["spec"]["suspend"] = True
    store.update(catalog.TRAINJOBS, job)
    restarted = build_kueue_controller(store, clock)
    restarted.reconciler.reconcile(CYCLE_KEY)
    restarted.reconciler.reconcile(("ml", "job"))
    assert not _suspended(store, "job")


def test_a_restart_keeps_the_backoff_and_the_eviction_counts_the_status_remembers() -> None:
    """``status.requeueState`` and ``status.schedulingStats`` come back after a restart: a backoff still running
    is waited out, the requeue count and eviction counts are not reset (and not erased by the next write)."""
    store, clock, _, _ = setup()
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
    now = clock.now()
    evicted_at = "2027-01-15T08:00:00Z"
    requeue_at = rfc3339(now + 100)
    store.create(catalog.WORKLOADS, {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "w", "namespace": "ml"},
        "spec": {"queueName": "team", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
            "containers": [container]}}}]}})  # fmt: skip
    evicted = {"type": "Evicted", "status": "True", "reason": "PodsReadyTimeout",
               "message": "Exceeded the PodsReady timeout", "lastTransitionTime": evicted_at}  # fmt: skip
    stats = {"evictions": [{"reason": "PodsReadyTimeout", "underlyingCause": "", "count": 2}]}
    status = {"requeueState": {"count": 2, "requeueAt": requeue_at}, "schedulingStats": stats,
              "conditions": [evicted]}  # fmt: skip
    store.patch(catalog.WORKLOADS, "ml", "w", {"status": status}, MERGE_PATCH, subresource="status")
    kueue = build_kueue_controller(store, clock, None)  # the restarted controller
    clock.advance(2)
    kueue.reconciler.reconcile(CYCLE_KEY)
    status = store.get(catalog.WORKLOADS, "ml", "w")["status"]
    assert conditions(store.get(catalog.WORKLOADS, "ml", "w"))["QuotaReserved"][0] == "False"  # backing off
    assert status["requeueState"]["count"] == 2
    assert status["schedulingStats"]["evictions"] == [{"reason": "PodsReadyTimeout", "underlyingCause": "",
                                                       "count": 2}]  # fmt: skip
    state = kueue.reconciler.core.workloads["ml/w"]
    assert state.queue_time == parse_rfc3339(evicted_at)  # its place as of the timeout (timestamp Eviction)
    clock.advance(100)
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert conditions(store.get(catalog.WORKLOADS, "ml", "w"))["QuotaReserved"][0] == "True"  # backoff over
