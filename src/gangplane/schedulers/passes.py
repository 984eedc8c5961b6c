"""One pass over the embedded schedulers, pure: snapshot in, cycle results out.

``plan_pass`` turns node, pod and watched-object dicts into one shared snapshot and hands it to ``run_pass``,
which builds a ``ClusterView`` per scheduler, runs the cycles in order and returns their results. The
simulator calls ``run_pass`` with the snapshot it keeps; the loop (``loop.py``) with the one its cache keeps.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gangplane.schedulers.base import Changes, ClusterView, CycleResult, PendingReason, Scheduler, Status
from gangplane.schedulers.core.gang import Binding
from gangplane.schedulers.core.objects import (
    BROKEN_INPUT,
    DEFAULT_SCHEDULER,
    GroupKey,
    NodeInfo,
    PodInfo,
    effective_requests,
    is_terminal,
    no_group,
    node_info,
    pod_info,
    pod_key,
)
from gangplane.schedulers.core.resources import ResourceIndex
from gangplane.schedulers.core.snapshot import Snapshot
from gangplane.store.base import ResourceType
from gangplane.store.catalog import PODS

_log = logging.getLogger(__name__)
INVALID_POD = "InvalidPod"
SCHEDULER_ERROR = "SchedulerError"

Objects = Mapping[ResourceType, Sequence[Mapping[str, Any]]]


# -- the pure pass --------------------------------------------------------------------------------------------
@dataclass(slots=True)
class PassResult:
    """What one pass decided: per scheduler name, its cycle result, in run order."""

    results: list[tuple[str, CycleResult]] = field(default_factory=list)
    snapshot: Snapshot | None = None  # after the pass: bindings counted, victims dropped

    def bindings(self) -> list[Binding]:
        return [b for _, r in self.results for b in r.bindings]


def _scheduler_name(pod: Mapping[str, Any]) -> str:
    return (pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER


def _is_pending(pod: Mapping[str, Any]) -> bool:
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    return not spec.get("nodeName") and not is_terminal(pod) and not meta.get("deletionTimestamp")


def group_key(schedulers: Mapping[str, Scheduler], pod: Mapping[str, Any]) -> GroupKey:
    scheduler = schedulers.get(_scheduler_name(pod))
    return scheduler.group_of if scheduler is not None else no_group


def build_snapshot(
    nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]], schedulers: Mapping[str, Scheduler]
) -> tuple[Snapshot, dict[str, list[PodInfo]]]:
    """One snapshot over all nodes with every bound, non-terminal pod counted, and the pending pods of each
    known scheduler (oldest first). Pods of unknown schedulers are left out of ``pending`` entirely."""
    snapshot, pending, _ = _snapshot_parts(nodes, pods, schedulers)
    return snapshot, pending


def _node_infos(nodes: Iterable[Mapping[str, Any]]) -> list[NodeInfo]:
    """Every node that converts; a malformed one is left out of the pass (logged) rather than failing it."""
    infos = []
    for obj in nodes:
        try:
            infos.append(node_info(obj))
        except BROKEN_INPUT as err:
            _log.warning("node %s left out of scheduling: malformed (%s)", pod_key(obj), err)
    return infos


Converted = tuple[Mapping[str, Any], dict[str, int]]


def _live_pods(
    pods: Iterable[Mapping[str, Any]],
) -> tuple[list[Converted], list[tuple[Mapping[str, Any], str]]]:
    """Non-terminal pods with their effective requests, and the pods whose requests do not parse (why)."""
    live: list[Converted] = []
    broken: list[tuple[Mapping[str, Any], str]] = []
    for pod in pods:
        if is_terminal(pod):
            continue
        try:
            live.append((pod, effective_requests(pod.get("spec") or {})))
        except BROKEN_INPUT as err:
            broken.append((pod, str(err)))
    return live, broken


def _note_broken(broken: dict[str, list[PendingReason]], obj: Mapping[str, Any], why: str) -> None:
    """An ``Error`` reason for a pending pod of a known scheduler that cannot be converted."""
    if _is_pending(obj) and _scheduler_name(obj) in broken:
        message = f"pod spec cannot be scheduled: {why}"
        broken[_scheduler_name(obj)].append(
            PendingReason((pod_key(obj),), Status.ERROR, message, INVALID_POD)
        )


def _snapshot_parts(
    nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]], schedulers: Mapping[str, Scheduler]
) -> tuple[Snapshot, dict[str, list[PodInfo]], dict[str, list[PendingReason]]]:
    """``build_snapshot`` plus, per scheduler, an ``Error`` reason for each of its pods that cannot be
    converted (a malformed spec): such a pod is left out, never the pass (isolation)."""
    node_infos = _node_infos(nodes)
    live, unreadable = _live_pods(pods)
    index = ResourceIndex.covering(*(n.allocatable for n in node_infos), *(r for _, r in live))
    bound: list[PodInfo] = []
    pending: dict[str, list[PodInfo]] = {name: [] for name in schedulers}
    broken: dict[str, list[PendingReason]] = {name: [] for name in schedulers}
    for obj, why in unreadable:
        _note_broken(broken, obj, why)
    for obj, requests in live:
        try:
            info = pod_info(obj, index, group_of=group_key(schedulers, obj), requests=requests)
        except BROKEN_INPUT as err:
            _note_broken(broken, obj, str(err))
            continue
        if info.node_name:
            bound.append(info)
        elif _is_pending(obj) and info.scheduler_name in pending:
            pending[info.scheduler_name].append(info)
    for infos in pending.values():
        infos.sort(key=lambda p: (p.created, p.key))
    return Snapshot(index, node_infos, bound), pending, broken


def _apply(snapshot: Snapshot, result: CycleResult, pending: Callable[[str], PodInfo | None]) -> None:
    """Count a cycle's bindings and drop its victims, so later schedulers in the pass see them."""
    for eviction in result.evictions:
        if snapshot.location(eviction.pod_key) is not None:
            snapshot.forget(eviction.pod_key)
    for binding in result.bindings:
        pod = pending(binding.pod_key)
        if pod is None or snapshot.location(pod.key) is not None:
            raise ValueError(f"binding of {binding.pod_key}: not a pending pod of this scheduler")
        snapshot.assume(pod, snapshot.node_position(binding.node))


def plan_pass(
    now: float,
    nodes: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    objects: Objects,
    schedulers: Mapping[str, Scheduler],
) -> PassResult:
    """Run every scheduler once, in mapping order, over one shared snapshot (see ``base`` for the contract).

    Isolation: a pod that cannot be converted gets an ``Error`` reason and is left out; a scheduler whose
    cycle raises keeps its pods pending with an ``Error`` reason and the others schedule as usual."""
    pod_list = list(pods)
    snapshot, pending, broken = _snapshot_parts(nodes, pod_list, schedulers)
    out = run_pass(now, snapshot, pending, {**objects, PODS: pod_list}, schedulers)
    for name, result in out.results:
        result.pending.extend(broken[name])
    return out


def run_pass(
    now: float,
    snapshot: Snapshot,
    pending: Mapping[str, Sequence[PodInfo]],
    objects: Objects,
    schedulers: Mapping[str, Scheduler],
    changes: Mapping[str, Changes] | None = None,
) -> PassResult:
    """The pass itself over a snapshot the caller built: ``plan_pass`` builds it from wire dicts, the
    simulator keeps one incrementally. Each scheduler sees its ``pending`` pods, the ``objects`` it
    watches and what changed for it (``changes``, from the loop); its cycle runs under a checkpoint, then its
    bindings are counted and its victims dropped."""
    out = PassResult(snapshot=snapshot)
    for name, scheduler in schedulers.items():
        mine = pending.get(name, ())
        known = (changes or {}).get(name)
        view = ClusterView(now, snapshot, mine, _Watched(objects, scheduler.watches), known)
        token = snapshot.checkpoint()
        result = _guarded_cycle(name, scheduler, view)
        snapshot.rollback(token)
        _apply(snapshot, result, _pending_lookup(mine, known) if result.bindings else _nothing_pending)
        out.results.append((name, result))
    return out


def _pending_lookup(mine: Sequence[PodInfo], known: Changes | None) -> Callable[[str], PodInfo | None]:
    """The pending pod of a key: asked of ``changes`` where the caller can answer (the simulator's shell,
    keyed by job), else indexed from the whole sequence (only for a cycle that bound something)."""
    if known is not None and known.pending is not None:
        return known.pending
    return {p.key: p for p in mine}.get


def _nothing_pending(_key: str) -> PodInfo | None:
    return None


def _guarded_cycle(name: str, scheduler: Scheduler, view: ClusterView) -> CycleResult:
    """``scheduler.cycle(view)``; a crash (a bug, or input it did not expect) becomes an ``Error`` reason on
    each of its pending pods instead of failing the pass for every scheduler."""
    try:
        return scheduler.cycle(view)
    except Exception as err:  # isolation: any failure of one scheduler stays with that scheduler
        _log.exception("scheduler %s failed its cycle; its pods stay pending", name)
        message = f"scheduler {name} failed this cycle: {type(err).__name__}: {err}"
        keys = tuple(p.key for p in view.pending)
        return CycleResult(
            pending=[PendingReason(keys, Status.ERROR, message, SCHEDULER_ERROR)] if keys else []
        )


class _Watched(Mapping[ResourceType, Sequence[Mapping[str, Any]]]):
    """The objects of the types one scheduler watches; a lazy ``objects`` lists a type only when read."""

    def __init__(self, objects: Objects, types: Iterable[ResourceType]) -> None:
        self._objects, self._types = objects, tuple(dict.fromkeys(types))
        self._ids = frozenset(map(id, self._types))  # the catalog's own constants, found without ``__eq__``

    def __getitem__(self, rt: ResourceType) -> Sequence[Mapping[str, Any]]:
        if id(rt) not in self._ids and rt not in self._types:
            raise KeyError(rt)
        return self._objects.get(rt, ())

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(self._types)

    def __len__(self) -> int:
        return len(self._types)


__all__ = [
    "INVALID_POD",
    "SCHEDULER_ERROR",
    "Objects",
    "PassResult",
    "build_snapshot",
    "group_key",
    "plan_pass",
    "run_pass",
]
