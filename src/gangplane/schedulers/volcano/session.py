"""One Volcano scheduling session: the cycle-local copy of the cluster the actions read and change.

``open_session`` copies state the way Volcano's ``OpenSession`` does (volcano.md §5): Ready nodes only, jobs
need a PodGroup whose queue exists, job priority from its PriorityClass, queue entitlements from the share
plugin, the HyperNode tree. Actions then change the snapshot (tentative placements, victims) and record
bindings, evictions and per-job messages here; nothing is written until the shell applies the result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np

from gangplane.api.scheduling import volcano as vc
from gangplane.schedulers.base import ClusterView, Eviction
from gangplane.schedulers.core.classes import PriorityClasses, priority_classes
from gangplane.schedulers.core.evicting import Evicting
from gangplane.schedulers.core.gang import Binding
from gangplane.schedulers.core.objects import (
    BROKEN_INPUT,
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    PodInfo,
    pod_info,
    pod_key,
)
from gangplane.schedulers.core.resources import PODS, ResourceIndex, Vector
from gangplane.schedulers.core.snapshot import Snapshot
from gangplane.schedulers.volcano import jobs as jb
from gangplane.schedulers.volcano import queues as qs
from gangplane.schedulers.volcano.book import QueueBook
from gangplane.schedulers.volcano.config import VolcanoConfig
from gangplane.schedulers.volcano.hypernodes import HyperNodeTree, build_tree
from gangplane.schedulers.volcano.jobs import Job, TaskStatus
from gangplane.schedulers.volcano.kept import Kept
from gangplane.schedulers.volcano.memo import Memo, PodFacts
from gangplane.schedulers.volcano.proportion import QueuePolicy
from gangplane.schedulers.volcano.vec import Vec
from gangplane.store.catalog import HYPERNODES, PRIORITY_CLASSES, VOLCANO_PODGROUPS, VOLCANO_QUEUES
from gangplane.store.catalog import PODS as PODS_TYPE

_NOT_READY = frozenset({NOT_READY_TAINT, UNREACHABLE_TAINT})


@dataclass(slots=True)
class Session:
    config: VolcanoConfig
    index: ResourceIndex
    snapshot: Snapshot
    book: QueueBook
    jobs: Mapping[str, Job]  # in key order
    tree: HyperNodeTree
    queue_objs: Mapping[str, Mapping[str, Any]]
    bindings: list[Binding] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    now: float = 0.0
    messages: dict[str, str] = field(default_factory=dict)  # job key -> why it is not (fully) placed
    pipelined: set[str] = field(default_factory=set)
    inqueue_reasons: dict[str, str] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)  # job key -> why the job is not in the session
    victim_units: dict[str, list[Any]] = field(default_factory=dict)  # job key -> its units while they stand
    unit_requests: dict[int, tuple[Any, Vec]] = field(default_factory=dict)  # victim units' requests by id
    kept: Kept | None = None  # the jobs kept across passes with their indexes (``kept.py``), if any
    touched: set[str] = field(default_factory=set)  # jobs whose phase or a task status this session changed
    eligible: dict[str, bool] = field(default_factory=dict)  # allocate's ``candidates`` answers
    evicted: dict[str, tuple[str, str]] = field(
        default_factory=dict
    )  # pod key -> (uid, job key), evicted now

    def qvec(self, row: Vector) -> Vec:
        """A request row as a queue-math vector: float, the ``pods`` column cleared."""
        out: Vec = row.astype(np.float64)
        out[self.index.position(PODS)] = 0.0
        return out

    def drf_share(self, job: Job) -> float:
        """Dominant share of the job's allocation in the cluster (``drf`` JobOrder)."""
        if not any(t.status in jb.HOLDING for t in job.tasks):
            return 0.0  # nothing allocated (most waiting jobs): no vector math
        total = self.book.total
        used = self.qvec(job.allocated(len(self.index)))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(total > 0, used / total, 0.0)
        return float(np.max(ratios, initial=0.0))

    def job_order(self, job: Job) -> tuple[int, int, float, tuple[str, str]]:
        """priority desc → not-ready first → DRF share → creation time → UID (volcano.md §6). In a kept
        session a job the session has not touched is ordered as it was parsed (``Kept.order``)."""
        if self.kept is None or job.key in self.touched:
            return self.fresh_order(job)
        return self.kept.order(job, self.fresh_order)

    def fresh_order(self, job: Job) -> tuple[int, int, float, tuple[str, str]]:
        return (-job.priority, int(job.ready()), self.drf_share(job), job.order)

    def bind(self, job: Job, task: jb.Task, row: int) -> None:
        job.set_status(task, TaskStatus.ALLOCATED)
        self.touched.add(job.key)
        self.victim_units.pop(job.key, None)
        self.bindings.append(Binding(task.pod.key, self.snapshot.nodes[row].name))
        self.book.allocate(job.queue, self.qvec(task.pod.requests))


def _total(snapshot: Snapshot) -> Vec:
    """Allocatable of Ready nodes (Volcano copies only Ready nodes), ``pods`` cleared."""
    ready = [i for i, n in enumerate(snapshot.nodes) if not any(t.key in _NOT_READY for t in n.taints)]
    total: Vec = snapshot.allocatable[ready].sum(axis=0).astype(np.float64)
    total[snapshot.index.position(PODS)] = 0.0
    return total


def _priority(pg: Mapping[str, Any], classes: Mapping[str, int], members: Sequence[PodInfo]) -> int:
    name = (pg.get("spec") or {}).get("priorityClassName")
    if name and name in classes:
        return classes[name]
    return max((p.priority for p in members), default=0)


def auto_group_name(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"podgroup-{meta.get('uid') or meta.get('name', '')}"


def _auto_group(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The PodGroup vc-controller-manager would create for a Volcano pod without one (minMember 1)."""
    meta = pod.get("metadata") or {}
    queue = (meta.get("annotations") or {}).get(vc.QUEUE_NAME_ANNOTATION) or vc.DEFAULT_QUEUE
    group = {"name": auto_group_name(pod), "namespace": meta.get("namespace") or "default"}
    return {"metadata": group, "spec": {"minMember": 1, "queue": queue}, "status": {"phase": "Inqueue"}}


def open_session(
    view: ClusterView, config: VolcanoConfig, memo: Memo | None = None, evicting: Evicting | None = None
) -> Session:
    """``memo`` keeps parsed jobs between sessions (one scheduler's own); ``None`` parses every object.
    ``evicting``: the pods this scheduler evicted whose deletion is still being written (Releasing)."""
    snapshot = view.snapshot
    index = snapshot.index
    tree = build_tree(view.objects_of(HYPERNODES), snapshot.nodes)
    queue_objs = dict(qs.with_builtin_queues(view.objects_of(VOLCANO_QUEUES)))
    memo = memo or Memo()
    policies, broken_queues = _policies(queue_objs, index, memo)
    for name in broken_queues:
        del queue_objs[name]
    jobs, left_out = _jobs(view, config, tree, queue_objs, broken_queues, memo, evicting)
    demands = qs.demands(jobs.values(), len(index), index.position(PODS), memo.demand)
    total = _total(snapshot)
    book = QueueBook(index.names, total, policies, demands, config.share_policy, config.hierarchical)
    session = Session(config, index, snapshot, book, jobs, tree, queue_objs, now=view.now)
    session.left_out = left_out
    return session


def _policies(
    queue_objs: Mapping[str, Mapping[str, Any]], index: ResourceIndex, memo: Memo
) -> tuple[list[QueuePolicy], dict[str, str]]:
    """Queue policies; a malformed Queue is set aside (its jobs wait with the reason), not the session."""
    policies, broken = [], {}
    for name, obj in queue_objs.items():
        try:
            policies.append(memo.policy(obj, index, partial(qs.policy_of, obj, index)))
        except BROKEN_INPUT as err:
            broken[name] = f"queue {name} is malformed: {err}"
    return policies, broken


def _pod_info(
    view: ClusterView, pod: Mapping[str, Any], pending: Mapping[str, PodInfo], key: str = ""
) -> PodInfo | None:
    """``key``: the pod's key where the caller has it."""
    key = key or pod_key(pod)
    found = pending.get(key)
    if found is not None:
        return found
    if (counted := view.snapshot.pod(key)) is not None:
        return _as_bound(view, counted)
    try:
        return pod_info(dict(pod), view.snapshot.index, group_of=jb.group_key)
    except KeyError:  # a finished pod asking for a resource no node offers any more
        return None


def _as_bound(view: ClusterView, info: PodInfo) -> PodInfo:
    """A pod the snapshot counts on a node is bound for the session, though its ``nodeName`` may still be
    empty: the loop assumed it while its binding is written (upstream's cache holds an assumed task on its
    node). Read as pending, it was placed a second time and the cycle failed."""
    row = None if info.node_name else view.snapshot.location(info.key)
    return info if row is None else replace(info, node_name=view.snapshot.nodes[row].name)


def _members(
    view: ClusterView, config: VolcanoConfig, memo: Memo
) -> dict[str, list[tuple[Mapping[str, Any], PodInfo]]]:
    """Each job's pods with their infos, in view order. A pod's scheduler name, key and job key are read once
    per pod object (``Memo.pods``, by identity: the view's objects are read-only, a changed pod is a new
    object, and each is held there so its id is not reused); its info is looked up every session."""
    pending = {p.key: p for p in view.pending}
    members: dict[str, list[tuple[Mapping[str, Any], PodInfo]]] = {}
    last_pods, last_facts = memo.pods, memo.pod_facts
    pods, facts_of = dict[int, Mapping[str, Any]](), dict[int, PodFacts]()
    for pod in view.objects_of(PODS_TYPE):
        ident = id(pod)
        facts = last_facts.get(ident) if last_pods.get(ident) is pod else None
        if facts is None:
            facts = ((pod.get("spec") or {}).get("schedulerName") or "", "", "")
        if facts[0] in config.scheduler_names:
            facts = _member(view, pod, facts, (pending, members))
        pods[ident], facts_of[ident] = pod, facts
    memo.pods, memo.pod_facts = pods, facts_of
    return members


def _member(
    view: ClusterView,
    pod: Mapping[str, Any],
    facts: PodFacts,
    into: tuple[Mapping[str, PodInfo], dict[str, list[tuple[Mapping[str, Any], PodInfo]]]],
) -> PodFacts:
    """Add one of this scheduler's pods to its job's members (unless it has no info: ``into`` holds the
    pending pods and the members); its facts with the key and job key read (the job key only once the pod
    has an info, as before)."""
    pending, members = into
    scheduler, key, group = facts
    key = key or pod_key(pod)
    info = _pod_info(view, pod, pending, key)
    if info is not None:
        group = group or group_of(pod)
        members.setdefault(group, []).append((pod, info))
    return facts if facts[1:] == (key, group) else (scheduler, key, group)


def group_of(pod: Mapping[str, Any]) -> str:
    """The job key of a Volcano pod: its annotated PodGroup, else the automatic one."""
    meta = pod.get("metadata") or {}
    return jb.group_key(pod) or f"{meta.get('namespace') or 'default'}/{auto_group_name(pod)}"


def _jobs(
    view: ClusterView,
    config: VolcanoConfig,
    tree: HyperNodeTree,
    queue_objs: Mapping[str, Mapping[str, Any]],
    broken_queues: Mapping[str, str],
    memo: Memo,
    evicting: Evicting | None = None,
) -> tuple[dict[str, Job], dict[str, str]]:
    classes = priority_classes(view.objects_of(PRIORITY_CLASSES))
    context = (view.snapshot.index, tuple(sorted(tree.tier_names.items())), tree.root_tier)
    members = _members(view, config, memo)
    groups = {_key(g): g for g in view.objects_of(VOLCANO_PODGROUPS)}
    synthetic = set()
    for key, pods in members.items():
        if key not in groups and pods and jb.group_key(pods[0][0]) is None:
            groups[key] = _auto_group(pods[0][0])
            synthetic.add(key)
    jobs: dict[str, Job] = {}
    left_out: dict[str, str] = {}
    for key in sorted(groups):
        job = _job(view, tree, groups[key], members.get(key, []), classes, (memo, key, context))
        if isinstance(job, str):
            left_out[key] = job
            continue
        job.synthetic = key in synthetic
        mark_evicting(job, evicting)
        if job.queue in broken_queues:
            left_out[key] = broken_queues[job.queue]
        elif job.queue not in queue_objs:
            left_out[key] = f"queue {job.queue} does not exist"
        else:
            jobs[key] = job
    for key in sorted(set(members) - set(groups)):
        left_out[key] = f"PodGroup {key} does not exist"
    return jobs, left_out


def _job(
    view: ClusterView,
    tree: HyperNodeTree,
    pg: Mapping[str, Any],
    pods: Sequence[tuple[Mapping[str, Any], PodInfo]],
    classes: PriorityClasses,
    kept: tuple[Memo, str, tuple[object, ...]],
) -> Job | str:
    """The job of one PodGroup, or why it cannot be scheduled (a malformed PodGroup or PriorityClass holds
    back this job only). ``kept``: the memo, the job key and what else its parse depends on."""
    if (problem := classes.problem((pg.get("spec") or {}).get("priorityClassName"))) is not None:
        return problem
    memo, key, context = kept
    index = view.snapshot.index
    try:
        priority = _priority(pg, classes.values, [i for _, i in pods])
        return memo.job(
            pg, key, pods, (priority, *context), lambda: _new_job(pg, pods, index, priority, tree)
        )
    except BROKEN_INPUT as err:
        return f"PodGroup {_key(pg)} is malformed: {err}"


def _new_job(
    pg: Mapping[str, Any],
    pods: Sequence[tuple[Mapping[str, Any], PodInfo]],
    index: ResourceIndex,
    priority: int,
    tree: HyperNodeTree,
) -> Job:
    job = jb.new_job(pg, index, priority, tree.tier_names, tree.root_tier)
    job.tasks = sorted((jb.new_task(p, i, index) for p, i in pods), key=_task_order)
    return job


def mark_evicting(job: Job, evicting: Evicting | None) -> None:
    """A task whose eviction this scheduler decided and the view does not show yet is Releasing, as
    upstream's cache marks it when it evicts (``Victims``); any other sighting ends the mark."""
    if not evicting:
        return
    for task in job.tasks:
        if task.pod.key not in evicting:
            continue  # ``releasing`` would say no and change nothing
        held = task.status in (TaskStatus.BOUND, TaskStatus.RUNNING)
        deleting = task.status == TaskStatus.RELEASING
        if evicting.releasing(task.pod.key, task.pod.uid, held, deleting):
            job.set_status(task, TaskStatus.RELEASING)


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


def _task_order(task: jb.Task) -> tuple[int, float, str]:
    """``priority`` TaskOrder: pod priority desc, then creation, then name."""
    return (-task.pod.priority, task.pod.created, task.pod.key)
