"""LocalQueue ``spec.stopPolicy`` through the embedded Kueue's shell on a memory store, after upstream's
integration test ``test/integration/singlecluster/scheduler/scheduler_test.go`` "Using localQueue stop policy"
"Should evict workloads when stop policy is drain", and ``pkg/controller/jobs/job/job_controller_test.go``
"when workload is evicted due to local queue stopped, job gets suspended". A restart is a new reconciler on
the same store: its first pass rebuilds the core from the objects.
"""

from __future__ import annotations

from typing import Any

from kueue_shell import conditions, setup, trainjob, workload_of

from gangplane.schedulers.kueue.controller import CYCLE_KEY, build_kueue_controller
from gangplane.store import MERGE_PATCH, catalog
from gangplane.store.memory import MemoryStore

READY = ("True", "Ready", "Can submit new workloads to localQueue")
STOPPED = ("False", "Stopped", "LocalQueue is stopped")


def _two_jobs_fit(store: MemoryStore) -> None:
    """Upstream's case has room for both workloads: double the ClusterQueue (each job takes 4 cpu, 4 GPUs)."""
    cq = store.get(catalog.CLUSTER_QUEUES, "", "cq")
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"] = [
        {"name": "cpu", "nominalQuota": 16}, {"name": "nvidia.com/gpu", "nominalQuota": 8}]  # fmt: skip
    store.update(catalog.CLUSTER_QUEUES, cq)


def _stop(store: MemoryStore, policy: str | None) -> None:
    store.patch(catalog.LOCAL_QUEUES, "ml", "team", {"spec": {"stopPolicy": policy}}, MERGE_PATCH)


def _submit(store: MemoryStore, kueue: Any, name: str) -> None:
    store.create(catalog.TRAINJOBS, trainjob(name))
    kueue.reconciler.reconcile(("ml", name))
    kueue.reconciler.reconcile(CYCLE_KEY)


def _suspended(store: MemoryStore, name: str) -> bool:
    return bool(store.get(catalog.TRAINJOBS, "ml", name)["spec"]["suspend"])


def _condition(obj: dict[str, Any], type_: str) -> tuple[str, str, str]:
    found = next(c for c in obj["status"]["conditions"] if c["type"] == type_)
    return found["status"], found["reason"], found["message"]


def _workload_events(store: MemoryStore, job: str) -> list[tuple[str, str, str]]:
    name = workload_of(store, job)["metadata"]["name"]
    found = [e for e in store.list(catalog.EVENTS).items if e["involvedObject"]["name"] == name]
    return sorted((e["type"], e["reason"], e["message"]) for e in found)


def _local_queue(store: MemoryStore) -> tuple[tuple[int, int, int], tuple[str, str, str]]:
    lq = store.get(catalog.LOCAL_QUEUES, "ml", "team")
    status = lq["status"]
    counts = (status["pendingWorkloads"], status["reservingWorkloads"], status["admittedWorkloads"])
    return counts, _condition(lq, "Active")


def test_should_evict_workloads_when_stop_policy_is_drain() -> None:
    store, _, kueue, registry = setup()
    _two_jobs_fit(store)
    _submit(store, kueue, "wl1")
    assert not _suspended(store, "wl1")
    assert _local_queue(store) == ((0, 1, 1), READY)

    _stop(store, "HoldAndDrain")
    kueue.reconciler.reconcile(CYCLE_KEY)
    wl1 = workload_of(store, "wl1")
    assert _condition(wl1, "Evicted") == ("True", "LocalQueueStopped", "The LocalQueue is stopped")
    assert _condition(wl1, "Requeued") == ("False", "LocalQueueStopped", "The LocalQueue is stopped")
    assert _suspended(store, "wl1")  # the job is suspended as for any eviction
    evicted = ("Normal", "EvictedDueToLocalQueueStopped", "The LocalQueue is stopped")
    assert evicted in _workload_events(store, "wl1")
    labels = {"cluster_queue": "cq", "reason": "LocalQueueStopped", "underlying_cause": ""}
    assert registry.get_sample_value("kueue_evicted_workloads_total", labels) == 1
    # upstream still counts wl1 as reserving until its pods are gone; here the quota goes at eviction
    assert _local_queue(store) == ((0, 0, 0), STOPPED)

    _submit(store, kueue, "wl2")
    wl2 = workload_of(store, "wl2")
    assert _condition(wl2, "QuotaReserved") == ("False", "Suspended", "LocalQueue team is inactive")
    assert _suspended(store, "wl2")
    assert store.get(catalog.CLUSTER_QUEUES, "", "cq")["status"]["pendingWorkloads"] == 0
    assert _workload_events(store, "wl2") == []  # upstream's workload controller says it without an Event

    _stop(store, None)  # restart: stopPolicy removed
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert _local_queue(store) == ((0, 2, 2), READY)
    assert [conditions(workload_of(store, n))["Admitted"][0] for n in ("wl1", "wl2")] == ["True", "True"]
    assert _condition(workload_of(store, "wl1"), "Requeued") == (
        "True", "LocalQueueRestarted", "The LocalQueue was restarted after being stopped")  # fmt: skip
    assert not _suspended(store, "wl1") and not _suspended(store, "wl2")


def test_hold_lets_admitted_jobs_run_and_holds_new_ones() -> None:
    store, _, kueue, _ = setup()
    _two_jobs_fit(store)
    _submit(store, kueue, "running")
    _stop(store, "Hold")
    kueue.reconciler.reconcile(CYCLE_KEY)
    _submit(store, kueue, "held")
    assert not _suspended(store, "running") and _suspended(store, "held")
    assert _local_queue(store) == ((0, 1, 1), STOPPED)
    assert kueue.reconciler.pending_in_local_queue("ml", "team") == []  # the visibility API lists none


def test_stop_policy_survives_a_restart() -> None:
    """Drained by a restarted controller (the spec changed while it was down), held across another restart,
    and marked restarted and admitted by a third once the stopPolicy is gone."""
    store, clock, kueue, _ = setup()
    _two_jobs_fit(store)
    _submit(store, kueue, "wl1")
    _stop(store, "HoldAndDrain")
    kueue = build_kueue_controller(store, clock)
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert _condition(workload_of(store, "wl1"), "Evicted")[1] == "LocalQueueStopped"
    assert _suspended(store, "wl1")

    _submit(store, kueue, "wl2")
    kueue = build_kueue_controller(store, clock)
    clock.advance(2)
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert _suspended(store, "wl1") and _suspended(store, "wl2")
    assert _local_queue(store) == ((0, 0, 0), STOPPED)

    _stop(store, None)
    kueue = build_kueue_controller(store, clock)
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert _condition(workload_of(store, "wl1"), "Requeued")[:2] == ("True", "LocalQueueRestarted")
    assert not _suspended(store, "wl1") and not _suspended(store, "wl2")


def test_a_stop_policy_the_crd_would_refuse_holds() -> None:
    """Upstream tests ``!= None`` for stopped; the memory store does not check the CRD's enum."""
    store, _, kueue, _ = setup()
    _stop(store, "Paused")
    _submit(store, kueue, "job")
    assert _suspended(store, "job")
    assert _local_queue(store)[1] == STOPPED
