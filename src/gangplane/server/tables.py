"""Pure ``meta.k8s.io/v1`` Table rendering for ``kubectl get``: NAME, kind-specific columns, AGE.

Columns follow the upstream printer columns where they are simple; ages are rendered on the server, as the
API server does for custom resources, from an injected ``now``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gangplane.clock import parse_rfc3339
from gangplane.store.base import Object, ResourceType

Cell = str | int | None


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    cell: Callable[[Object], Cell]
    type: str = "string"
    priority: int = 0


def _get(obj: Any, *path: str | int) -> Any:
    for key in path:
        if isinstance(key, int):
            obj = obj[key] if isinstance(obj, list) and -len(obj) <= key < len(obj) else None
        else:
            obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _path(*path: str | int) -> Callable[[Object], Cell]:
    def cell(obj: Object) -> Cell:
        value = _get(obj, *path)
        return None if value is None else value if isinstance(value, int) else str(value)

    return cell


def last_true_condition(obj: Object) -> Cell:
    conditions = _get(obj, "status", "conditions") or []
    true = [c.get("type") for c in conditions if isinstance(c, dict) and c.get("status") == "True"]
    return str(true[-1]) if true else ""


# The ``gangplane.dev/Waiting`` condition's reasons that have a word of their own (controllers/pending.py).
_WAITING_WORDS = {"QueuedByKueue": "Queued", "Suspended": "Suspended"}
_STATE_ORDER = ("Failed", "Complete", "gangplane.dev/Waiting", "Suspended")


def _true_conditions(obj: Object) -> dict[str, dict[str, Any]]:
    conditions = _get(obj, "status", "conditions") or []
    return {str(c.get("type")): c for c in conditions if isinstance(c, dict) and c.get("status") == "True"}


def _deciding(obj: Object) -> tuple[str, dict[str, Any]] | None:
    true = _true_conditions(obj)
    return next(((kind, true[kind]) for kind in _STATE_ORDER if kind in true), None)


def trainjob_state(obj: Object) -> Cell:
    """A TrainJob's state in one word: Failed, Complete, Queued (by Kueue), Suspended, Waiting, or Running
    when no condition says otherwise (as the Kubeflow SDK reads a TrainJob without conditions). Upstream's
    printer column shows the last condition's type, which for a waiting job would be gangplane's condition
    type; the condition's reason is the REASON column (``-o wide``)."""
    found = _deciding(obj)
    if found is None:
        return str(last_true_condition(obj) or "Running")
    kind, condition = found
    if kind == "gangplane.dev/Waiting":
        return _WAITING_WORDS.get(str(condition.get("reason")), "Waiting")
    return kind


def trainjob_reason(obj: Object) -> Cell:
    found = _deciding(obj)
    return str(found[1].get("reason") or "") if found is not None else ""


def _statuses(obj: Object) -> list[dict[str, Any]]:
    return [s for s in _get(obj, "status", "containerStatuses") or [] if isinstance(s, dict)]


def pod_ready(obj: Object) -> Cell:
    total = len(_get(obj, "spec", "containers") or [])
    return f"{sum(1 for s in _statuses(obj) if s.get('ready'))}/{total}"


def pod_status(obj: Object) -> Cell:
    if _get(obj, "metadata", "deletionTimestamp"):
        return "Terminating"
    for s in _statuses(obj):
        waiting = _get(s, "state", "waiting", "reason") or _get(s, "state", "terminated", "reason")
        if waiting:
            return str(waiting)
    return str(_get(obj, "status", "reason") or _get(obj, "status", "phase") or "Pending")


def pod_restarts(obj: Object) -> Cell:
    return sum(int(s.get("restartCount") or 0) for s in _statuses(obj))


def _count(*path: str) -> Callable[[Object], Cell]:
    return lambda obj: len(_get(obj, *path) or {})


def _job_completions(obj: Object) -> Cell:
    return f"{_get(obj, 'status', 'succeeded') or 0}/{_get(obj, 'spec', 'completions') or 1}"


def _node_status(obj: Object) -> Cell:
    conditions = _get(obj, "status", "conditions") or []
    ready = [c for c in conditions if isinstance(c, dict) and c.get("type") == "Ready"]
    state = "Ready" if ready and ready[0].get("status") == "True" else "NotReady"
    return state + (",SchedulingDisabled" if _get(obj, "spec", "unschedulable") else "")


def _involved_object(obj: Object) -> Cell:
    return f"{_get(obj, 'involvedObject', 'kind')}/{_get(obj, 'involvedObject', 'name')}"


_MODES = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}


def _access_modes(*path: str) -> Callable[[Object], Cell]:
    """kubectl's short access modes (``RWO,RWX``), from ``path`` on the object."""
    return lambda obj: ",".join(_MODES.get(str(m), str(m)) for m in _get(obj, *path) or [])


def _claim_ref(obj: Object) -> Cell:
    ref = _get(obj, "spec", "claimRef") or {}
    return f"{ref.get('namespace')}/{ref.get('name')}" if ref.get("name") else ""


_KIND_COLUMNS: dict[tuple[str, str], tuple[Column, ...]] = {
    ("", "Pod"): (
        Column("Ready", pod_ready),
        Column("Status", pod_status),
        Column("Restarts", pod_restarts, "integer"),
        Column("Node", _path("spec", "nodeName")),
    ),
    ("", "Namespace"): (Column("Status", _path("status", "phase")),),
    ("", "Node"): (Column("Status", _node_status),),
    ("", "ConfigMap"): (Column("Data", _count("data"), "integer"),),
    ("", "Secret"): (Column("Type", _path("type")), Column("Data", _count("data"), "integer")),
    ("", "Service"): (
        Column("Type", _path("spec", "type")),
        Column("Cluster-IP", _path("spec", "clusterIP")),
    ),
    ("", "Event"): (
        Column("Type", _path("type")),
        Column("Reason", _path("reason")),
        Column("Object", _involved_object),
        Column("Message", _path("message")),
    ),
    ("batch", "Job"): (Column("Completions", _job_completions),),
    ("", "PersistentVolumeClaim"): (  # pkg/printers/internalversion/printers.go
        Column("Status", _path("status", "phase")),
        Column("Volume", _path("spec", "volumeName")),
        Column("Capacity", _path("status", "capacity", "storage")),
        Column("Access Modes", _access_modes("status", "accessModes")),
        Column("StorageClass", _path("spec", "storageClassName")),
        Column("VolumeMode", _path("spec", "volumeMode"), priority=1),
    ),
    ("", "PersistentVolume"): (
        Column("Capacity", _path("spec", "capacity", "storage")),
        Column("Access Modes", _access_modes("spec", "accessModes")),
        Column("Reclaim Policy", _path("spec", "persistentVolumeReclaimPolicy")),
        Column("Status", _path("status", "phase")),
        Column("Claim", _claim_ref),
        Column("StorageClass", _path("spec", "storageClassName")),
        Column("VolumeMode", _path("spec", "volumeMode"), priority=1),
    ),
    ("storage.k8s.io", "StorageClass"): (
        Column("Provisioner", _path("provisioner")),
        Column("ReclaimPolicy", _path("reclaimPolicy")),
        Column("VolumeBindingMode", _path("volumeBindingMode")),
        Column("AllowVolumeExpansion", lambda o: str(bool(_get(o, "allowVolumeExpansion"))).lower()),
    ),
    ("scheduling.k8s.io", "PriorityClass"): (Column("Value", _path("value"), "integer"),),
    ("coordination.k8s.io", "Lease"): (Column("Holder", _path("spec", "holderIdentity")),),
    ("trainer.kubeflow.org", "TrainJob"): (
        Column("State", trainjob_state),
        Column("Reason", trainjob_reason, priority=1),
        Column("Suspended", lambda o: "True" if _get(o, "spec", "suspend") else "False", priority=1),
    ),
    ("jobset.x-k8s.io", "JobSet"): (Column("TerminalState", _path("status", "terminalState")),),
    ("scheduling.x-k8s.io", "PodGroup"): (
        Column("Phase", _path("status", "phase")),
        Column("MinMember", _path("spec", "minMember"), "integer"),
    ),
    ("scheduling.volcano.sh", "PodGroup"): (
        Column("Status", _path("status", "phase")),
        Column("MinMember", _path("spec", "minMember"), "integer"),
        Column("Queue", _path("spec", "queue"), priority=1),
    ),
    ("scheduling.volcano.sh", "Queue"): (Column("Parent", _path("spec", "parent")),),
    ("kueue.x-k8s.io", "ClusterQueue"): (
        Column("Cohort", _path("spec", "cohortName")),
        Column("Pending Workloads", _path("status", "pendingWorkloads"), "integer"),
        Column("Admitted Workloads", _path("status", "admittedWorkloads"), "integer"),
    ),
    ("kueue.x-k8s.io", "LocalQueue"): (
        Column("ClusterQueue", _path("spec", "clusterQueue")),
        Column("Pending Workloads", _path("status", "pendingWorkloads"), "integer"),
        Column("Admitted Workloads", _path("status", "admittedWorkloads"), "integer"),
    ),
    ("kueue.x-k8s.io", "WorkloadPriorityClass"): (Column("Value", _path("value"), "integer"),),
    ("kueue.x-k8s.io", "Workload"): (
        Column("Queue", _path("spec", "queueName")),
        Column("Reserved in", _path("status", "admission", "clusterQueue")),
    ),
    ("scheduling.run.ai", "Queue"): (Column("Parent", _path("spec", "parentQueue")),),
}


def columns_for(rt: ResourceType) -> tuple[Column, ...]:
    return _KIND_COLUMNS.get((rt.group, rt.kind), ())


def human_duration(seconds: float) -> str:
    """Kubernetes' ``duration.HumanDuration``: 45s, 3m20s, 15m, 5h30m, 3d4h, 2y10d."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 120:
        return f"{max(s, 0)}s"
    minutes, hours, days = s // 60, s // 3600, s // 86400
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{days // 365}y"


def age(obj: Object, now: float) -> str:
    created = _get(obj, "metadata", "creationTimestamp")
    return human_duration(now - parse_rfc3339(created)) if isinstance(created, str) else "<unknown>"


def _definition(name: str, type_: str, priority: int, fmt: str = "") -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": "", "priority": priority}


def _row_object(obj: Object, include: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    meta = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1"}
    return {**meta, "metadata": obj.get("metadata", {})}


def render_table(
    rt: ResourceType,
    items: Sequence[Object],
    now: float,
    *,
    include: str = "Metadata",
    list_meta: Object | None = None,
) -> dict[str, Any]:
    """A Table of ``items``; ``include`` is the ``includeObject`` query parameter (None, Metadata, Object)."""
    cols = columns_for(rt)
    definitions = [_definition("Name", "string", 0, "name")]
    definitions += [_definition(c.name, c.type, c.priority) for c in cols]
    definitions.append(_definition("Age", "date", 0))
    rows = []
    for obj in items:
        cells = [_get(obj, "metadata", "name"), *(c.cell(obj) for c in cols), age(obj, now)]
        row: dict[str, Any] = {"cells": cells}
        shown = _row_object(obj, include)
        if shown is not None:
            row["object"] = shown
        rows.append(row)
    meta = list_meta or {}
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": definitions,
        "rows": rows,
    }


__all__ = [
    "Column",
    "age",
    "columns_for",
    "human_duration",
    "last_true_condition",
    "render_table",
    "trainjob_reason",
    "trainjob_state",
]
