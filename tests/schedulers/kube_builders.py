"""Wire-dict builders for scheduler tests: nodes, pods and coscheduling PodGroups (camelCase, as stored)."""

from __future__ import annotations

from typing import Any

from gangplane.api.scheduling.coscheduling import POD_GROUP_LABEL, SCHEDULER_NAME
from gangplane.clock import rfc3339
from gangplane.schedulers.core import ResourceIndex, Snapshot, node_info, pod_info
from gangplane.schedulers.coscheduling import group_of

T0 = 1_767_225_600.0


def node(
    name: str,
    *,
    cpu: str | int = "8",
    memory: str = "32Gi",
    gpu: int = 0,
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
    ready: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    allocatable: dict[str, Any] = {"cpu": str(cpu), "memory": memory, "pods": str(pods), **extra}
    if gpu:
        allocatable["nvidia.com/gpu"] = str(gpu)
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"allocatable": allocatable},
    }
    if ready is not None:
        obj["status"]["conditions"] = [{"type": "Ready", "status": ready}]
    return obj


def pod(
    name: str,
    *,
    namespace: str = "ml",
    cpu: str | None = "1",
    memory: str | None = None,
    gpu: int = 0,
    group: str | None = None,
    scheduler: str | None = None,
    priority: int | None = None,
    node_name: str | None = None,
    phase: str | None = None,
    created: float = T0,
    **spec: Any,
) -> dict[str, Any]:
    requests: dict[str, Any] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    body: dict[str, Any] = {"containers": [{"name": "main", "resources": {"requests": requests}}], **spec}
    if group is not None:
        body.setdefault("schedulerName", SCHEDULER_NAME)
    if scheduler is not None:
        body["schedulerName"] = scheduler
    if priority is not None:
        body["priority"] = priority
    if node_name is not None:
        body["nodeName"] = node_name
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "creationTimestamp": rfc3339(created),
    }
    if group is not None:
        meta["labels"] = {POD_GROUP_LABEL: group}
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


def pod_group(
    name: str,
    min_member: int,
    *,
    namespace: str = "ml",
    min_resources: dict[str, Any] | None = None,
    timeout: int | None = None,
    created: float = T0,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if min_resources is not None:
        spec["minResources"] = min_resources
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    obj: dict[str, Any] = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": rfc3339(created)},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def index_for(nodes: list[dict[str, Any]], pods: list[dict[str, Any]] = ()) -> ResourceIndex:  # type: ignore[assignment]
    from gangplane.schedulers.core.objects import effective_requests

    return ResourceIndex.covering(
        *(n["status"]["allocatable"] for n in nodes), *(effective_requests(p["spec"]) for p in pods)
    )


def snapshot(
    nodes: list[dict[str, Any]], bound: list[dict[str, Any]] = (), pending: list[dict[str, Any]] = ()
):  # type: ignore[assignment]
    """A snapshot over ``nodes`` with ``bound`` counted, and ``pending`` as PodInfos (coscheduling groups)."""
    index = index_for(nodes, [*bound, *pending])
    snap = Snapshot(
        index, [node_info(n) for n in nodes], [pod_info(p, index, group_of=group_of) for p in bound]
    )
    return snap, [pod_info(p, index, group_of=group_of) for p in pending]
