"""KAI's inputs as values: queues (``scheduling.run.ai/v2``), jobs from PodGroups (``v2alpha2``) and their
pods, and the pod-grouper's PodGroup for JobSet pods that have none yet (kai.md §3, §4).

Resources are in KAI units — GPU devices, CPU millicores, memory MB — as a 3-vector, so queue numbers are
used as written. Pure: wire dicts in, values out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from gangplane.api.scheduling import kai
from gangplane.runtime.plugins import kai_grouper
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.resources import CPU, GPU, MEMORY, ResourceIndex
from gangplane.schedulers.kai.gangs import GangTree, build_tree, shortfall

Res = npt.NDArray[np.float64]
RESOURCES = ("gpu", "cpu", "memory")
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"


def kai_units(index: ResourceIndex, row: npt.NDArray[np.int64]) -> Res:
    """A request row as (GPUs, millicores, MB)."""
    memory = row[index.position(MEMORY)] / 1e6
    return np.array([row[index.position(GPU)], row[index.position(CPU)], memory], dtype=np.float64)


@dataclass(frozen=True, slots=True)
class KaiQueue:
    name: str
    parent: str | None
    priority: int
    quota: Res  # -1 = unlimited
    limit: Res  # -1 = unlimited
    weight: Res
    order: tuple[str, str]
    _allowed: Res = field(init=False, repr=False, compare=False)  # read on every queue comparison

    def __post_init__(self) -> None:
        allowed = np.where(self.limit == kai.UNLIMITED, np.inf, np.maximum(self.limit, 0.0))
        allowed.flags.writeable = False
        object.__setattr__(self, "_allowed", allowed)

    def max_allowed(self) -> Res:
        return self._allowed

    def deserved(self, total: Res) -> Res:
        return np.where(self.quota == kai.UNLIMITED, total, np.maximum(self.quota, 0.0))


def queue_of(obj: Mapping[str, Any]) -> KaiQueue:
    """No CRD defaults: a missing resource block means quota 0, limit 0, weight 0 (kai.md §3)."""
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    resources = spec.get("resources") or {}

    def field_of(key: str) -> Res:
        return np.array([float((resources.get(r) or {}).get(key) or 0) for r in RESOURCES], dtype=np.float64)

    priority = spec.get("priority")
    return KaiQueue(
        name=meta["name"],
        parent=spec.get("parentQueue") or None,
        priority=kai.DEFAULT_QUEUE_PRIORITY if priority is None else int(priority),
        quota=field_of("quota"),
        limit=field_of("limit"),
        weight=field_of("overQuotaWeight"),
        order=(meta.get("creationTimestamp") or "", meta.get("uid") or ""),
    )


@dataclass(slots=True)
class Member:
    pod: PodInfo
    leaf: str
    running: bool  # bound or running (holds resources)
    releasing: bool = False


@dataclass(slots=True)
class KaiJob:
    key: str
    namespace: str
    name: str
    queue: str
    priority: int
    preemptible: bool
    tree: GangTree
    topology: Mapping[str, str]
    order: tuple[str, str]
    obj: Mapping[str, Any] | None  # None: derived here, no object to write status to
    members: list[Member] = field(default_factory=list)

    def fresh(self) -> KaiJob:
        """This job without members: a session's own copy of a kept template (members change per cycle)."""
        return KaiJob(
            self.key, self.namespace, self.name, self.queue, self.priority, self.preemptible, self.tree,
            self.topology, self.order, self.obj,
        )  # fmt: skip

    def placed_counts(self) -> dict[str, int]:
        """Members per leaf that count towards the gang: holding resources and not releasing them. Upstream
        counts active allocated tasks (``pod_status.go`` ``activeAllocatedStatuses`` leaves out Releasing;
        ``allocation_info.go`` ``getNumOfTasksToAllocate``): a gang whose pods are being deleted is short."""
        counts: dict[str, int] = {}
        for m in self.members:
            if m.running and not m.releasing:
                counts[m.leaf] = counts.get(m.leaf, 0) + 1
        return counts

    def pending(self) -> list[Member]:
        return [m for m in self.members if not m.running and not m.releasing and not m.pod.gated]


def priority_of(class_name: str | None, classes: Mapping[str, int]) -> int:
    """PriorityClass value; KAI's own classes always exist; unresolved → 50 (kai.md §6)."""
    if class_name and class_name in classes:
        return classes[class_name]
    return kai.PRIORITY_CLASSES.get(class_name or "", kai.PRIORITY_CLASSES[kai.DEFAULT_PRIORITY_CLASS])


def preemptible(spec: Mapping[str, Any], priority: int) -> bool:
    given = spec.get("preemptibility")
    if given in (kai.Preemptibility.PREEMPTIBLE, kai.Preemptibility.NON_PREEMPTIBLE):
        return bool(given == kai.Preemptibility.PREEMPTIBLE)
    return priority < kai.NON_PREEMPTIBLE_PRIORITY


def job_of(pg: Mapping[str, Any], classes: Mapping[str, int], derived: bool = False) -> KaiJob:
    meta, spec = pg.get("metadata") or {}, pg.get("spec") or {}
    priority = priority_of(spec.get("priorityClassName"), classes)
    namespace = meta.get("namespace") or "default"
    topology = spec.get("topologyConstraint") or {}
    return KaiJob(
        key=f"{namespace}/{meta.get('name', '')}",
        namespace=namespace,
        name=meta.get("name", ""),
        queue=spec.get("queue") or kai.DEFAULT_QUEUE,
        priority=priority,
        preemptible=preemptible(spec, priority),
        tree=build_tree(
            _opt(spec.get("minMember")), _opt(spec.get("minSubGroup")), spec.get("subGroups") or []
        ),
        topology={k: str(v) for k, v in topology.items() if v},
        order=(meta.get("creationTimestamp") or "", meta.get("uid") or ""),
        obj=None if derived else pg,
    )


def _opt(value: Any) -> int | None:
    return None if value is None else int(value)


# ---------------------------------------------------------------- what a job needs next


def needed_members(job: KaiJob) -> list[Member] | None:
    """The pending members to place for the gang threshold (the next elastic extra if it is met), or
    ``None``."""
    pending = job.pending()
    by_leaf: dict[str, list[Member]] = {}
    for m in pending:
        by_leaf.setdefault(m.leaf, []).append(m)
    plan = shortfall(job.tree, job.placed_counts(), {leaf: len(ms) for leaf, ms in by_leaf.items()})
    if plan is None:
        return None
    if not any(plan.values()):
        return pending[:1]  # gang satisfied: elastic extras go one at a time, the job requeued after each
    return [m for leaf, count in sorted(plan.items()) for m in by_leaf[leaf][:count]]


def needed_members_count(job: KaiJob, members: list[Member]) -> int:
    """All of ``members`` are needed for an unmet gang; one is enough for elastic growth."""
    plan = shortfall(job.tree, job.placed_counts(), {})
    return 1 if plan is not None and not any(plan.values()) else len(members)


def shape_of(members: list[Member], minimum: int) -> object:
    """What decides whether a gang without topology fits: each member's request row and fit constraints."""
    return minimum, tuple((m.pod.requests.tobytes(), m.pod.constraints) for m in members)


# ---------------------------------------------------------------- pod-grouper (one rule: runtime.plugins.kai_grouper)


def jobset_pod_group(
    jobset: Mapping[str, Any], pod: PodInfo, class_exists: Callable[[str], bool]
) -> dict[str, Any] | None:
    """The JobSet grouper's PodGroup for ``pod`` of ``jobset`` (``kai_grouper``, the rule the runtime plugin
    renders too); ``None`` where KAI's grouper fails (an invalid ``batch-min-member``)."""
    meta = jobset.get("metadata") or {}
    spec = kai_grouper.pod_group_spec(
        meta.get("labels") or {},
        meta.get("annotations") or {},
        jobset.get("spec") or {},
        _pod_view(pod),
        class_exists,
    )
    if spec is None:
        return None
    name = kai_grouper.pod_group_name(meta.get("name", ""), meta.get("uid", ""))
    return {"metadata": {"name": name, "namespace": meta.get("namespace") or "default"}, "spec": spec}


def _pod_view(pod: PodInfo) -> dict[str, Any]:
    return {"metadata": {"labels": dict(pod.labels)}, "spec": {"priorityClassName": pod.priority_class_name}}


def leaf_of_jobset_pod(labels: Mapping[str, str]) -> str:
    rjob, index = labels.get(REPLICATED_JOB_LABEL), labels.get(JOB_INDEX_LABEL)
    return f"{rjob}-replica-{index}" if rjob and index is not None else ""


def default_pod_group(pod: PodInfo, class_exists: Callable[[str], bool]) -> dict[str, Any]:
    """The default grouper for a lone pod (its own top owner): ``minMember`` 1, and queue, priority class
    and preemptibility by the same rules as the JobSet grouper, read from the pod."""
    labels = dict(pod.labels)
    spec: dict[str, Any] = {
        "minMember": 1,
        "queue": kai_grouper.queue(labels, {}),
        "priorityClassName": kai_grouper.priority_class(labels, {}, pod.priority_class_name, class_exists),
    }
    if (chosen := kai_grouper.preemptibility(labels, {})) is not None:
        spec["preemptibility"] = chosen
    return {"metadata": {"name": f"pg-{pod.name}-{pod.uid}", "namespace": pod.namespace}, "spec": spec}


def jobsets_by_key(objs: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {f"{(o['metadata'].get('namespace') or 'default')}/{o['metadata']['name']}": o for o in objs}
