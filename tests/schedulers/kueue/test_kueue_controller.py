"""The embedded Kueue shell on a memory store: Workload creation, admission, the TrainJob patch, eviction."""

from __future__ import annotations

from typing import Any

from kueue_shell import conditions, setup, trainjob, workload_of

from gangplane.schedulers.kueue.controller import CYCLE_KEY, build_kueue_controller
from gangplane.store import MERGE_PATCH, catalog
from gangplane.store.memory import MemoryStore
from waiting import poll


def test_trainjob_is_admitted_and_started() -> None:
    store, clock, kueue, registry = setup()
    store.create(catalog.TRAINJOBS, trainjob("first"))
    kueue.reconciler.reconcile(("ml", "first"))
    workload = workload_of(store, "first")
    assert workload["spec"]["podSets"][0]["count"] == 2
    clock.advance(2)
    kueue.reconciler.reconcile(CYCLE_KEY)
    workload = workload_of(store, "first")
    assert conditions(workload)["QuotaReserved"] == ("True", "QuotaReserved")
    assert conditions(workload)["Admitted"][0] == "True"
    assert workload["status"]["admission"]["podSetAssignments"][0]["flavors"] == {
        "cpu": "a100",
        "nvidia.com/gpu": "a100",
    }
    job = store.get(catalog.TRAINJOBS, "ml", "first")
    assert job["spec"]["suspend"] is False
    [patch] = job["spec"]["runtimePatches"]
    pod = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"
    ]
    assert pod["spec"]["nodeSelector"] == {"gpu-type": "a100"}
    assert pod["spec"]["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    assert pod["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "node"
    assert (
        registry.get_sample_value(
            "kueue_admitted_workloads_total", {"cluster_queue": "cq", "priority_class": ""}
        )
        == 1
    )


def test_quota_keeps_second_job_suspended_and_high_priority_preempts() -> None:
    store, clock, kueue, _ = setup()
    store.create(catalog.TRAINJOBS, trainjob("low"))
    kueue.reconciler.reconcile(("ml", "low"))
    clock.advance(2)
    kueue.reconciler.reconcile(CYCLE_KEY)
    store.create(catalog.TRAINJOBS, trainjob("other"))
    kueue.reconciler.reconcile(("ml", "other"))
    kueue.reconciler.reconcile(CYCLE_KEY)
    other = workload_of(store, "other")
    assert conditions(other)["QuotaReserved"] == ("False", "WaitingForQuota")
    assert "insufficient unused quota for" in other["status"]["conditions"][0]["message"]
    assert store.get(catalog.TRAINJOBS, "ml", "other")["spec"]["suspend"] is True

    store.create(catalog.TRAINJOBS, trainjob("urgent", priority_class="high"))
    kueue.reconciler.reconcile(("ml", "urgent"))
    assert workload_of(store, "urgent")["spec"]["priority"] == 1000
    kueue.reconciler.reconcile(CYCLE_KEY)
    low = workload_of(store, "low")
    assert conditions(low)["Evicted"] == ("True", "Preempted")
    assert conditions(low)["Preempted"] == ("True", "InClusterQueue")
    assert store.get(catalog.TRAINJOBS, "ml", "low")["spec"]["suspend"] is True
    assert conditions(workload_of(store, "urgent"))["Admitted"][0] == "True"
    assert store.get(catalog.TRAINJOBS, "ml", "urgent")["spec"]["suspend"] is False


class _RecordingStore(MemoryStore):
    """Records every patch as ``(plural, name, body)``, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.patches: list[tuple[str, str, Any]] = []

    def patch(self, rt: Any, namespace: str, name: str, patch: Any, patch_type: str, **kw: Any) -> Any:
        self.patches.append((rt.plural, name, patch))
        return super().patch(rt, namespace, name, patch, patch_type, **kw)


def test_victims_are_evicted_before_the_preemptor_starts() -> None:
    store = _RecordingStore()
    _, clock, kueue, _ = setup(store)
    store.create(catalog.TRAINJOBS, trainjob("low"))
    kueue.reconciler.reconcile(("ml", "low"))
    clock.advance(2)
    kueue.reconciler.reconcile(CYCLE_KEY)
    store.create(catalog.TRAINJOBS, trainjob("urgent", priority_class="high"))
    kueue.reconciler.reconcile(("ml", "urgent"))
    store.patches.clear()
    kueue.reconciler.reconcile(CYCLE_KEY)

    def first(plural: str, job: str, wanted: Any) -> int:
        found = (
            i
            for i, (p, name, body) in enumerate(store.patches)
            if p == plural and job in name and wanted(body)
        )
        index = next(found, None)
        assert index is not None, f"no such {plural} patch of {job}: {store.patches}"
        return index

    def condition(kind: str) -> Any:
        return lambda body: any(
            c["type"] == kind and c["status"] == "True" for c in body["status"]["conditions"]
        )

    low_evicted = first("workloads", "low", condition("Evicted"))
    low_stopped = first("trainjobs", "low", lambda body: body["spec"].get("suspend") is True)
    urgent_admitted = first("workloads", "urgent", condition("Admitted"))
    urgent_started = first("trainjobs", "urgent", lambda body: body["spec"].get("suspend") is False)
    assert low_evicted < low_stopped < urgent_admitted < urgent_started


def test_finished_trainjob_releases_quota() -> None:
    store, clock, kueue, _ = setup()
    for name in ("a", "b"):
        store.create(catalog.TRAINJOBS, trainjob(name))
        kueue.reconciler.reconcile(("ml", name))
    clock.advance(2)
    kueue.reconciler.reconcile(CYCLE_KEY)
    suspended = {n: store.get(catalog.TRAINJOBS, "ml", n)["spec"]["suspend"] for n in ("a", "b")}
    [running] = [n for n, s in suspended.items() if not s]  # equal creation times: the UID decides which
    [waiting] = [n for n, s in suspended.items() if s]
    job = store.get(catalog.TRAINJOBS, "ml", running)
    job["status"] = {
        "conditions": [{"type": "Complete", "status": "True", "reason": "Completed", "message": "done"}]
    }
    store.update_status(catalog.TRAINJOBS, job)
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert conditions(workload_of(store, running))["Finished"] == ("True", "Succeeded")
    assert workload_of(store, running)["status"]["admission"]["clusterQueue"] == "cq"  # kept, as upstream
    clock.advance(1)  # the batched requeue
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert store.get(catalog.TRAINJOBS, "ml", waiting)["spec"]["suspend"] is False


def test_registered_on_a_manager_admits_without_direct_calls() -> None:

    from gangplane.client.controller import Manager

    store, clock, kueue, _ = setup()
    manager = Manager(store, clock)
    kueue.register(manager)
    manager.start(timeout=10)
    try:
        store.create(catalog.TRAINJOBS, trainjob("watched"))
        poll(lambda: store.get(catalog.TRAINJOBS, "ml", "watched")["spec"].get("suspend") is False, 10)
        assert store.get(catalog.TRAINJOBS, "ml", "watched")["spec"]["suspend"] is False
    finally:
        manager.stop()


def test_a_pass_stopped_at_the_cycle_cap_comes_back_at_once(monkeypatch: Any) -> None:
    """Heads still moving when the pass stops at its cycle cap: the next pass is due at once, not at the next
    timer."""
    from gangplane.schedulers.kueue import controller

    monkeypatch.setattr(controller, "MAX_CYCLES_PER_PASS", 1)
    store, clock, kueue, _ = setup()
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
    for name in ("a", "b"):
        store.create(catalog.WORKLOADS, {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"queueName": "team", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [container]}}}]}})  # fmt: skip
    clock.advance(2)
    passes = [kueue.reconciler.reconcile(CYCLE_KEY).requeue_after for _ in range(3)]
    admitted = [conditions(store.get(catalog.WORKLOADS, "ml", n))["QuotaReserved"][0] for n in ("a", "b")]
    assert admitted == ["True", "True"]
    assert passes[:2] == [0.05, 0.05] and (passes[2] is None or passes[2] >= 1)


def test_a_waiting_workload_reports_its_resource_requests() -> None:
    """``status.resourceRequests`` while not admitted, as upstream's PropagateResourceRequests."""
    store, clock, kueue, _ = setup()
    container = {
        "name": "c",
        "image": "x",
        "resources": {"requests": {"cpu": "1500m", "nvidia.com/gpu": "4"}},
    }
    pod_sets = [{"name": "main", "count": 2, "template": {"spec": {"containers": [container]}}}]
    store.create(catalog.WORKLOADS, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                                     "metadata": {"name": "big", "namespace": "ml"},
                                     "spec": {"queueName": "team", "podSets": pod_sets}})  # fmt: skip
    clock.advance(2)
    kueue.reconciler.reconcile(CYCLE_KEY)
    status = store.get(catalog.WORKLOADS, "ml", "big")["status"]
    assert conditions(store.get(catalog.WORKLOADS, "ml", "big"))["Admitted"] == ("False", "NoReservation")
    assert status["resourceRequests"] == [{"name": "main", "resources": {"cpu": "3", "nvidia.com/gpu": "8"}}]


def test_a_cluster_queue_stopped_or_started_while_down_settles_at_the_first_pass() -> None:
    """Upstream's workload reconcile evicts any admitted Workload of a HoldAndDrain ClusterQueue and marks one it
    drained restarted once it runs again, whenever it runs; a restarted controller reads the Workloads back
    after the queues, and settles them then."""
    store, clock, kueue, _ = setup()
    store.create(catalog.TRAINJOBS, trainjob("running"))
    kueue.reconciler.reconcile(("ml", "running"))
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert store.get(catalog.TRAINJOBS, "ml", "running")["spec"]["suspend"] is False
    store.patch(catalog.CLUSTER_QUEUES, "", "cq", {"spec": {"stopPolicy": "HoldAndDrain"}}, MERGE_PATCH)
    restarted = build_kueue_controller(store, clock)
    restarted.reconciler.reconcile(CYCLE_KEY)
    assert conditions(workload_of(store, "running"))["Evicted"] == ("True", "ClusterQueueStopped")
    assert store.get(catalog.TRAINJOBS, "ml", "running")["spec"]["suspend"] is True
    store.patch(catalog.CLUSTER_QUEUES, "", "cq", {"spec": {"stopPolicy": None}}, MERGE_PATCH)
    restarted = build_kueue_controller(store, clock)  # and started again while down: marked at the first pass
    restarted.reconciler.reconcile(CYCLE_KEY)
    assert conditions(workload_of(store, "running"))["Requeued"] == ("True", "ClusterQueueRestarted")
    assert store.get(catalog.TRAINJOBS, "ml", "running")["spec"]["suspend"] is False
