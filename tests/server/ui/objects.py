"""Wire objects as the embedded cluster writes them, for the dashboard's view tests (plain dicts)."""

from __future__ import annotations

from typing import Any

from gangplane.clock import rfc3339
from gangplane.store.base import Object

NOW = 1_800_000_000.0
NS = "default"


def stamp(ago: float) -> str:
    return rfc3339(NOW - ago)


def node(name: str, cpu: str = "8", memory: str = "32Gi", gpu: int = 0, **spec: Any) -> Object:
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110"}
    if gpu:
        allocatable["nvidia.com/gpu"] = str(gpu)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {}},
        "spec": dict(spec),
        "status": {"allocatable": allocatable, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def trainjob(
    name: str,
    *,
    ago: float = 60,
    labels: dict[str, str] | None = None,
    waiting: tuple[str, str] | None = None,
    done: str | None = None,
    suspend: bool = False,
) -> Object:
    conditions = []
    if waiting:
        conditions.append(
            {
                "type": "gangplane.dev/Waiting",
                "status": "True",
                "reason": waiting[0],
                "message": waiting[1],
                "lastTransitionTime": stamp(30),
            }
        )
    if done:
        conditions.append({"type": done, "status": "True", "reason": done, "lastTransitionTime": stamp(5)})
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"uid-{name}",
            "labels": labels or {},
            "creationTimestamp": stamp(ago),
        },
        "spec": {"runtimeRef": {"name": "torch"}, "suspend": suspend, "trainer": {"numNodes": 2}},
        "status": {"conditions": conditions},
    }


def jobset(name: str, replicas: int = 2, scheduler: str = "") -> Object:
    pod: dict[str, Any] = {"containers": [{"name": "node"}]}
    if scheduler:
        pod["schedulerName"] = scheduler
    rjob = {
        "name": "node",
        "replicas": 1,
        "template": {"spec": {"parallelism": replicas, "template": {"spec": pod}}},
    }
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": NS, "creationTimestamp": stamp(50)},
        "spec": {"replicatedJobs": [rjob]},
        "status": {},
    }


def job(jobset_name: str, active: int = 2) -> Object:
    labels = {"jobset.sigs.k8s.io/jobset-name": jobset_name, "jobset.sigs.k8s.io/replicatedjob-name": "node"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"{jobset_name}-node-0",
            "namespace": NS,
            "labels": labels,
            "ownerReferences": [{"kind": "JobSet", "name": jobset_name, "controller": True}],
        },
        "spec": {},
        "status": {"active": active},
    }


def pod(
    job_name: str,
    index: int,
    *,
    node_name: str = "",
    phase: str = "Pending",
    cpu: str = "1",
    memory: str = "1Gi",
    gpu: int = 0,
    scheduler: str = "default-scheduler",
) -> Object:
    requests: dict[str, str] = {"cpu": cpu, "memory": memory}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    conditions = []
    if node_name:
        conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp(20 - index)})
    else:
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/2 nodes are available: 2 Insufficient cpu.",
            }
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job_name}-node-0-{index}",
            "namespace": NS,
            "creationTimestamp": stamp(40),
            "labels": {"jobset.sigs.k8s.io/jobset-name": job_name},
            "ownerReferences": [{"kind": "Job", "name": f"{job_name}-node-0", "controller": True}],
        },
        "spec": {
            "schedulerName": scheduler,
            "nodeName": node_name or None,
            "containers": [{"name": "node", "resources": {"requests": requests}}],
        },
        "status": {"phase": phase, "conditions": conditions},
    }


def cluster_queue(
    name: str,
    cpu: str,
    cohort: str | None = None,
    weight: str | None = None,
    lending_limit: str | None = None,
) -> Object:
    quota: dict[str, Any] = {"name": "cpu", "nominalQuota": cpu}
    if lending_limit is not None:
        quota["lendingLimit"] = lending_limit
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [quota]}]}
        ],
    }
    if cohort:
        spec["cohortName"] = cohort
    if weight:
        spec["fairSharing"] = {"weight": weight}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }


def local_queue(name: str, cq: str) -> Object:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"clusterQueue": cq},
    }


def workload(
    name: str,
    queue: str,
    cpu: str,
    *,
    admitted_to: str | None = None,
    ago: float = 40,
    job_name: str | None = None,
) -> Object:
    status: dict[str, Any] = {"conditions": []}
    if admitted_to:
        status["admission"] = {
            "clusterQueue": admitted_to,
            "podSetAssignments": [
                {"name": "node", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": cpu}, "count": 1}
            ],
        }
        status["conditions"].append(
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "QuotaReserved",
                "message": f"Quota reserved in ClusterQueue {admitted_to}",
                "lastTransitionTime": stamp(ago - 5),
            }
        )
    else:
        status["conditions"].append(
            {
                "type": "QuotaReserved",
                "status": "False",
                "reason": "Pending",
                "message": "couldn't assign flavors to pod set node: insufficient quota",
            }
        )
    owner = [{"kind": "TrainJob", "name": job_name, "controller": True}] if job_name else []
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": NS,
            "creationTimestamp": stamp(ago),
            "ownerReferences": owner,
        },
        "spec": {
            "queueName": queue,
            "priority": 0,
            "podSets": [
                {
                    "name": "node",
                    "count": 1,
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
                    },
                }
            ],
        },
        "status": status,
    }


def event(
    name: str, involved_kind: str, involved: str, reason: str, message: str, ago: float, type_: str = "Normal"
) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": NS},
        "involvedObject": {"kind": involved_kind, "name": involved, "namespace": NS},
        "type": type_,
        "reason": reason,
        "message": message,
        "lastTimestamp": stamp(ago),
        "count": 1,
    }


_OWNER_API = {
    "JobSet": "jobset.x-k8s.io/v1alpha2",
    "Job": "batch/v1",
    "TrainJob": "trainer.kubeflow.org/v1alpha1",
}
_UIDS: dict[tuple[int, str, str], str] = {}


def _complete_owner_refs(store: Any, obj: Object) -> None:
    """Owner references as the API server requires them (apiVersion and uid) to owners this store holds; a
    reference to an owner the test did not create is left out (the garbage collector would take the object)."""
    refs = []
    for ref in obj["metadata"].get("ownerReferences") or []:
        uid = _UIDS.get((id(store), ref["kind"], ref["name"]))
        if uid is not None:
            refs.append({"apiVersion": _OWNER_API[ref["kind"]], "uid": uid, **ref})
    obj["metadata"]["ownerReferences"] = refs


def put(store: Any, rt: Any, obj: Object) -> Object:
    """Create ``obj`` and then write its status, as its controller would (create drops status)."""
    _complete_owner_refs(store, obj)
    created = store.create(rt, obj)
    _UIDS[(id(store), created["kind"], created["metadata"]["name"])] = created["metadata"]["uid"]
    if obj.get("status"):
        created["status"] = obj["status"]
        created = store.update_status(rt, created)
    return created  # type: ignore[no-any-return]
