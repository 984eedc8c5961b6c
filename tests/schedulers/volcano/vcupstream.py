"""Builders shaped like Volcano's own test helpers (``pkg/scheduler/util/test_utils.go``) and a runner shaped
like ``uthelper.TestCommonStruct``, so upstream action and plugin tables port case by case.

Each builder returns the wire dict our scheduler reads; ``run`` opens one session over them, runs the named
actions in order and returns what upstream's checks compare: binds (pod -> node), evictions, pipelined jobs
and the session's PodGroup phases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gangplane.api.scheduling import volcano as vc
from gangplane.schedulers.base import ClusterView, CycleResult
from gangplane.schedulers.loop import plan_pass
from gangplane.schedulers.volcano import VolcanoConfig, VolcanoScheduler
from gangplane.schedulers.volcano.book import SharePolicy
from gangplane.schedulers.volcano.config import Action
from gangplane.schedulers.volcano.scheduler import ACTIONS, close
from gangplane.schedulers.volcano.session import Session, open_session
from gangplane.store.catalog import HYPERNODES, PRIORITY_CLASSES, VOLCANO_PODGROUPS, VOLCANO_QUEUES

Obj = dict[str, Any]
PREEMPTABLE = "volcano.sh/preemptable"


def res(cpu: str | None = None, memory: str | None = None, **scalars: str) -> Obj:
    """``api.BuildResourceList(cpu, memory, scalars...)``; ``pods`` etc. as keyword arguments."""
    out: Obj = {}
    if cpu is not None:
        out["cpu"] = cpu
    if memory is not None:
        out["memory"] = memory
    out.update({name.replace("__", "/").replace("_", "."): q for name, q in scalars.items()})
    return out


def node(name: str, alloc: Obj, labels: Mapping[str, str] | None = None) -> Obj:
    """``util.BuildNode``; Ready, as upstream's session takes every node the cache holds."""
    return {
        "metadata": {"name": name, "labels": dict(labels or {})},
        "status": {
            "allocatable": dict(alloc),
            "capacity": dict(alloc),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    ns: str,
    name: str,
    node_name: str,
    phase: str,
    req: Obj,
    group: str,
    labels: Mapping[str, str] | None = None,
    selector: Mapping[str, str] | None = None,
    *,
    priority: int | None = None,
    preemption_policy: str | None = None,
    created: int = 0,
    deleting: bool = False,
) -> Obj:
    """``util.BuildPod`` (and its ``WithPriority``/``WithPreemptionPolicy`` variants)."""
    spec: Obj = {
        "schedulerName": vc.SCHEDULER_NAME,
        "containers": [{"name": "c", "resources": {"requests": dict(req)}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    if selector:
        spec["nodeSelector"] = dict(selector)
    if priority is not None:
        spec["priority"] = priority
    if preemption_policy is not None:
        spec["preemptionPolicy"] = preemption_policy
    meta = {
        "name": name,
        "namespace": ns,
        "uid": f"{ns}-{name}",
        "labels": dict(labels or {}),
        "annotations": {vc.GROUP_NAME_ANNOTATION: group},
        "creationTimestamp": f"2026-01-01T00:00:{created:02d}Z",
    }
    if deleting:  # upstream's Releasing task status
        meta["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def pod_group(
    name: str,
    ns: str,
    queue: str,
    min_member: int,
    task_min_member: Mapping[str, int] | None,
    phase: str,
    priority_class: str = "",
    *,
    min_resources: Obj | None = None,
) -> Obj:
    """``util.BuildPodGroup`` / ``BuildPodGroupWithPrio`` / ``BuildPodGroupWithMinResources``."""
    spec: Obj = {"queue": queue, "minMember": min_member}
    if task_min_member:
        spec["minTaskMember"] = dict(task_min_member)
    if priority_class:
        spec["priorityClassName"] = priority_class
    if min_resources is not None:
        spec["minResources"] = dict(min_resources)
    meta = {"name": name, "namespace": ns, "uid": f"{ns}-{name}"}
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def queue(
    name: str,
    weight: int = 1,
    capability: Obj | None = None,
    *,
    state: str = "Open",
    priority: int | None = None,
    deserved: Obj | None = None,
    guarantee: Obj | None = None,
    parent: str | None = None,
) -> Obj:
    """``util.BuildQueue`` / ``BuildQueueWithState`` / ``BuildQueueWithPriorityAndResourcesQuantity``."""
    spec: Obj = {"weight": weight}
    if capability:
        spec["capability"] = dict(capability)
    if priority is not None:
        spec["priority"] = priority
    if deserved:
        spec["deserved"] = dict(deserved)
    if guarantee:
        spec["guarantee"] = {"resource": dict(guarantee)}
    if parent:
        spec["parent"] = parent
    return {"metadata": {"name": name, "uid": f"uid-{name}"}, "spec": spec, "status": {"state": state}}


def priority_class(name: str, value: int, preemption_policy: str | None = None) -> Obj:
    obj: Obj = {"metadata": {"name": name}, "value": value}
    if preemption_policy:
        obj["preemptionPolicy"] = preemption_policy
    return obj


@dataclass
class Case:
    """One row of an upstream table: the objects, and the expectations upstream's ``CheckAll`` compares."""

    name: str
    pods: Sequence[Obj]
    nodes: Sequence[Obj]
    pod_groups: Sequence[Obj] = ()
    queues: Sequence[Obj] = ()
    priority_classes: Sequence[Obj] = ()
    evicted: Sequence[str] | None = None  # ExpectEvicted (order-free); None = not checked
    evict_num: int | None = None  # ExpectEvictNum
    binds: Mapping[str, str] | None = None  # ExpectBindMap
    binds_num: int | None = None  # ExpectBindsNum
    pipelined: Mapping[str, Sequence[str]] | None = None  # ExpectPipeLined: job -> nodes (only keys checked)
    status: Mapping[str, str] = field(default_factory=dict)  # ExpectStatus: job -> phase
    differs: str = ""  # why the expectations above are ours, not upstream's (a documented difference)


@dataclass
class Outcome:
    binds: dict[str, str]
    evicted: list[str]
    pipelined: set[str]
    phases: dict[str, str]  # the session's PodGroup phases after the actions (``CheckPGStatus``)
    result: CycleResult
    session: Session | None = None


class _Recording(VolcanoScheduler):
    """The scheduler with the session kept, so pipelined jobs can be read as upstream's checks do."""

    session: Session | None = None

    def cycle(self, view: ClusterView) -> CycleResult:
        session = open_session(view, self.config)
        for action in self.config.actions:
            ACTIONS[action](session)
        self.session = session
        return close(session, view)


def run(case: Case, actions: Sequence[Action], **config: Any) -> Outcome:
    """Open a session over the case, run ``actions`` in order, close it; ``config`` overrides
    ``VolcanoConfig`` (upstream's tests enable neither ``overcommit`` nor a node-order plugin)."""
    settings: dict[str, Any] = {"overcommit_factor": None, "share_policy": SharePolicy.PROPORTION}
    scheduler = _Recording(VolcanoConfig(actions=tuple(actions), **{**settings, **config}))
    objects = {
        VOLCANO_PODGROUPS: list(case.pod_groups),
        VOLCANO_QUEUES: list(case.queues),
        HYPERNODES: [],
        PRIORITY_CLASSES: list(case.priority_classes),
    }
    result = plan_pass(1_767_225_600.0, case.nodes, case.pods, objects, {"volcano": scheduler})
    cycle = result.results[0][1]
    assert scheduler.session is not None
    phases = {key: str(job.phase) for key, job in scheduler.session.jobs.items()}
    return Outcome(
        binds={b.pod_key: b.node for b in cycle.bindings},
        evicted=[e.pod_key for e in cycle.evictions],
        pipelined=set(scheduler.session.pipelined),
        phases=phases,
        result=cycle,
        session=scheduler.session,
    )


def check(case: Case, out: Outcome) -> None:
    """Upstream's ``CheckAll``: every expectation the case states."""
    if case.evict_num is not None:
        assert len(out.evicted) == case.evict_num, out.evicted
    if case.evicted is not None:
        assert sorted(out.evicted) == sorted(case.evicted)
    if case.binds is not None:
        assert out.binds == dict(case.binds)
    if case.binds_num is not None:
        assert len(out.binds) == case.binds_num, out.binds
    if case.pipelined is not None:
        assert out.pipelined == set(case.pipelined)
    for job, phase in case.status.items():
        assert out.phases.get(job) == phase, out.phases
