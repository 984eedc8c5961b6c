"""The scheduler shell: informers in, one pass over every embedded scheduler, writes out.

``plan_pass`` is the pure part: it turns node, pod and watched-object dicts into one shared snapshot and hands
it to ``run_pass``, which builds a ``ClusterView`` per scheduler, runs the cycles in order and returns their
results. The simulator calls ``run_pass`` with the snapshot it keeps incrementally: one pass, every shell.
``SchedulerLoop`` is the imperative part: it keeps informers, runs a pass when something changed (and every
``period`` seconds, so time-based rules progress), and writes every result of a pass before the next one:
bindings (``spec.nodeName`` then ``PodScheduled=True``), evictions (pod deletes), status writes, and
``PodScheduled=False`` "why pending" conditions. A write that loses a race (``Conflict``, ``NotFound``) is
dropped: the next pass sees the new state and decides again.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from gangplane.client.informer import Informer
from gangplane.clock import Clock, rfc3339
from gangplane.errors import ApiError, Conflict, NotFound
from gangplane.schedulers.base import ClusterView, CycleResult, PendingReason, Scheduler, Status, StatusWrite
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
from gangplane.store.base import Object, ResourceType, Store
from gangplane.store.catalog import EVENTS, NODES, PODS

_log = logging.getLogger(__name__)
POD_SCHEDULED = "PodScheduled"
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


def _group_key(schedulers: Mapping[str, Scheduler], pod: Mapping[str, Any]) -> GroupKey:
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
            info = pod_info(obj, index, group_of=_group_key(schedulers, obj), requests=requests)
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


def _apply(snapshot: Snapshot, result: CycleResult, pending: Mapping[str, PodInfo]) -> None:
    """Count a cycle's bindings and drop its victims, so later schedulers in the pass see them."""
    for eviction in result.evictions:
        if snapshot.location(eviction.pod_key) is not None:
            snapshot.forget(eviction.pod_key)
    for binding in result.bindings:
        pod = pending.get(binding.pod_key)
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
) -> PassResult:
    """The pass itself over a snapshot the caller built: ``plan_pass`` builds it from wire dicts, the
    simulator keeps one incrementally. Each scheduler sees its ``pending`` pods and the ``objects`` it
    watches; its cycle runs under a checkpoint, then its bindings are counted and its victims dropped."""
    out = PassResult(snapshot=snapshot)
    for name, scheduler in schedulers.items():
        mine = tuple(pending.get(name, ()))
        view = ClusterView(now, snapshot, mine, {rt: objects.get(rt, ()) for rt in scheduler.watches})
        token = snapshot.checkpoint()
        result = _guarded_cycle(name, scheduler, view)
        snapshot.rollback(token)
        _apply(snapshot, result, {p.key: p for p in mine})
        out.results.append((name, result))
    return out


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


# -- conditions -----------------------------------------------------------------------------------------------
def with_condition(pod: Object, condition: Mapping[str, Any], now: float) -> Object | None:
    """A copy of ``pod`` with ``condition`` set (transition time kept when the status did not change), or
    ``None`` when the pod already carries exactly that condition."""
    status = pod.get("status") or {}
    conditions: list[dict[str, Any]] = list(status.get("conditions") or [])
    old = next((c for c in conditions if c.get("type") == condition["type"]), None)
    if old is not None and all(old.get(k) == v for k, v in condition.items()):
        return None
    stamp = old.get("lastTransitionTime") if old and old.get("status") == condition["status"] else None
    new = {**condition, "lastProbeTime": None, "lastTransitionTime": stamp or rfc3339(now)}
    updated = copy.deepcopy(pod)
    others = [c for c in conditions if c.get("type") != condition["type"]]
    updated.setdefault("status", {})["conditions"] = [*others, new]
    return updated


def scheduled_condition() -> dict[str, Any]:
    return {"type": POD_SCHEDULED, "status": "True"}


def unschedulable_condition(reason: PendingReason) -> dict[str, Any]:
    return {"type": POD_SCHEDULED, "status": "False", "reason": reason.reason, "message": reason.message}


# -- the shell ------------------------------------------------------------------------------------------------
def _split(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


class SchedulerLoop:
    """Runs ``schedulers`` (keyed by ``schedulerName``, in run order) against a store.

    ``start`` starts the informers and a thread that runs a pass after every relevant change and at least
    every ``period`` seconds; ``run_once`` runs one pass synchronously (tests, the simulator's shell).
    """

    def __init__(
        self, store: Store, clock: Clock, schedulers: Mapping[str, Scheduler], *, period: float = 1.0
    ) -> None:
        self.store, self.clock, self.schedulers, self.period = store, clock, dict(schedulers), period
        types = [NODES, PODS, *(rt for s in self.schedulers.values() for rt in s.watches)]
        self.informers: dict[ResourceType, Informer] = {
            rt: Informer(store, rt) for rt in dict.fromkeys(types)
        }
        self._changed = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        for informer in self.informers.values():
            informer.add_handler(lambda *_: self._changed.set())

    def start_informers(self, timeout: float = 30.0) -> None:
        for informer in self.informers.values():
            informer.start()
        for informer in self.informers.values():
            if not informer.wait_synced(timeout):
                raise TimeoutError(f"informer for {informer.rt.plural} did not sync within {timeout}s")

    def start(self, timeout: float = 30.0) -> None:
        self.start_informers(timeout)
        self._thread = threading.Thread(target=self._run, name="scheduler-loop", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._changed.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for informer in self.informers.values():
            informer.stop()

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._changed.wait(self.period)
            self._changed.clear()
            if self._stopped.is_set():
                return
            try:
                self.run_once()
            except Exception:  # a failed pass must not stop scheduling; the next one starts from scratch
                _log.exception("scheduler pass failed")

    def run_once(self) -> PassResult:
        """Plan one pass from the informer caches and write all of it."""
        objects = {rt: self._sorted(rt) for rt in self.informers}
        planned = plan_pass(self.clock.now(), objects[NODES], objects[PODS], objects, self.schedulers)
        for _, result in planned.results:
            self.write(result)
        return planned

    def _sorted(self, rt: ResourceType) -> list[Object]:
        return sorted(self.informers[rt].list(), key=lambda o: pod_key(o))

    # -- writes ---------------------------------------------------------------------------------------------
    def write(self, result: CycleResult) -> None:
        """Apply one cycle result: evictions, bindings, status writes, then pending conditions."""
        now = self.clock.now()
        for eviction in result.evictions:
            self._guard(partial(self.store.delete, PODS, *_split(eviction.pod_key)))
        for binding in result.bindings:
            self._guard(partial(self._bind, binding, now))
        for write in result.status_writes:
            self._guard(partial(self._write_status, write))
        for reason in result.pending:
            if reason.status == Status.SKIP:  # not this scheduler's business: leave the pod's condition alone
                continue
            for key in reason.pod_keys:
                self._guard(partial(self._mark_pending, key, reason, now))

    def _guard(self, action: Callable[[], object]) -> None:
        try:
            action()
        except (Conflict, NotFound) as err:
            _log.debug("scheduler write skipped, retried next pass: %s", err)

    def _cached_pod(self, key: str) -> Object:
        pod = self.informers[PODS].get(*_split(key))
        if pod is None:
            raise NotFound(f'pods "{key}" not found')
        return pod

    def _bind(self, binding: Binding, now: float) -> None:
        pod = copy.deepcopy(self._cached_pod(binding.pod_key))
        if (pod.get("spec") or {}).get("nodeName"):
            return
        pod["spec"]["nodeName"] = binding.node
        bound = self.store.update(PODS, pod)
        self._mark_scheduled(bound, now)

    def _mark_scheduled(self, pod: Object, now: float, attempts: int = 5) -> None:
        """PodScheduled=True on the bound pod. The node agent may write the pod (its finalizer) right after
        the binding, so a conflict re-reads and retries rather than leaving a stale Unschedulable message."""
        for _ in range(attempts):
            updated = with_condition(pod, scheduled_condition(), now)
            if updated is None:
                return
            try:
                self.store.update_status(PODS, updated)
                return
            except Conflict:
                pod = self.store.get(PODS, *_split(pod_key(pod)))

    def _write_status(self, write: StatusWrite) -> None:
        informer = self.informers.get(write.rt)
        current = informer.get(write.namespace, write.name) if informer else None
        obj = (
            copy.deepcopy(current)
            if current is not None
            else self.store.get(write.rt, write.namespace, write.name)
        )
        obj["status"] = dict(write.status)
        if write.rt.has_status:
            self.store.update_status(write.rt, obj)
        else:  # e.g. Volcano's PodGroup CRD has no status subresource: status is part of the object
            self.store.update(write.rt, obj)

    def _mark_pending(self, key: str, reason: PendingReason, now: float) -> None:
        pod = self._cached_pod(key)
        if (pod.get("spec") or {}).get("nodeName"):
            return
        updated = with_condition(pod, unschedulable_condition(reason), now)
        if updated is not None:
            self.store.update_status(PODS, updated)
            if reason.status == Status.ERROR:  # broken input: say so once, where `kubectl describe` shows it
                self._warn(pod, reason, now)

    def _warn(self, pod: Object, reason: PendingReason, now: float) -> None:
        """A Warning Event on ``pod`` (written when its condition changes, so not every pass)."""
        meta = pod.get("metadata") or {}
        stamp = rfc3339(now)
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{meta.get('name')}.{int(now * 1e9):x}",
                "namespace": meta.get("namespace"),
            },
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta.get("name"),
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
            },
            "type": "Warning",
            "reason": reason.reason,
            "message": reason.message[:950],
            "source": {"component": _scheduler_name(pod)},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        try:
            self.store.create(EVENTS, event)
        except ApiError as err:
            _log.warning("event %s for %s not recorded: %s", reason.reason, pod_key(pod), err)


__all__ = [
    "INVALID_POD",
    "POD_SCHEDULED",
    "SCHEDULER_ERROR",
    "PassResult",
    "SchedulerLoop",
    "build_snapshot",
    "plan_pass",
    "run_pass",
    "scheduled_condition",
    "unschedulable_condition",
    "with_condition",
]
