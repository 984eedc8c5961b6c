"""Volcano jobs: a PodGroup with its member pods (tasks), and the gang counts the ``gang`` plugin reads.

Built once per cycle from wire dicts (volcano.md §2, §5, §6; upstream ``pkg/scheduler/api/job_info.go``).
Membership is the pod annotation ``scheduling.k8s.io/group-name`` in the PodGroup's namespace plus
``spec.schedulerName: volcano``. Pure: no store, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from gangplane.api.scheduling import volcano as vc
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.resources import PODS, ResourceIndex, Vector


class TaskStatus(StrEnum):
    PENDING = "Pending"
    ALLOCATED = "Allocated"  # placed in this cycle, bind pending
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


HOLDING = frozenset({TaskStatus.ALLOCATED, TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.RELEASING})
"""Statuses whose requests count against a node and a queue."""
READY = frozenset({TaskStatus.ALLOCATED, TaskStatus.BOUND, TaskStatus.RUNNING, TaskStatus.SUCCEEDED})


@dataclass(slots=True)
class Task:
    pod: PodInfo
    status: TaskStatus
    role: str = ""
    best_effort: bool = False  # no requests besides the pod slot (upstream ``InitResreq.IsEmpty``)


@dataclass(frozen=True, slots=True)
class Topology:
    """``networkTopology`` after tier-name translation: hard with a tier, or no constraint at all."""

    highest_tier: int
    soft: bool = False


@dataclass(frozen=True, slots=True)
class _Tally:
    ready: int  # ``ready_count``
    valid: int  # tasks that count towards ``JobValid``
    work: bool  # a pending, ungated task that needs resources (what allocate places)


def _count(tasks: list[Task]) -> _Tally:
    ready = valid = 0
    work = False
    for task in tasks:
        if task.status in READY:
            ready += 1
            valid += 1
        elif task.status == TaskStatus.PENDING:
            valid += 1
            ready += task.best_effort
            work = work or not (task.best_effort or task.pod.gated)
    return _Tally(ready, valid, work)


@dataclass(slots=True)
class Job:
    key: str  # "<namespace>/<podgroup>"
    namespace: str
    name: str
    queue: str
    priority: int
    min_member: int
    min_task_member: Mapping[str, int]
    min_resources: Vector | None
    topology: Topology | None
    phase: str
    order: tuple[str, str]  # creationTimestamp, uid
    obj: Mapping[str, Any]
    tasks: list[Task] = field(default_factory=list)
    synthetic: bool = False  # an automatic PodGroup (no object to write status to)
    revision: tuple[str, ...] = ()  # resourceVersions of the PodGroup and its pods; () when one is unknown
    _shape: tuple[object, ...] | None = field(default=None, compare=False, repr=False)  # ``shape()``, kept
    _tally: _Tally | None = field(default=None, compare=False, repr=False)  # ``tally()``, kept

    def set_status(self, task: Task, status: TaskStatus) -> None:
        """The one way a task's status changes once the job is built (it forgets what it derived from the
        statuses: the shape and the tally)."""
        task.status = status
        self._shape = None
        self._tally = None

    def count(self, statuses: frozenset[TaskStatus]) -> int:
        return sum(1 for t in self.tasks if t.status in statuses)

    def tally(self) -> _Tally:
        """The gang counts, taken in one walk over the tasks and kept until a status changes: every action
        asks them of every job it looks at, pass after pass, and most jobs' statuses do not move."""
        if self._tally is None:
            self._tally = _count(self.tasks)
        return self._tally

    def ready_count(self) -> int:
        """Allocated/Bound/Running/Succeeded plus pending best-effort tasks (gang ``JobReady``)."""
        return self.tally().ready

    def ready(self) -> bool:
        return self.ready_count() >= self.min_member and self._roles_ready()

    def _roles_ready(self) -> bool:
        return not self.role_deficits()

    def role_deficits(self) -> dict[str, int]:
        """Per role, how many more tasks ``minTaskMember`` needs (``CheckTaskReady``: occupied = ready tasks
        plus pending best-effort ones; skipped when ``minMember`` < the sum of the role minimums)."""
        if not self.min_task_member or self.min_member < sum(self.min_task_member.values()):
            return {}
        occupied = [
            t.role
            for t in self.tasks
            if t.status in READY or (t.status == TaskStatus.PENDING and t.best_effort)
        ]
        short = {role: need - occupied.count(role) for role, need in self.min_task_member.items()}
        return {role: n for role, n in short.items() if n > 0}

    def valid_reason(self) -> str | None:
        """``JobValid``: enough tasks exist to ever reach the gang minimum (``NotEnoughTasks``)."""
        valid = self.tally().valid
        if valid < self.min_member:
            return f"{valid}/{self.min_member} pods of the gang exist"
        return None

    def has_work(self) -> bool:
        """A pending, ungated task that needs resources: what allocate would place."""
        return self.tally().work

    def pending(self) -> list[Task]:
        return [t for t in self.tasks if t.status == TaskStatus.PENDING and not t.pod.gated]

    def holding(self) -> list[Task]:
        return [t for t in self.tasks if t.status in HOLDING]

    def allocated(self, width: int) -> Vector:
        out = np.zeros(width, dtype=np.int64)
        for task in self.holding():
            out += task.pod.requests
        return out

    def shape(self) -> tuple[object, ...]:
        """What decides placement besides the cluster: equal shapes in one queue fail alike within an action."""
        if self._shape is None:
            pending = tuple((t.pod.requests.tobytes(), t.pod.constraints) for t in self.pending())
            missing = self.min_member - self.ready_count()
            self._shape = (self.queue, self.priority, self.topology, missing, pending)
        return self._shape

    def starving(self) -> bool:
        return self.ready_count() < self.min_member


# ---------------------------------------------------------------- building from wire dicts


def task_status(pod: Mapping[str, Any], info: PodInfo) -> TaskStatus:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return TaskStatus.RELEASING
    if info.phase in ("Succeeded", "Failed"):
        return TaskStatus(info.phase)
    if info.phase == "Running":
        return TaskStatus.RUNNING
    return TaskStatus.BOUND if info.node_name else TaskStatus.PENDING


def group_key(pod: Mapping[str, Any]) -> str | None:
    """``<namespace>/<group-name>`` of a Volcano pod, else ``None``."""
    meta = pod.get("metadata") or {}
    name = (meta.get("annotations") or {}).get(vc.GROUP_NAME_ANNOTATION)
    return f"{meta.get('namespace') or 'default'}/{name}" if name else None


def new_task(pod: Mapping[str, Any], info: PodInfo, index: ResourceIndex) -> Task:
    requests = info.requests
    best_effort = int(np.count_nonzero(requests)) == int(requests[index.position(PODS)] != 0)
    return Task(info, task_status(pod, info), role_of(info), best_effort)


def renew_task(was: Task | None, pod: Mapping[str, Any], info: PodInfo, index: ResourceIndex) -> Task:
    """``new_task`` of a pod whose task ``was`` built over the same ``index``: ``best_effort``, a count over
    the requests, is taken from ``was`` when the requests are the same (by identity, else dtype and bytes)."""
    if was is None or not _same_row(was.pod.requests, info.requests):
        return new_task(pod, info, index)
    return Task(info, task_status(pod, info), role_of(info), was.best_effort)


def _same_row(a: Vector, b: Vector) -> bool:
    return a is b or (a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes())


def role_of(info: PodInfo) -> str:
    return info.annotations.get(vc.TASK_SPEC_KEY) or info.labels.get(vc.TASK_SPEC_KEY) or ""


def min_resources_vector(index: ResourceIndex, given: Mapping[str, Any] | None) -> Vector | None:
    """``minResources`` over ``index`` with the pods column cleared; names outside the index are dropped
    (a resource no node offers and no pod asks for cannot change a comparison)."""
    if given is None:
        return None
    known = {name: q for name, q in given.items() if name in index and name != PODS}
    return index.vector(known)


def topology_of(spec: Mapping[str, Any], tier_names: Mapping[str, int], root_tier: int) -> Topology | None:
    """Hard needs a tier (after name translation); soft is hard up to the virtual cluster root (v1.15)."""
    given = spec.get("networkTopology") or {}
    if not given:
        return None
    if given.get("mode") == vc.NetworkTopologyMode.SOFT:
        return Topology(root_tier, soft=True)
    tier = given.get("highestTierAllowed")
    if tier is None and (name := given.get("highestTierName")) is not None:
        tier = tier_names.get(name)
    return None if tier is None else Topology(int(tier))


def new_job(
    pg: Mapping[str, Any],
    index: ResourceIndex,
    priority: int,
    tier_names: Mapping[str, int],
    root_tier: int,
) -> Job:
    meta, spec = pg.get("metadata") or {}, pg.get("spec") or {}
    namespace = meta.get("namespace") or "default"
    return Job(
        key=f"{namespace}/{meta.get('name', '')}",
        namespace=namespace,
        name=meta.get("name", ""),
        queue=spec.get("queue") or vc.DEFAULT_QUEUE,
        priority=priority,
        min_member=int(spec.get("minMember") or 0),
        min_task_member=dict(spec.get("minTaskMember") or {}),
        min_resources=min_resources_vector(index, spec.get("minResources")),
        topology=topology_of(spec, tier_names, root_tier),
        phase=phase_of(pg),
        order=order_of(pg),
        obj=pg,
    )


def renew_job(old: Job, pg: Mapping[str, Any], priority: int, tasks: list[Task]) -> Job:
    """``new_job`` of ``pg`` with ``tasks``, for a PodGroup whose spec, name and creation are those ``old``
    was parsed from under the same context: what ``new_job`` reads from them is taken from ``old``, only the
    phase and the object are read again. A new job, not ``old`` changed in place (a close's ``status.Wrote``
    tells a job by its identity)."""
    return Job(
        key=old.key,
        namespace=old.namespace,
        name=old.name,
        queue=old.queue,
        priority=priority,
        min_member=old.min_member,
        min_task_member=old.min_task_member,
        min_resources=old.min_resources,
        topology=old.topology,
        phase=phase_of(pg),
        order=old.order,
        obj=pg,
        tasks=tasks,
    )


def same_group(old: Job, pg: Mapping[str, Any]) -> bool:
    """Is ``pg`` the PodGroup ``old`` was parsed from but for its status: not an automatic one, the same
    spec (a status write copies the object, not its spec, so the same dict answers at once; an equal one is
    as good), creation and uid?"""
    spec, was = pg.get("spec"), old.obj.get("spec")
    return not old.synthetic and (spec is was or spec == was) and order_of(pg) == old.order


def phase_of(pg: Mapping[str, Any]) -> str:
    """A PodGroup's phase as a job holds it (Pending until a status says otherwise)."""
    return (pg.get("status") or {}).get("phase") or vc.PodGroupPhase.PENDING


def order_of(pg: Mapping[str, Any]) -> tuple[str, str]:
    """A job's ``order``: its PodGroup's creationTimestamp and uid."""
    meta = pg.get("metadata") or {}
    return (meta.get("creationTimestamp") or "", meta.get("uid") or "")
