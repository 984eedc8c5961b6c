"""Opening a Volcano session over the jobs kept across passes (``kept.py``): the same session
``session.open_session`` builds, at the cost of what changed since the last pass.

What a pass reads besides the jobs (HyperNodes, Queues and their policies, PriorityClasses) is read again only
when one of those objects is a new object (``_Inputs``); the jobs are brought level by ``view.changes``
(``_bring_level``); the queue book keeps its water-filling (``filling.LastFilling``). Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from operator import is_
from typing import Any

from gangplane.schedulers.base import ClusterView
from gangplane.schedulers.core.classes import PriorityClasses, priority_classes
from gangplane.schedulers.core.evicting import Evicting
from gangplane.schedulers.core.objects import PodInfo, pod_key
from gangplane.schedulers.core.resources import PODS, ResourceIndex
from gangplane.schedulers.core.snapshot import Snapshot
from gangplane.schedulers.volcano import jobs as jb
from gangplane.schedulers.volcano import queues as qs
from gangplane.schedulers.volcano.book import QueueBook
from gangplane.schedulers.volcano.config import VolcanoConfig
from gangplane.schedulers.volcano.hypernodes import HyperNodeTree, build_tree
from gangplane.schedulers.volcano.kept import Inputs, Kept
from gangplane.schedulers.volcano.memo import Memo, Stamping, read_by_policy, revision, stamp
from gangplane.schedulers.volcano.proportion import QueuePolicy
from gangplane.schedulers.volcano.session import (
    Session,
    _auto_group,
    _job,
    _jobs,
    _key,
    _pod_info,
    _policies,
    _priority,
    _task_order,
    _total,
    group_of,
    mark_evicting,
)
from gangplane.schedulers.volcano.vec import Vec
from gangplane.store.catalog import HYPERNODES, PRIORITY_CLASSES, VOLCANO_PODGROUPS, VOLCANO_QUEUES


def open_kept_session(
    view: ClusterView, config: VolcanoConfig, memo: Memo, kept: Kept, evicting: Evicting | None = None
) -> Session:
    """``open_session`` over the jobs ``kept`` holds, brought level by ``view.changes`` (every object read
    again when there are none or what a parse depends on changed). The session's changes to jobs are put
    back by ``Kept.reset`` when it closes. The jobs of pods in ``evicting`` must be in ``kept.reread``."""
    snapshot, index = view.snapshot, view.snapshot.index
    read = _read(view, memo, kept.inputs)
    kept.inputs = read
    tree, queue_objs, policies, broken_queues = read.tree, read.queue_objs, read.policies, read.broken_queues
    context = read.context
    demand = partial(qs.job_demand, width=len(index), pods_col=index.position(PODS))
    if view.changes is None or context != kept.context:
        kept.clear()
        kept.context, kept.inputs = context, read
        jobs, kept.left_out = _jobs(view, config, tree, queue_objs, broken_queues, Memo(), evicting)
        for job in jobs.values():
            kept.put(job, demand)
    else:
        _bring_level(view, config, tree, (queue_objs, broken_queues, read.classes), kept, (demand, evicting))
    book = QueueBook(index.names, _kept_total(snapshot, kept), policies, kept.demands(), config.share_policy,
                     config.hierarchical, kept.filling)  # fmt: skip
    session = Session(config, index, snapshot, book, kept.table(), tree, queue_objs, now=view.now)
    session.left_out, session.kept = dict(kept.left_out), kept
    return session


def _read(view: ClusterView, memo: Memo, last: Inputs | None) -> Inputs:
    """The HyperNode tree, Queues with their policies and PriorityClasses of this pass. Each is the last
    pass's while every object it is read from is the same object (the objects are read-only and held in
    ``last``, so no id is reused), else read again: a Queue status write, the most frequent change, reads
    the written Queues again and nothing else."""
    snapshot, index = view.snapshot, view.snapshot.index
    sources = (
        tuple(view.objects_of(HYPERNODES)),
        tuple(view.objects_of(VOLCANO_QUEUES)),
        tuple(view.objects_of(PRIORITY_CLASSES)),
    )
    if last is None or last.index != index:
        return _read_all(view, memo, sources)
    same = [_same(old, new) for old, new in zip(last.sources, sources, strict=True)]
    if last.nodes is snapshot.nodes and all(same):
        return last
    tree = last.tree if last.nodes is snapshot.nodes and same[0] else build_tree(sources[0], snapshot.nodes)
    if same[1]:
        queue_objs, policies, broken_queues = last.queue_objs, last.policies, last.broken_queues
    elif (restatused := _restatus_queues(sources[1], last)) is not None:
        queue_objs, policies, broken_queues = restatused, last.policies, last.broken_queues
    else:
        queue_objs, policies, broken_queues = _reread_queues(sources[1], index, memo, last)
    classes = last.classes if same[2] else priority_classes(sources[2])
    read_as_last = tree is last.tree and classes is last.classes and broken_queues is last.broken_queues
    if read_as_last and queue_objs.keys() == last.queue_objs.keys():
        context = last.context  # what it is read from is the last pass's (the index was compared above)
    else:
        context = _context(index, tree, classes, queue_objs, broken_queues)
    if context == last.context:
        context = last.context  # compared every pass: the same tuple compares at once
    return Inputs(index, snapshot.nodes, sources, tree, queue_objs, policies, broken_queues, classes, context)


def _read_all(view: ClusterView, memo: Memo, sources: tuple[tuple[Mapping[str, Any], ...], ...]) -> Inputs:
    snapshot, index = view.snapshot, view.snapshot.index
    tree = build_tree(sources[0], snapshot.nodes)
    queue_objs = dict(qs.with_builtin_queues(sources[1]))
    policies, broken_queues = _policies(queue_objs, index, memo)
    for name in broken_queues:
        del queue_objs[name]
    classes = priority_classes(sources[2])
    context = _context(index, tree, classes, queue_objs, broken_queues)
    return Inputs(index, snapshot.nodes, sources, tree, queue_objs, policies, broken_queues, classes, context)


def _restatus_queues(objs: Sequence[Mapping[str, Any]], last: Inputs) -> dict[str, Mapping[str, Any]] | None:
    """The Queues by name when each is the last pass's object or differs from it only where no policy reads
    (a status write of its counts and allocation: the scheduler's own, most passes), else ``None``. Each
    policy, the broken ones' reasons and the order of the names then stand as read; only the objects move."""
    held = last.sources[1]
    if len(objs) != len(held):
        return None
    moved = [(old, new) for old, new in zip(held, objs, strict=True) if old is not new]
    if any(read_by_policy(old) != read_by_policy(new) for old, new in moved):
        return None
    queue_objs = dict(last.queue_objs)
    for old, new in moved:
        name = old["metadata"]["name"]
        if queue_objs.get(name) is old:  # not a broken Queue, nor one a later namesake hid
            queue_objs[name] = new
    return queue_objs


def _reread_queues(
    objs: Sequence[Mapping[str, Any]], index: ResourceIndex, memo: Memo, last: Inputs
) -> tuple[dict[str, Mapping[str, Any]], list[QueuePolicy], dict[str, str]]:
    """``_policies`` of these Queues, asking the memo only for those that are not the last pass's objects:
    for one read before under the same index the memo would answer as it did (the same policy, or broken
    for the same reason). The last pass's list of policies is handed on when every policy is the same."""
    queue_objs = dict(qs.with_builtin_queues(objs))
    held = {q["metadata"]["name"]: q for q in last.sources[1]} | dict(last.queue_objs)
    changed = {name: obj for name, obj in queue_objs.items() if held.get(name) is not obj}
    fresh, broken = _policies(changed, index, memo)
    was = {p.name: p for p in (*last.policies, *fresh)}
    broken |= {
        name: why for name, why in last.broken_queues.items() if name in queue_objs and name not in changed
    }
    broken_queues = {name: broken[name] for name in queue_objs if name in broken}  # in ``_policies``' order
    policies = [was[name] for name in queue_objs if name not in broken_queues]
    for name in broken_queues:
        del queue_objs[name]
    if len(policies) == len(last.policies) and all(
        p is q for p, q in zip(policies, last.policies, strict=True)
    ):
        policies = last.policies  # the same list: the share book compares it at once
    return queue_objs, policies, broken_queues


def _context(
    index: ResourceIndex,
    tree: HyperNodeTree,
    classes: PriorityClasses,
    queue_objs: Mapping[str, Mapping[str, Any]],
    broken_queues: Mapping[str, str],
) -> tuple[object, ...]:
    """What every job's parse depends on besides its own objects (a change parses every job again)."""
    tiers = (tuple(sorted(tree.tier_names.items())), tree.root_tier)
    return (index, *tiers, tuple(sorted(classes.values.items())), tuple(sorted(classes.invalid.items())),
            tuple(queue_objs), tuple(sorted(broken_queues.items())))  # fmt: skip


def _same(old: Sequence[object], new: Sequence[object]) -> bool:
    return old is new or (len(old) == len(new) and all(map(is_, old, new)))


def _kept_total(snapshot: Snapshot, kept: Kept) -> Vec:
    """``_total``, read again only when the nodes or their allocatable changed (the nodes are held with it,
    so the identity cannot be reused)."""
    key = (snapshot.nodes, snapshot.allocatable.tobytes())
    if kept.total is None or kept.total[0][0] is not key[0] or kept.total[0][1] != key[1]:
        kept.total = (key, _total(snapshot))
        kept.forget_orders()  # a DRF share reads the total
    return kept.total[1]


def _bring_level(
    view: ClusterView,
    config: VolcanoConfig,
    tree: HyperNodeTree,
    queues: tuple[Mapping[str, Mapping[str, Any]], Mapping[str, str], PriorityClasses],
    kept: Kept,
    then: tuple[Any, Evicting | None],
) -> None:
    """Parse again each group that changed since the last pass (and those the last pass wrote); ``then``:
    each job's demand, and the evictions in flight to mark."""
    assert view.changes is not None
    demand, evicting = then
    queue_objs, broken_queues, classes = queues
    index = view.snapshot.index
    context = (index, tuple(sorted(tree.tier_names.items())), tree.root_tier)
    pending = _Recent(view.pending, view.changes.pending)
    stamping = Stamping()  # sets each job's revision; nothing is kept in it
    for key in sorted(view.changes.groups | kept.reread):
        old = kept.jobs.get(key)
        members = [
            (pod, info)
            for pod in view.changes.members(key)
            if ((pod.get("spec") or {}).get("schedulerName") or "") in config.scheduler_names
            and group_of(pod) == key
            and (info := _kept_pod_info(view, pod, pending)) is not None
        ]
        pg = view.changes.get(VOLCANO_PODGROUPS, key)
        if old is not None and pg is not None and not evicting and _status_only(old, pg, members):
            _restatus(kept, old, pg, demand)
            continue
        kept.drop(key)
        if old is not None and pg is not None and (moved := _pods_moved(old, pg, members, classes, index)):
            mark_evicting(moved, evicting)
            kept.put(moved, demand)
            continue
        synthetic = pg is None and bool(members) and jb.group_key(members[0][0]) is None
        if synthetic:
            pg = _auto_group(members[0][0])
        if pg is None:
            if members:
                kept.left_out[key] = f"PodGroup {key} does not exist"
            continue
        job = _job(view, tree, pg, members, classes, (stamping, key, context))
        if isinstance(job, str):
            kept.left_out[key] = job
        elif job.queue in broken_queues:
            kept.left_out[key] = broken_queues[job.queue]
        elif job.queue not in queue_objs:
            kept.left_out[key] = f"queue {job.queue} does not exist"
        else:
            job.synthetic = synthetic
            mark_evicting(job, evicting)
            kept.put(job, demand)
    kept.reread = set()


def _status_only(
    old: jb.Job, pg: Mapping[str, Any], members: Sequence[tuple[Mapping[str, Any], PodInfo]]
) -> bool:
    """Is the group as ``old`` was parsed from but for its PodGroup's status (the scheduler's own write,
    most often)? The same spec, identity and creation, and every member pod at the resourceVersion it was
    parsed at: nothing a parse reads besides the phase."""
    if not old.revision or not revision(pg) or not jb.same_group(old, pg):
        return False
    pods = old.revision[1:]
    return len(members) == len(pods) and all(
        revision(p) == rv for (p, _), rv in zip(members, pods, strict=True)
    )


def _pods_moved(
    old: jb.Job,
    pg: Mapping[str, Any],
    members: Sequence[tuple[Mapping[str, Any], PodInfo]],
    classes: PriorityClasses,
    index: ResourceIndex,
) -> jb.Job | None:
    """``old`` parsed again from ``pg`` and ``members`` when the PodGroup is as ``old`` was parsed from but
    for its status (most often a gang this scheduler bound, back with its pods on their nodes): what a parse
    reads from the PodGroup stands (its spec, identity and creation; the context is the kept one), so only
    the phase, the object and the tasks are read again, each task as a parse builds it from its pod and
    info (``jb.renew_task``), in the parse's order, with the parse's priority and stamp. ``None`` when the
    PodGroup moved (a parse then reads it)."""
    if not jb.same_group(old, pg) or _key(pg) != old.key:
        return None
    if classes.problem((pg.get("spec") or {}).get("priorityClassName")) is not None:
        return None
    was = {task.pod.key: task for task in old.tasks}
    tasks = [jb.renew_task(was.get(info.key), pod, info, index) for pod, info in members]
    priority = _priority(pg, classes.values, [info for _, info in members])
    job = jb.renew_job(old, pg, priority, sorted(tasks, key=_task_order))
    stamp(job, revision(pg), [revision(pod) for pod, _ in members])
    return job


def _restatus(kept: Kept, job: jb.Job, pg: Mapping[str, Any], demand: Callable[[jb.Job], Any]) -> None:
    """Take ``pg``'s status into the kept ``job`` without parsing it again: its tasks, priority and shape
    stand (they come from the spec and the pods); only its phase and object move. A phase that stays
    leaves the indexes and queue sums as they are; the close looks at the job again, as after a parse."""
    phase = jb.phase_of(pg)
    if phase != job.phase:
        kept.drop(job.key)
        job.phase = phase
        kept.put(job, demand)
    job.obj, job.revision = pg, (revision(pg), *job.revision[1:])
    kept.visit.add(job.key)


def _kept_pod_info(view: ClusterView, pod: Mapping[str, Any], pending: _Recent) -> PodInfo | None:
    """``_pod_info`` without a map of every pending pod: a bound pod is looked up in the snapshot first
    (pending pods are unbound), a pending one among the newest pending pods first."""
    if (pod.get("spec") or {}).get("nodeName"):
        key = pod_key(pod)
        found = view.snapshot.pod(key) or pending.get(key)
        if found is not None:
            return found
    return _pod_info(view, pod, pending)


class _Recent(Mapping[str, PodInfo]):
    """The pending pods by key: asked of the loop where it can say (``Changes.pending``), else read from the
    newest backwards as far as a lookup needs (a changed group's pods are mostly new, and the pending pods
    come oldest first; an old waiting group's were a walk over the whole backlog)."""

    def __init__(self, pods: Sequence[PodInfo], ask: Callable[[str], PodInfo | None] | None = None) -> None:
        self._pods, self._seen, self._ask = pods, dict[str, PodInfo](), ask
        self._at = len(pods) if ask is None else 0  # a lazy list of pods is listed whole by its length

    def __getitem__(self, key: str) -> PodInfo:
        found = self._seen.get(key) if self._ask is None else self._ask(key)
        while found is None and self._at > 0 and self._ask is None:
            self._at -= 1
            pod = self._pods[self._at]
            self._seen[pod.key] = pod
            found = pod if pod.key == key else None
        if found is None:
            raise KeyError(key)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(p.key for p in self._pods)

    def __len__(self) -> int:
        return len(self._pods)
