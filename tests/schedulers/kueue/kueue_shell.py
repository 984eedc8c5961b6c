"""The embedded Kueue shell on a memory store: a runtime, a flavor, one ClusterQueue (8 cpu, 4 GPUs), its
LocalQueue ``ml/team`` and TrainJobs asking for 2 pods x (2 cpu, 2 GPUs)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from gangplane.clock import ManualClock
from gangplane.schedulers.kueue.controller import build_kueue_controller
from gangplane.schedulers.kueue.state import KueueConfig
from gangplane.store import catalog
from gangplane.store.memory import MemoryStore

KUEUE = "kueue.x-k8s.io/v1beta2"


def runtime() -> dict[str, Any]:
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


def trainjob(name: str, priority_class: str | None = None) -> dict[str, Any]:
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


def setup(
    store: MemoryStore | None = None, config: KueueConfig | None = None
) -> tuple[MemoryStore, ManualClock, Any, CollectorRegistry]:
    """The objects above and the embedded Kueue; a new store stamps creation times from the manual clock."""
    clock, registry = ManualClock(1_800_000_000), CollectorRegistry()
    store = store or MemoryStore(clock=clock)
    store.create(catalog.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
    store.create(catalog.CLUSTER_TRAINING_RUNTIMES, runtime())
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
    kueue = build_kueue_controller(store, clock, registry, config)
    return store, clock, kueue, registry


def workload_of(store: MemoryStore, job: str) -> dict[str, Any]:
    found = [
        w for w in store.list(catalog.WORKLOADS).items if w["metadata"]["ownerReferences"][0]["name"] == job
    ]
    assert len(found) == 1
    return found[0]


def conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in obj.get("status", {}).get("conditions", [])}
