"""The scheduler shell's writes besides bindings: evictions, status writes, "why pending" conditions, Events.

A write that loses a race (``Conflict``, ``NotFound``) is dropped: the next pass sees the new state and
decides again. A condition is written only when it changed, and its Warning Event (``FailedScheduling``, or
the broken input's reason) only then. Events go through one ``EventRecorder`` per scheduler name (the
Event's source, as kube-scheduler's profile name), so repeats are counted, not duplicated.
An eviction first marks the victim ``DisruptionTarget`` (``PreemptionByScheduler``) and records ``Preempted``
on it, then deletes it, as kube-scheduler's preemption does (``prepareCandidate``), so the pod's owner (a
Job's ``podFailurePolicy``) can tell a preemption from a failure.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from gangplane.client.events import EventRecorder
from gangplane.client.informer import Informer
from gangplane.clock import Clock, rfc3339
from gangplane.errors import ApiError, Conflict, NotFound
from gangplane.schedulers.base import CycleResult, Eviction, PendingReason, Status, StatusWrite
from gangplane.schedulers.core.objects import DEFAULT_SCHEDULER
from gangplane.schedulers.core.preemption import disruption_condition, preempted_event
from gangplane.store.base import Object, ResourceType, Store
from gangplane.store.catalog import EVENTS, PODS

_log = logging.getLogger(__name__)
POD_SCHEDULED = "PodScheduled"
SCHEDULED = "Scheduled"  # kube-scheduler's Normal Event after a bind
FAILED_SCHEDULING = "FailedScheduling"  # its Warning Event for a pod that does not fit
_FAILED = (Status.UNSCHEDULABLE, Status.UNSCHEDULABLE_AND_UNRESOLVABLE)  # WAIT is not a failure


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


def _split(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


def _scheduler_name(pod: Mapping[str, Any]) -> str:
    return (pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER


class ResultWriter:
    """Writes a cycle's evictions, status writes and pending conditions, reading from ``informers``."""

    def __init__(self, store: Store, clock: Clock, informers: Mapping[ResourceType, Informer]) -> None:
        self.store, self.clock, self.informers = store, clock, informers
        self._recorders: dict[str, EventRecorder] = {}
        self.lost: Callable[[str, StatusWrite], None] | None = None  # told of a status write that lost a race

    def recorder(self, scheduler: str) -> EventRecorder:
        """The Event recorder of ``scheduler`` (created on first use; dict writes are atomic)."""
        found = self._recorders.get(scheduler)
        if found is None:
            found = self._recorders.setdefault(scheduler, EventRecorder(self.store, self.clock, scheduler))
        return found

    def event(self, pod: Object, type_: str, reason: str, message: str) -> None:
        """An Event on ``pod`` from its scheduler (list items may lack ``kind``: it is a Pod)."""
        self.recorder(_scheduler_name(pod)).event(
            {**pod, "apiVersion": "v1", "kind": "Pod"}, type_, reason, message
        )

    def scheduled(self, key: str, node: str, uid: str) -> None:
        """kube-scheduler's ``Scheduled`` Event, written after the bind succeeded (binder thread)."""
        namespace, name = _split(key)
        pod = self.informers[PODS].get(namespace, name) or {"spec": {}}
        meta = {"namespace": namespace, "name": name, "uid": uid}
        self.event({**pod, "metadata": meta}, "Normal", SCHEDULED, f"Successfully assigned {key} to {node}")

    def write(self, result: CycleResult, scheduler: str = DEFAULT_SCHEDULER) -> None:
        now = self.clock.now()
        for eviction in result.evictions:
            self.guard(partial(self._evict, eviction, scheduler, now))
        for write in result.status_writes:
            if not self.guard(partial(self._write_status, write)) and self.lost is not None:
                self.lost(scheduler, write)  # decided again from the newer object
        for reason in result.pending:
            if reason.status == Status.SKIP:  # not this scheduler's business: leave the pod's condition alone
                continue
            for key in reason.pod_keys:
                self.guard(partial(self._mark_pending, key, reason, now))

    def guard(self, action: Callable[[], object]) -> bool:
        """Run ``action``; ``False`` when it lost a race (skipped, decided again by a later pass)."""
        try:
            action()
        except (Conflict, NotFound) as err:
            _log.debug("scheduler write skipped, retried next pass: %s", err)
            return False
        return True

    def _cached_pod(self, key: str) -> Object:
        pod = self.informers[PODS].get(*_split(key))
        if pod is None:
            raise NotFound(f'pods "{key}" not found')
        return pod

    def _write_status(self, write: StatusWrite) -> None:
        informer = self.informers.get(write.rt)
        current = informer.get(write.namespace, write.name) if informer else None
        obj = (
            copy.deepcopy(current)
            if current is not None
            else self.store.get(write.rt, write.namespace, write.name)
        )
        obj["status"] = write.applied_to(obj.get("status") or {})
        if write.rt.has_status:
            self.store.update_status(write.rt, obj)
        else:  # e.g. Volcano's PodGroup CRD has no status subresource: status is part of the object
            self.store.update(write.rt, obj)

    def _mark_pending(self, key: str, reason: PendingReason, now: float) -> None:
        """The pod's ``PodScheduled=False`` condition, written on the cached pod; on a ``Conflict`` once more
        on a fresh read. The cache lags this writer's own last condition write, and a pod's status write does
        not requeue it (``intake.py``), so a dropped write would never be retried: a gang member kept the
        message of its first attempt ("cannot find enough sibling pods") while its sibling showed the gang's."""
        try:
            self._condition(self._cached_pod(key), reason, now)
        except Conflict:
            self._condition(self.store.get(PODS, *_split(key)), reason, now)

    def _condition(self, pod: Object, reason: PendingReason, now: float) -> None:
        if (pod.get("spec") or {}).get("nodeName"):
            return
        updated = with_condition(pod, unschedulable_condition(reason), now)
        if updated is not None:
            self.store.update_status(PODS, updated)
            # said once per change of message, where `kubectl describe` shows it: a broken input under its
            # own reason, a pod that does not fit as kube-scheduler's FailedScheduling
            if reason.status == Status.ERROR:
                self.event(pod, "Warning", reason.reason, reason.message)
            elif reason.status in _FAILED:
                self.event(pod, "Warning", FAILED_SCHEDULING, reason.message)

    def _evict(self, eviction: Eviction, scheduler: str, now: float) -> None:
        """Mark the victim (condition, Event), then delete it. Read fresh: evictions are rare, and a stale
        copy would lose the condition write to a conflict."""
        pod = self.store.get(PODS, *_split(eviction.pod_key))
        marked = with_condition(pod, disruption_condition(scheduler, eviction.message), now)
        if marked is not None:
            self.store.update_status(PODS, marked)
        try:
            self.store.create(EVENTS, preempted_event(pod, scheduler, eviction.message, now))
        except ApiError as err:  # events are best effort: the eviction goes on
            _log.warning("Preempted event for %s not recorded: %s", eviction.pod_key, err)
        self.store.delete(PODS, *_split(eviction.pod_key))


__all__ = [
    "FAILED_SCHEDULING",
    "POD_SCHEDULED",
    "SCHEDULED",
    "ResultWriter",
    "scheduled_condition",
    "unschedulable_condition",
    "with_condition",
]
