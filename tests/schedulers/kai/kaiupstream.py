"""KAI's test topologies (``pkg/scheduler/test_utils``: ``TestTopologyBasic``, ``jobs_fake``, ``nodes_fake``)
as wire dicts for the embedded KAI scheduler, so upstream action tables port case by case.

Upstream's defaults, reproduced: every task asks 1 pod slot, the job's GPUs, and 1 CPU and 1G memory unless
given (``resources_fake``; CPU numbers are passed as upstream passes them, as quantities in cores); a job's
``minAvailable`` is its task count; jobs are created oldest first in priority order (stable); nodes offer
20000 CPUs and 20G memory besides their GPUs; queues without a department sit under ``default``
(unlimited, over-quota weight -1, as ``addDefaultDepartmentIfNeeded`` builds it). Priorities map to KAI's
built-in classes (train 50, build-preemptible 75, build 100, inference 125).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from gangplane.api.scheduling import kai
from gangplane.clock import rfc3339
from gangplane.schedulers.base import ClusterView, CycleResult
from gangplane.schedulers.kai import KaiConfig, KaiScheduler
from gangplane.schedulers.kai.actions import ACTIONS
from gangplane.schedulers.kai.session import TASK_ORDER_LABEL, KaiSession, open_session
from gangplane.schedulers.kai.status import pending_reasons
from gangplane.schedulers.loop import plan_pass
from gangplane.store.catalog import JOBSETS, KAI_PODGROUPS, KAI_QUEUES, PRIORITY_CLASSES

Obj = dict[str, Any]
TRAIN, BUILD_PREEMPTIBLE, BUILD, INFERENCE = 50, 75, 100, 125
_CLASS = {value: name for name, value in kai.PRIORITY_CLASSES.items()}
T0 = 1_767_225_600.0


@dataclass
class Task:
    state: str = "Pending"  # Pending | Running | Releasing
    node: str = ""
    priority: int | None = None
    affinity: str = ""  # NodeAffinityNames (one node)
    gpus: float | None = None  # RequiredGPUs: this task's own GPU count
    subgroup: str = ""  # SubGroupName: the task's pod set


@dataclass
class Job:
    name: str
    gpus: float
    queue: str
    priority: int = TRAIN
    tasks: Sequence[Task] = (Task(),)
    cpu_millis: float = 0
    memory: float = 0
    min_available: int | None = None
    age_minutes: int = 0  # JobAgeInMinutes
    best_effort: bool = False  # IsBestEffortJob: no requests at all
    sub_groups: Sequence[
        Mapping[str, Any]
    ] = ()  # RootSubGroupSet: pod sets and sets (name, minMember, parent)


@dataclass
class Queue:
    name: str
    deserved: float = 0
    weight: float = 0
    limit: float = 0  # 0 = unlimited, as upstream's MaxAllowedGPUs
    parent: str = ""
    priority: int | None = None
    deserved_cpu: float = -1  # millicores
    deserved_memory: float = -1  # MB
    limit_cpu: float = -1
    limit_memory: float = -1


@dataclass
class Node:
    gpus: int
    cpu_millis: float = 20_000  # nodes_fake's "cpuMilliAllocatable", parsed as a quantity (cores)
    memory: float = 20e9


@dataclass
class Topology:
    name: str
    jobs: Sequence[Job]
    nodes: Mapping[str, Node | int]  # node -> GPUs, or a Node
    queues: Sequence[Queue]
    departments: Sequence[Queue] = ()
    expected: Mapping[str, str] = field(default_factory=dict)  # job -> status
    task_expected: Mapping[str, str] = field(default_factory=dict)  # task ("<job>-<i>") -> status
    evictions: int | None = None  # NumberOfCacheEvictions
    pipelined: int | None = None  # NumberOfPipelineActions (pipelined tasks)
    differs: str = ""
    rounds_until: int = 2  # integration tests: rounds before the expectations must hold ...
    rounds_after: int = 5  # ... and rounds they must keep holding (no allocate/evict loop)


def _node(name: str, spec: Node | int) -> Obj:
    spec = spec if isinstance(spec, Node) else Node(spec)
    alloc = {"cpu": f"{spec.cpu_millis:g}", "memory": f"{spec.memory:.0f}", "pods": "110"}  # as nodes_fake
    alloc["nvidia.com/gpu"] = str(spec.gpus)
    labels = {"kubernetes.io/hostname": name}
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": alloc}}


def _resource(quota: float, limit: float, weight: float) -> Obj:
    return {"quota": quota, "limit": limit, "overQuotaWeight": weight}


def _queue(q: Queue, parent: str | None) -> Obj:
    resources = {
        "gpu": _resource(q.deserved, q.limit or -1, q.weight),
        "cpu": _resource(q.deserved_cpu, q.limit_cpu, 1),
        "memory": _resource(q.deserved_memory, q.limit_memory, 1),
    }
    spec: Obj = {"resources": resources}
    if parent:
        spec["parentQueue"] = parent
    if q.priority is not None:
        spec["priority"] = q.priority
    return {
        "metadata": {"name": q.name, "uid": q.name, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": spec,
    }


def _requests(job: Job, task: Task) -> Obj:
    if job.best_effort:
        return {}
    gpus = job.gpus if task.gpus is None else task.gpus
    out: Obj = {"nvidia.com/gpu": f"{gpus:g}"} if gpus else {}
    out["cpu"] = f"{job.cpu_millis:g}" if job.cpu_millis else "1"  # resources_fake's defaults
    out["memory"] = f"{job.memory:.0f}" if job.memory else "1G"
    return out


def _pods(job: Job, stamp: str) -> list[Obj]:
    pods = []
    for i, task in enumerate(job.tasks):
        meta: Obj = {
            "name": f"{job.name}-{i}",
            "namespace": "ns",
            "uid": f"{job.name}-{i}",
            "creationTimestamp": stamp,
            "annotations": {kai.POD_GROUP_ANNOTATION: job.name},
        }
        if task.state == "Releasing":
            meta["deletionTimestamp"] = "2026-01-01T01:00:00Z"
        spec: Obj = {
            "schedulerName": kai.SCHEDULER_NAME,
            "containers": [{"name": "c", "resources": {"requests": _requests(job, task)}}],
        }
        if task.node and task.state != "Pending":  # upstream ignores a pending task's NodeName
            spec["nodeName"] = task.node
        labels = {TASK_ORDER_LABEL: str(task.priority)} if task.priority is not None else {}
        if task.subgroup:
            labels[kai.SUBGROUP_LABEL] = task.subgroup
        meta["labels"] = labels  # upstream's task Priority is the task-order label
        if task.affinity:
            spec["nodeSelector"] = {"kubernetes.io/hostname": task.affinity}
        phase = "Pending" if task.state == "Pending" else "Running"
        pods.append({"metadata": meta, "spec": spec, "status": {"phase": phase}})
    return pods


def objects(top: Topology) -> tuple[list[Obj], list[Obj], dict[Any, list[Obj]]]:
    """Nodes, pods and the watched objects of a topology."""
    ordered = sorted(top.jobs, key=lambda j: -j.priority)  # upstream sorts jobs stably by priority
    groups, pods = [], []
    for index, job in enumerate(ordered):
        minutes_ago = job.age_minutes or len(ordered) - index  # earlier in the sorted list = older
        stamp = rfc3339(T0 - 60.0 * minutes_ago)
        spec: Obj = {"queue": job.queue, "priorityClassName": _CLASS.get(job.priority, f"p{job.priority}")}
        if job.sub_groups:  # the gang is the SubGroup tree; the root asks nothing of its own
            spec["subGroups"] = [{k: v for k, v in g.items() if v is not None} for g in job.sub_groups]
        else:
            spec["minMember"] = job.min_available or len(job.tasks)
        meta = {"name": job.name, "namespace": "ns", "uid": job.name, "creationTimestamp": stamp}
        groups.append({"metadata": meta, "spec": spec})
        pods += _pods(job, stamp)
    departments = list(top.departments) or [Queue("default", -1, -1, -1)]
    queues = [_queue(d, None) for d in departments]
    queues += [_queue(q, q.parent or (None if top.departments else "default")) for q in top.queues]
    extra = sorted({j.priority for j in top.jobs} - set(_CLASS))
    classes = [{"metadata": {"name": f"p{value}"}, "value": value} for value in extra]
    watched = {KAI_PODGROUPS: groups, KAI_QUEUES: queues, JOBSETS: [], PRIORITY_CLASSES: classes}
    return [_node(n, g) for n, g in top.nodes.items()], pods, watched


class _Recording(KaiScheduler):
    session: KaiSession | None = None

    def cycle(self, view: ClusterView) -> CycleResult:
        session = open_session(view, self.config)
        for action in self.config.actions:
            ACTIONS[action](session)
        self.session = session
        return CycleResult(
            bindings=list(session.bindings),
            evictions=list(session.evictions),
            pending=pending_reasons(session),
        )


@dataclass
class Outcome:
    statuses: dict[str, str]  # job or task -> Running | Pending | Releasing | Pipelined | Binding
    evictions: list[str]
    bindings: dict[str, str]
    session: KaiSession


def run(top: Topology, actions: Sequence[str]) -> Outcome:
    nodes, pods, watched = objects(top)
    scheduler = _Recording(KaiConfig(actions=tuple(actions)))
    result = plan_pass(T0, nodes, pods, watched, {kai.SCHEDULER_NAME: scheduler})
    cycle = result.results[0][1]
    assert scheduler.session is not None
    evicted = [e.pod_key for e in cycle.evictions]
    bound = {b.pod_key: b.node for b in cycle.bindings}
    statuses = {}
    for job in top.jobs:
        for i, task in enumerate(job.tasks):
            key = f"ns/{job.name}-{i}"
            status = "Releasing" if key in evicted else "Binding" if key in bound else task.state
            if status == "Pending" and key in scheduler.session.pipelined_pods:
                status = "Pipelined"
            statuses[f"{job.name}-{i}"] = status
    for job in top.jobs:
        keys = [f"ns/{job.name}-{i}" for i in range(len(job.tasks))]
        if any(k in evicted for k in keys):
            statuses[job.name] = "Releasing"
        elif f"ns/{job.name}" in scheduler.session.pipelined:
            statuses[job.name] = "Pipelined"
        elif any(k in bound for k in keys):
            statuses[job.name] = "Binding"
        else:
            statuses[job.name] = job.tasks[0].state
    return Outcome(statuses, evicted, bound, scheduler.session)


def check(top: Topology, out: Outcome) -> None:
    """``MatchExpectedAndRealTasks`` on job status, plus the cache's eviction and pipeline counts."""
    assert {j: out.statuses[j] for j in top.expected} == dict(top.expected), out.statuses
    assert {t: out.statuses[t] for t in top.task_expected} == dict(top.task_expected), out.statuses
    if top.evictions is not None:
        assert len(out.evictions) == top.evictions, out.evictions


def check_case(top: Topology, actions: Sequence[str], skipped: Mapping[str, str]) -> None:
    """One table row: skipped with its reason, else run and checked."""
    if top.name in skipped:
        pytest.skip(skipped[top.name])
    check(top, run(top, actions))


INTEGRATION_ACTIONS = ("allocate", "reclaim", "preempt")


def _next_round(top: Topology, out: Outcome) -> Topology:
    """``runSchedulerOneRound``'s feedback: evicted and pipelined pods come back pending, bound ones run."""
    jobs = []
    for job in top.jobs:
        tasks = []
        for i, task in enumerate(job.tasks):
            status = out.statuses[f"{job.name}-{i}"]
            if status in ("Releasing", "Pipelined"):
                tasks.append(replace(task, state="Pending", node=""))
            elif status == "Binding":
                tasks.append(replace(task, state="Running", node=out.bindings[f"ns/{job.name}-{i}"]))
            else:
                tasks.append(task)
        jobs.append(replace(job, tasks=tasks))
    return replace(top, jobs=jobs)


def check_integration(top: Topology, skipped: Mapping[str, str]) -> None:
    """``integration_tests_utils.RunTest``: ``rounds_until`` rounds of every action with the results fed
    back, then ``rounds_after`` more, the expectations holding after each of them."""
    if top.name in skipped:
        pytest.skip(skipped[top.name])
    for _ in range(top.rounds_until):
        top = _next_round(top, run(top, INTEGRATION_ACTIONS))
    for _ in range(top.rounds_after):
        out = run(top, INTEGRATION_ACTIONS)
        check(top, out)
        top = _next_round(top, out)
