"""The embedded Kueue shell on a memory store: Workload creation, admission, the TrainJob patch, eviction."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from gangplane.clock import ManualClock
from gangplane.schedulers.kueue.controller import CYCLE_KEY, build_kueue_controller
from gangplane.store import catalog
from gangplane.store.memory import MemoryStore

KUEUE = "kueue.x-k8s.io/v1beta2"


def _runtime() -> dict[str, Any]:
    container = {
        "name": "node",
        "image": "busybox",
        "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": 2}},
    }
    rjob = {
        "name": "node",
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"template": {"spec": {"containers": [container]}}},
        },
    }
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "rt"},
        "spec": {"mlPolicy": {"numNodes": 2}, "template": {"spec": {"replicatedJobs": [rjob]}}},
    }


def _trainjob(name: str, priority_class: str | None = None) -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": "team"}
    if priority_class:
        labels["kueue.x-k8s.io/priority-class"] = priority_class
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "ml", "labels": labels},
        "spec": {
            "runtimeRef": {"name": "rt"},
            "suspend": True,
            "runtimePatches": [{"manager": "kueue.x-k8s.io/manager"}],
        },
    }


def _setup(store: MemoryStore | None = None) -> tuple[MemoryStore, ManualClock, Any, CollectorRegistry]:
    store, clock, registry = store or MemoryStore(), ManualClock(), CollectorRegistry()
    store.create(catalog.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
    store.create(catalog.CLUSTER_TRAINING_RUNTIMES, _runtime())
    flavor = {"nodeLabels": {"gpu-type": "a100"}, "tolerations": [{"key": "gpu", "operator": "Exists"}]}
    store.create(catalog.RESOURCE_FLAVORS, {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "a100"},
                                            "spec": flavor})  # fmt: skip
    quotas = [{"name": "cpu", "nominalQuota": 8}, {"name": "nvidia.com/gpu", "nominalQuota": 4}]
    cq_spec = {
        "namespaceSelector": {},
        "preemption": {"withinClusterQueue": "LowerPriority"},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "nvidia.com/gpu"],
                "flavors": [{"name": "a100", "resources": quotas}],
            }
        ],
    }
    store.create(catalog.CLUSTER_QUEUES, {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": "cq"},
                                          "spec": cq_spec})  # fmt: skip
    local_queue = {"name": "team", "namespace": "ml"}
    store.create(catalog.LOCAL_QUEUES, {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": local_queue,
                                        "spec": {"clusterQueue": "cq"}})  # fmt: skip
    store.create(catalog.WORKLOAD_PRIORITY_CLASSES, {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass",
                                                     "metadata": {"name": "high"}, "value": 1000})  # fmt: skip
    kueue = build_kueue_controller(store, clock, registry)
    return store, clock, kueue, registry


def _workload(store: MemoryStore, job: str) -> dict[str, Any]:
    found = [
        w for w in store.list(catalog.WORKLOADS).items if w["metadata"]["ownerReferences"][0]["name"] == job
    ]
    assert len(found) == 1
    return found[0]


def _conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in obj.get("status", {}).get("conditions", [])}


def test_trainjob_is_admitted_and_started() -> None:
    store, clock, kueue, registry = _setup()
    store.create(catalog.TRAINJOBS, _trainjob("first"))
    kueue.reconciler.reconcile(("ml", "first"))
    workload = _workload(store, "first")
    assert workload["spec"]["podSets"][0]["count"] == 2
    clock.advance(2)
    kueue.reconciler.reconcile(CYCLE_KEY)
    workload = _workload(store, "first")
    assert _conditions(workload)["QuotaReserved"] == ("True", "QuotaReserved")
    assert _conditions(workload)["Admitted"][0] == "True"
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
    store, clock, kueue, _ = _setup()
    store.create(catalog.TRAINJOBS, _trainjob("low"))
    kueue.reconciler.reconcile(("ml", "low"))
    clock.advance(2)
    kueue.reconciler.reconcile(CYCLE_KEY)
    store.create(catalog.TRAINJOBS, _trainjob("other"))
    kueue.reconciler.reconcile(("ml", "other"))
    kueue.reconciler.reconcile(CYCLE_KEY)
    other = _workload(store, "other")
    assert _conditions(other)["QuotaReserved"] == ("False", "WaitingForQuota")
    assert "insufficient unused quota for" in other["status"]["conditions"][0]["message"]
    assert store.get(catalog.TRAINJOBS, "ml", "other")["spec"]["suspend"] is True

    store.create(catalog.TRAINJOBS, _trainjob("urgent", priority_class="high"))
    kueue.reconciler.reconcile(("ml", "urgent"))
    assert _workload(store, "urgent")["spec"]["priority"] == 1000
    kueue.reconciler.reconcile(CYCLE_KEY)
    low = _workload(store, "low")
    assert _conditions(low)["Evicted"] == ("True", "Preempted")
    assert _conditions(low)["Preempted"] == ("True", "InClusterQueue")
    assert store.get(catalog.TRAINJOBS, "ml", "low")["spec"]["suspend"] is True
    assert _conditions(_workload(store, "urgent"))["Admitted"][0] == "True"
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
    _, clock, kueue, _ = _setup(store)
    store.create(catalog.TRAINJOBS, _trainjob("low"))
    kueue.reconciler.reconcile(("ml", "low"))
    clock.advance(2)
    kueue.reconciler.reconcile(CYCLE_KEY)
    store.create(catalog.TRAINJOBS, _trainjob("urgent", priority_class="high"))
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
    store, clock, kueue, _ = _setup()
    for name in ("a", "b"):
        store.create(catalog.TRAINJOBS, _trainjob(name))
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
    assert _conditions(_workload(store, running))["Finished"] == ("True", "Succeeded")
    assert _workload(store, running)["status"]["admission"]["clusterQueue"] == "cq"  # kept, as upstream
    clock.advance(1)  # the batched requeue
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert store.get(catalog.TRAINJOBS, "ml", waiting)["spec"]["suspend"] is False


def test_registered_on_a_manager_admits_without_direct_calls() -> None:
    import time

    from gangplane.client.controller import Manager

    store, clock, kueue, _ = _setup()
    manager = Manager(store, clock)
    kueue.register(manager)
    manager.start(timeout=10)
    try:
        store.create(catalog.TRAINJOBS, _trainjob("watched"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if store.get(catalog.TRAINJOBS, "ml", "watched")["spec"].get("suspend") is False:
                break
            time.sleep(0.02)
        assert store.get(catalog.TRAINJOBS, "ml", "watched")["spec"]["suspend"] is False
    finally:
        manager.stop()
