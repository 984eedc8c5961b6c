"""One KAI cycle's working state, copied from the view: jobs (PodGroups, or the pod-grouper's derivation
for pods without one), the queue book and the snapshot the actions change (kai.md §5)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from gangplane.api.scheduling import kai
from gangplane.schedulers.base import Changes, ClusterView, Eviction
from gangplane.schedulers.core.classes import INVALID_PRIORITY_CLASS, PriorityClasses
from gangplane.schedulers.core.gang import Binding
from gangplane.schedulers.core.objects import (
    BROKEN_INPUT,
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    PodInfo,
    pod_info,
    pod_key,
)
from gangplane.schedulers.core.resources import ResourceIndex
from gangplane.schedulers.core.scoring import Strategy
from gangplane.schedulers.core.snapshot import Snapshot
from gangplane.schedulers.kai import model
from gangplane.schedulers.kai.book import KaiBook
from gangplane.schedulers.kai.kept import KeptJobs
from gangplane.schedulers.kai.memo import Evicting, KaiMemo
from gangplane.schedulers.kai.model import KaiJob, Member, Res
from gangplane.store.catalog import JOBSETS, KAI_PODGROUPS, KAI_QUEUES, PODS, PRIORITY_CLASSES


@dataclass(frozen=True, slots=True)
class KaiConfig:
    """``strategy``: node placement (binpack or spread); ``actions`` in order; ``k_value`` of the
    over-quota weights; ``scheduler_name`` the pods' ``schedulerName``."""

    strategy: Strategy = Strategy.BINPACK
    actions: tuple[str, ...] = ("allocate", "reclaim", "preempt")
    k_value: float = 1.0
    scheduler_name: str = kai.SCHEDULER_NAME
    node_pool: str = "default"
    explain: bool = True  # why-pending text and status writes; the simulator asks only with --explain


@dataclass(slots=True)
class KaiSession:
    config: KaiConfig
    snapshot: Snapshot
    book: KaiBook
    kept: KeptJobs
    now: float
    bindings: list[Binding] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    reasons: dict[str, tuple[str, str]] = field(default_factory=dict)  # job -> (reason, message)
    pipelined: set[str] = field(default_factory=set)
    pipelined_pods: set[str] = field(default_factory=set)  # the pods holding room that is being freed
    bound_now: set[str] = field(default_factory=set)  # jobs with bindings this cycle: never victims in it
    evicted: dict[str, str] = field(default_factory=dict)  # pod key -> uid, evicted this cycle
    touched: set[str] = field(default_factory=set)  # jobs whose members an eviction changed
    left_out: dict[str, tuple[str, str, tuple[str, ...]]] = field(
        default_factory=dict
    )  # reason, message, pods
    _units: dict[bytes, Res] = field(default_factory=dict)  # request row -> KAI units (read-only arrays)
    _jobs: dict[str, KaiJob] | None = None

    @property
    def jobs(self) -> dict[str, KaiJob]:
        """Every job by key, in key order; built when first read (allocate reads the kept lines, and reclaim
        and preempt return early without reading it where no victim can exist)."""
        if self._jobs is None:
            self._jobs = dict(sorted(self.kept.jobs.items()))
        return self._jobs

    def units(self, pod: PodInfo) -> Res:
        return units_of(self._units, self.snapshot.index, pod)

    def request(self, members: list[Member]) -> Res:
        return request_of(self._units, self.snapshot.index, members)

    def bind(self, job: KaiJob, member: Member, row: int) -> None:
        member.running = True
        self.bound_now.add(job.key)
        self.bindings.append(Binding(member.pod.key, self.snapshot.nodes[row].name))
        self.book.allocate(job.queue, self.units(member.pod), job.preemptible)


def units_of(kept: dict[bytes, Res], index: ResourceIndex, pod: PodInfo) -> Res:
    """The pod's request in KAI units; ``kept`` per distinct request row (callers never mutate it)."""
    key = pod.requests.tobytes()
    found = kept.get(key)
    if found is None:
        found = kept[key] = model.kai_units(index, pod.requests)
        found.flags.writeable = False
    return found


def request_of(kept: dict[bytes, Res], index: ResourceIndex, members: list[Member]) -> Res:
    return sum((units_of(kept, index, m.pod) for m in members), start=np.zeros(3))


def group_name(pod: Mapping[str, Any]) -> str | None:
    meta = pod.get("metadata") or {}
    name = (meta.get("annotations") or {}).get(kai.POD_GROUP_ANNOTATION)
    return f"{meta.get('namespace') or 'default'}/{name}" if name else None


def _derived_key(
    pod: PodInfo, jobsets: Mapping[str, Mapping[str, Any]], classes: PriorityClasses
) -> tuple[str, Mapping[str, Any] | tuple[str, str]]:
    """The pod-grouper's PodGroup for a pod that names none: its JobSet's, else a one-pod group; or
    ``(reason, message)`` where KAI's grouper fails for the JobSet."""
    exists = lambda name: name in classes.values or name in classes.invalid  # noqa: E731
    jobset = jobsets.get(f"{pod.namespace}/{pod.labels.get(model.JOBSET_NAME_LABEL, '')}")
    if jobset is None:
        pg = model.default_pod_group(pod, exists)
        return f"{pod.namespace}/{pg['metadata']['name']}", pg
    found = model.jobset_pod_group(jobset, pod, exists)
    if found is None:
        meta = jobset.get("metadata") or {}
        key = f"{pod.namespace}/{meta.get('name')}"
        annotation = kai.BATCH_MIN_MEMBER_ANNOTATION
        message = f"KAI's pod-grouper cannot group JobSet {key}: {annotation} must be a base-10 integer >= 1"
        return f"{key}:grouper", ("PodGrouperFailed", message)
    return f"{pod.namespace}/{found['metadata']['name']}", found


def _pod(
    view: ClusterView, obj: Mapping[str, Any], facts: _PodFacts, pending: Callable[[str], PodInfo | None]
) -> PodInfo | None:
    found = pending(facts.key) or view.snapshot.pod(facts.key)
    if found is not None or facts.finished:
        return found
    try:
        return pod_info(dict(obj), view.snapshot.index)
    except KeyError:
        return None


LeftOut = dict[str, tuple[str, str, tuple[str, ...]]]  # job key -> reason, message, its pending pods


def _job(pg: Mapping[str, Any], classes: PriorityClasses, derived: bool = False) -> KaiJob | tuple[str, str]:
    """The job of one PodGroup, or ``(reason, message)`` when it cannot be scheduled: a malformed PodGroup
    or PriorityClass holds back this job only (isolation)."""
    if (problem := classes.problem((pg.get("spec") or {}).get("priorityClassName"))) is not None:
        return INVALID_PRIORITY_CLASS, problem
    try:
        return model.job_of(pg, classes.values, derived)
    except BROKEN_INPUT as err:
        meta = pg.get("metadata") or {}
        return "InvalidPodGroup", f"PodGroup {meta.get('namespace')}/{meta.get('name')} is malformed: {err}"


@dataclass(frozen=True, slots=True)
class _PodFacts:
    """What the session reads from a pod dict besides its ``PodInfo``: parsed once per dict (``memo``)."""

    mine: bool  # spec.schedulerName is this scheduler's
    key: str
    group: str | None  # the named PodGroup
    releasing: bool  # metadata.deletionTimestamp set
    finished: bool  # phase Succeeded or Failed
    subgroup: str  # the SubGroup its labels name (or its JobSet replica's), "" for none


def _facts(obj: Mapping[str, Any], config: KaiConfig) -> _PodFacts:
    mine = ((obj.get("spec") or {}).get("schedulerName") or "") == config.scheduler_name
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    return _PodFacts(
        mine,
        pod_key(obj),
        group_name(obj),
        bool(meta.get("deletionTimestamp")),
        (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"),
        labels.get(kai.SUBGROUP_LABEL) or model.leaf_of_jobset_pod(labels),
    )


def _group_jobs(
    view: ClusterView, memo: KaiMemo, classes: PriorityClasses
) -> dict[str, KaiJob | tuple[str, str]]:
    """Each PodGroup's job (a fresh copy of the kept template, no members yet) or why it cannot run."""
    built: dict[str, KaiJob | tuple[str, str]] = {}
    for g in view.objects_of(KAI_PODGROUPS):
        found = memo.groups.get(id(g), g, partial(_job, g, classes), classes)
        if isinstance(found, KaiJob):
            built[found.key] = found.fresh()
        else:
            built[_group_key(g)] = found
    return built


def _jobs(view: ClusterView, config: KaiConfig, memo: KaiMemo) -> tuple[dict[str, KaiJob], LeftOut]:
    classes = memo.classes(view.objects_of(PRIORITY_CLASSES))
    built = _group_jobs(view, memo, classes)
    jobsets: dict[str, Mapping[str, Any]] | None = None
    pending = {p.key: p for p in view.pending}
    held_back: dict[str, list[str]] = {}
    for obj in view.objects_of(PODS):
        facts = memo.pods.get(id(obj), obj, partial(_facts, obj, config))
        if not facts.mine:
            continue
        info = _pod(view, obj, facts, pending.get)
        if info is None:
            continue
        key = facts.group
        if key is None:
            jobsets = jobsets if jobsets is not None else model.jobsets_by_key(view.objects_of(JOBSETS))
            key, pg = _derived_key(info, jobsets, classes)
            if key not in built:
                built[key] = pg if isinstance(pg, tuple) else _job(pg, classes, derived=True)
        job = built.get(key)
        if isinstance(job, KaiJob):
            # An assumed pod (its binding still being written) is counted on its node by the snapshot but
            # its own nodeName is still empty: it holds resources, it is not pending.
            counted = info.key not in pending and view.snapshot.pod(info.key) is not None
            _add_member(job, facts, info, counted, memo.evicting)
        elif job is not None and info.key in pending:
            held_back.setdefault(key, []).append(info.key)
    for job in built.values():
        if isinstance(job, KaiJob) and len(job.members) > 1:
            job.members.sort(key=_task_order)
    jobs = {k: j for k, j in sorted(built.items()) if isinstance(j, KaiJob)}
    broken = {
        k: (*why, tuple(held_back.get(k, ()))) for k, why in built.items() if not isinstance(why, KaiJob)
    }
    return jobs, dict(sorted(broken.items()))


def _group_key(pg: Mapping[str, Any]) -> str:
    return f"{pg['metadata'].get('namespace') or 'default'}/{pg['metadata']['name']}"


TASK_ORDER_LABEL = "kai.scheduler/task-priority"


def _task_order(member: Member) -> tuple[int, int, float, str]:
    """The ``taskorder`` plugin: pods labelled ``kai.scheduler/task-priority`` first, higher value first (a
    value that is not an integer after the valid ones), then creation and key."""
    given = member.pod.labels.get(TASK_ORDER_LABEL)
    if given is None:
        return (2, 0, member.pod.created, member.pod.key)
    try:
        return (0, -int(given), member.pod.created, member.pod.key)
    except ValueError:
        return (1, 0, member.pod.created, member.pod.key)


def _add_member(job: KaiJob, facts: _PodFacts, info: PodInfo, counted: bool, evicting: Evicting) -> None:
    """A deleting pod, or one this scheduler evicted whose deletion is not seen yet, is releasing."""
    running = bool(info.node_name) or counted
    releasing = evicting.releasing(info.key, info.uid, running, facts.releasing) or facts.releasing
    job.members.append(Member(info, job.tree.leaf_of(facts.subgroup), running, releasing))


def _total(snapshot: Snapshot) -> Res:
    ready = [
        i
        for i, n in enumerate(snapshot.nodes)
        if not any(t.key in (NOT_READY_TAINT, UNREACHABLE_TAINT) for t in n.taints)
    ]
    return model.kai_units(snapshot.index, snapshot.allocatable[ready].sum(axis=0))


def _queues(view: ClusterView, memo: KaiMemo) -> tuple[list[model.KaiQueue], dict[str, str]]:
    """Queues that parse; a malformed one is set aside with the reason its jobs will show."""
    queues, broken = [], {}
    for obj in view.objects_of(KAI_QUEUES):
        parsed = memo.queues.get(id(obj), obj, partial(_queue, obj))
        if isinstance(parsed, model.KaiQueue):
            queues.append(parsed)
        else:
            broken[parsed[0]] = parsed[1]
    return queues, broken


def _queue(obj: Mapping[str, Any]) -> model.KaiQueue | tuple[str, str]:
    try:
        return model.queue_of(obj)
    except BROKEN_INPUT as err:
        name = str((obj.get("metadata") or {}).get("name"))
        return name, f"queue {name} is malformed: {err}"


def open_session(view: ClusterView, config: KaiConfig, memo: KaiMemo | None = None) -> KaiSession:
    """The cycle's session; ``memo`` (the scheduler's, kept across cycles) spares parsing what did not
    change and keeps the jobs themselves where the view says what changed (``kept_update``)."""
    memo = memo or KaiMemo()
    queues, broken_queues = _queues(view, memo)
    classes = memo.classes(view.objects_of(PRIORITY_CLASSES))
    kept, left_out = _kept_jobs(view, config, memo, queues, broken_queues, classes)
    units = memo.units(view.snapshot.index)
    book = kept_book(memo, memo.total(view.snapshot, _total), queues, kept.queue_usage(), config.k_value)
    session = KaiSession(config, view.snapshot, book, kept, view.now, _units=units)
    session.left_out = left_out
    return session


def kept_book(
    memo: KaiMemo,
    total: Res,
    queues: list[model.KaiQueue],
    usage: Mapping[str, tuple[Res, Res, Res]],
    k: float,
) -> KaiBook:
    """The memo's book brought up to date (``KaiBook.refresh``) while the total, the queue objects and
    ``k`` are the same, else a new one; either way what a new book over these inputs holds."""
    book = memo.book
    same_queues = (
        book is not None
        and len(book.queues) == len(queues)
        and all(a is b for a, b in zip(book.queues.values(), queues, strict=True))
    )
    if book is None or not same_queues or book.total is not total or book.k_value != k:
        memo.book = KaiBook(total, queues, usage, k, memo)
    else:
        book.refresh(usage, memo)
    return memo.book  # type: ignore[no-any-return]


def _kept_jobs(
    view: ClusterView,
    config: KaiConfig,
    memo: KaiMemo,
    queues: list[model.KaiQueue],
    broken_queues: dict[str, str],
    classes: PriorityClasses,
) -> tuple[KeptJobs, LeftOut]:
    """The jobs: the memo's kept ones brought up to date where the view's ``changes`` allow (explanations
    off, the same queues, priority classes and resource index as before), else all built again."""
    kept, dirty = memo.kept, memo.dirty
    memo.dirty = set()
    inputs = (classes, broken_queues)
    reusable = kept is not None and memo.kept_inputs == inputs and _reusable(kept, view, config, queues)
    if reusable and kept is not None and view.changes is not None:
        memo.queues.end_cycle()
        if kept_update(view, config, kept, classes, view.changes.groups | dirty, memo.evicting):
            return kept, {}
    jobs, left_out = _jobs(view, config, memo)
    memo.end_cycle()
    kept = KeptJobs(view.snapshot.index, queues)
    for key, job in jobs.items():
        if job.queue in kept.usage:
            kept.add(job)
        else:
            why = broken_queues.get(job.queue)
            reason = "QueueDoesNotExist" if why is None else "InvalidQueue"
            message = why or f"queue {job.queue} does not exist"
            left_out[key] = (reason, message, tuple(m.pod.key for m in job.pending()))
    memo.kept, memo.kept_inputs = kept, inputs
    return kept, dict(sorted(left_out.items()))


def _reusable(kept: KeptJobs, view: ClusterView, config: KaiConfig, queues: list[model.KaiQueue]) -> bool:
    """No explanations asked (they read every job), and the same queue objects and resource index."""
    same_queues = len(kept.queues) == len(queues) and all(
        a is b for a, b in zip(kept.queues, queues, strict=True)
    )
    return not config.explain and kept.index is view.snapshot.index and same_queues


def kept_update(
    view: ClusterView,
    config: KaiConfig,
    kept: KeptJobs,
    classes: PriorityClasses,
    groups: Iterable[str],
    evicting: Evicting,
) -> bool:
    """Rebuild the jobs of ``groups`` from the view's ``changes`` (their PodGroup and member pods);
    ``False`` (``kept`` then unusable) where one is not a named PodGroup's (the pod-grouper's derived
    groups are built from the whole lists)."""
    assert view.changes is not None
    pending = _pending_lookup(view, view.changes)
    for key in sorted(groups):
        kept.remove(key)
        mine = [(obj, f) for obj in view.changes.members(key) if (f := _facts(obj, config)).mine]
        if any(f.group != key for _, f in mine):
            return False
        pg = view.changes.get(KAI_PODGROUPS, key)
        job = None if pg is None else _job(pg, classes)
        if not isinstance(job, KaiJob) or job.queue not in kept.usage:
            continue
        for obj, f in mine:
            if (info := _pod(view, obj, f, pending)) is not None:
                counted = pending(info.key) is None and view.snapshot.pod(info.key) is not None
                _add_member(job, f, info, counted, evicting)
        if len(job.members) > 1:
            job.members.sort(key=_task_order)
        kept.add(job)
    return True


def _pending_lookup(view: ClusterView, changes: Changes) -> Callable[[str], PodInfo | None]:
    """The view's pending pod of a key: asked of the loop where it can answer, else indexed from the whole
    tuple, once and only when first asked."""
    if changes.pending is not None:
        return changes.pending
    index: dict[str, PodInfo] | None = None

    def find(key: str) -> PodInfo | None:
        nonlocal index
        if index is None:
            index = {p.key: p for p in view.pending}
        return index.get(key)

    return find
