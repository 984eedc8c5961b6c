"""The scheduler shell's writes besides bindings: evictions, status writes and "why pending" conditions.

A write that loses a race (``Conflict``, ``NotFound``) is dropped: the next pass sees the new state and
decides again. A condition is written only when it changed, and a broken input's Warning Event only then.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from gangplane.client.informer import Informer
from gangplane.clock import Clock, rfc3339
from gangplane.errors import ApiError, Conflict, NotFound
from gangplane.schedulers.base import CycleResult, PendingReason, Status, StatusWrite
from gangplane.schedulers.core.objects import DEFAULT_SCHEDULER, pod_key
from gangplane.store.base import Object, ResourceType, Store
from gangplane.store.catalog import EVENTS, PODS

_log = logging.getLogger(__name__)
POD_SCHEDULED = "PodScheduled"


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

    def write(self, result: CycleResult) -> None:
        now = self.clock.now()
        for eviction in result.evictions:
            self.guard(partial(self.store.delete, PODS, *_split(eviction.pod_key)))
        for write in result.status_writes:
            self.guard(partial(self._write_status, write))
        for reason in result.pending:
            if reason.status == Status.SKIP:  # not this scheduler's business: leave the pod's condition alone
                continue
            for key in reason.pod_keys:
                self.guard(partial(self._mark_pending, key, reason, now))

    def guard(self, action: Callable[[], object]) -> None:
        try:
            action()
        except (Conflict, NotFound) as err:
            _log.debug("scheduler write skipped, retried next pass: %s", err)

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
    "POD_SCHEDULED",
    "ResultWriter",
    "scheduled_condition",
    "unschedulable_condition",
    "with_condition",
]
