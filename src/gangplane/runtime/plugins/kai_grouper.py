"""KAI's JobSet pod-grouper as one pure rule over wire dicts, shared by the runtime plugin (which renders the
PodGroup for a TrainJob) and the embedded KAI scheduler (which derives it for JobSet pods that have none).

The rule (KAI >= v0.16, ``pkg/podgrouper/podgrouper/plugins/{jobset,defaultgrouper}``; kai.md §4.3): the
root needs ``minSubGroup`` replicated jobs — ``kai.scheduler/batch-min-member`` capped at their count, else 1
for ``InOrder`` startup, else all; each replicated job is a parent SubGroup needing all its replicas, and each
replica a leaf needing ``parallelism`` pods (or the template's own ``batch-min-member``). An annotation that is
not a base-10 integer >= 1 makes KAI fail the grouping: no PodGroup (``None``). Queue, priority class,
preemptibility and topology come from the owner's labels/annotations, then the pod's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gangplane.api.scheduling import kai

Obj = Mapping[str, Any]
_TOPOLOGY_KEYS = (
    kai.TOPOLOGY_ANNOTATION,
    kai.TOPOLOGY_REQUIRED_PLACEMENT_ANNOTATION,
    kai.TOPOLOGY_PREFERRED_PLACEMENT_ANNOTATION,
)


def positive_int(text: str | None) -> int | None:
    """``batch-min-member`` as KAI parses it: a base-10 integer >= 1, else ``None`` (KAI then errors)."""
    try:
        value = int(text or "", 10)
    except ValueError:
        return None
    return value if value >= 1 else None


def topology(annotations: Mapping[str, str]) -> dict[str, str] | None:
    """The ``topologyConstraint`` the topology annotations ask for (a topology and at least one level)."""
    name, required, preferred = (annotations.get(key) for key in _TOPOLOGY_KEYS)
    if not name or not (required or preferred):
        return None
    out = {"topology": name, "requiredTopologyLevel": required, "preferredTopologyLevel": preferred}
    return {k: v for k, v in out.items() if v}


def queue(labels: Mapping[str, str], pod_labels: Mapping[str, str]) -> str:
    """Owner queue label, then the pod's, then ``project`` (+ ``-<node-pool>``), then ``default-queue``."""
    for source in (labels, pod_labels):
        if kai.QUEUE_LABEL in source:
            return source[kai.QUEUE_LABEL]
    project = labels.get(kai.PROJECT_LABEL) or pod_labels.get(kai.PROJECT_LABEL)
    if not project:
        return kai.DEFAULT_QUEUE
    pool = pod_labels.get(kai.NODE_POOL_LABEL)
    return f"{project}-{pool}" if pool else project


def priority_class(
    labels: Mapping[str, str],
    pod_labels: Mapping[str, str],
    pod_class: str | None,
    exists: Callable[[str], bool],
) -> str:
    """Owner label, else pod label, else the pod's ``priorityClassName`` — if it exists; else ``train``."""
    wanted = labels.get(kai.PRIORITY_CLASS_LABEL, pod_labels.get(kai.PRIORITY_CLASS_LABEL))
    wanted = wanted if wanted is not None else pod_class
    return (
        wanted
        if wanted and (wanted in kai.PRIORITY_CLASSES or exists(wanted))
        else kai.DEFAULT_PRIORITY_CLASS
    )


def preemptibility(labels: Mapping[str, str], pod_labels: Mapping[str, str]) -> str | None:
    allowed = {p.value for p in kai.Preemptibility}
    given = (labels.get(kai.PREEMPTIBILITY_LABEL), pod_labels.get(kai.PREEMPTIBILITY_LABEL))
    return next((value for value in given if value in allowed), None)


def _root_min(annotations: Mapping[str, str], count: int, in_order: bool) -> int | None:
    if kai.BATCH_MIN_MEMBER_ANNOTATION in annotations:
        override = positive_int(annotations[kai.BATCH_MIN_MEMBER_ANNOTATION])
        return None if override is None else min(override, count)
    return 1 if in_order else count


def _sub_groups(rjob: Obj) -> list[dict[str, Any]] | None:
    """One parent per replicated job (``minSubGroup`` = replicas) and one leaf per replica (``minMember``)."""
    template = rjob.get("template") or {}
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    parallelism = (template.get("spec") or {}).get("parallelism")
    leaf_min = 1 if parallelism is None else int(parallelism)
    if kai.BATCH_MIN_MEMBER_ANNOTATION in annotations:
        override = positive_int(annotations[kai.BATCH_MIN_MEMBER_ANNOTATION])
        if override is None:
            return None
        leaf_min = override
    replicas = 1 if rjob.get("replicas") is None else int(rjob["replicas"])
    leaves: list[dict[str, Any]] = [
        {"name": f"{rjob['name']}-replica-{i}", "parent": rjob["name"], "minMember": leaf_min}
        for i in range(replicas)
    ]
    if (constraint := topology(annotations)) is not None:
        for leaf in leaves:
            leaf["topologyConstraint"] = dict(constraint)
    return [{"name": rjob["name"], "minSubGroup": replicas}, *leaves]


def pod_group_spec(
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    jobset_spec: Obj,
    pod: Obj,
    class_exists: Callable[[str], bool],
) -> dict[str, Any] | None:
    """The PodGroup ``spec`` (wire form) for a JobSet with merged owner ``labels``/``annotations``, as the
    grouper sees ``pod`` (a pod or pod template: ``metadata.labels``, ``spec.priorityClassName``)."""
    rjobs: Sequence[Obj] = jobset_spec.get("replicatedJobs") or []
    in_order = (jobset_spec.get("startupPolicy") or {}).get("startupPolicyOrder") == "InOrder"
    root = _root_min(annotations, len(rjobs), in_order)
    trees = [_sub_groups(rjob) for rjob in rjobs]
    if root is None or any(tree is None for tree in trees):
        return None
    pod_labels = (pod.get("metadata") or {}).get("labels") or {}
    pod_class = (pod.get("spec") or {}).get("priorityClassName")
    spec: dict[str, Any] = {
        "minSubGroup": root,
        "queue": queue(labels, pod_labels),
        "priorityClassName": priority_class(labels, pod_labels, pod_class, class_exists),
        "subGroups": [group for tree in trees for group in tree or []],
    }
    if (chosen := preemptibility(labels, pod_labels)) is not None:
        spec["preemptibility"] = chosen
    if (constraint := topology(annotations)) is not None:
        spec["topologyConstraint"] = constraint
    return spec


def pod_group_name(jobset_name: str, jobset_uid: str) -> str:
    return f"pg-{jobset_name}-{jobset_uid}"


__all__ = ["pod_group_name", "pod_group_spec", "positive_int", "preemptibility", "priority_class", "queue"]
