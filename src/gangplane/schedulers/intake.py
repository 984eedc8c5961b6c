"""Informer events into the scheduler cache and queue, with the QueueingHints that requeue waiting pods.

kube-scheduler's ``eventhandlers.go``: every node and pod event updates the cache (parsed once per
resourceVersion); an unbound pod of a known scheduler joins the queue; and an event that may make a waiting
pod schedulable moves it back to the active queue. The hints, per event:

- node added, or updated so that it offers more (capacity, labels, taints, schedulable again): move all;
  a node update that changes nothing a fit check reads (a heartbeat): nothing;
- bound pod deleted or finished (capacity freed): move all; a binding that failed: move all;
- pending pod added, or its spec / labels / annotations changed: activate its unit (a status write, such as
  our own ``PodScheduled=False``, is not a reason to try again);
- a gang member bound or gone: activate its gang (siblings form in consecutive passes);
- an object a scheduler watches (PodGroup, Queue, HyperNode, ...) changed: that scheduler's cycle runs
  (its statuses may change) and the unit named like the object (a gang's PodGroup) is activated;
- a PersistentVolumeClaim added or just bound: move all (a pod waiting on it may now pass VolumeBinding);
- a pod event of a gang member or of a session scheduler (Volcano, KAI): that scheduler's cycle runs, as its
  group statuses follow the pods.

A pending pod whose spec does not convert is noted in ``broken`` (its ``Error`` condition is written once).
All methods run under the loop's lock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gangplane.schedulers.base import Scheduler
from gangplane.schedulers.cache import PodEntry, SchedulerCache
from gangplane.schedulers.core.objects import DEFAULT_SCHEDULER, NodeInfo, pod_key
from gangplane.schedulers.queue import Queueing, SchedulingQueue
from gangplane.schedulers.volume_binding import claim_now_usable
from gangplane.store.base import EventType, Object, ResourceType
from gangplane.store.catalog import PERSISTENT_VOLUME_CLAIMS, PODS


def _scheduler_name(pod: Mapping[str, Any]) -> str:
    return (pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER


def _desired(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a user or controller may change on a pending pod, without status and bookkeeping."""
    meta = pod.get("metadata") or {}
    return pod.get("spec"), meta.get("labels"), meta.get("annotations"), meta.get("deletionTimestamp")


def may_help(old: NodeInfo | None, new: NodeInfo) -> bool:
    """Whether a node change can make a pod fit that did not (``NodeInfo`` holds only what fit reads)."""
    return old != new


class Intake:
    def __init__(
        self, cache: SchedulerCache, queue: SchedulingQueue, schedulers: Mapping[str, Scheduler]
    ) -> None:
        self.cache, self.queue, self.schedulers = cache, queue, schedulers
        self.broken: dict[str, dict[str, str]] = {name: {} for name in schedulers}

    # -- nodes ----------------------------------------------------------------------------------------------
    def on_node(self, kind: EventType, obj: Object, old: Object | None) -> None:
        name = str((obj.get("metadata") or {}).get("name") or "")
        if kind is EventType.DELETED:
            self.cache.delete_node(name)
            return
        before = self.cache.set_node(obj)
        after = self.cache.nodes.get(name)
        if after is not None and (before is None or may_help(before, after)):
            self.queue.move()

    # -- pods -----------------------------------------------------------------------------------------------
    def on_pod(self, kind: EventType, obj: Object, old: Object | None) -> None:
        key = pod_key(obj)
        if kind is EventType.DELETED:
            gone = self.cache.delete_pod(key)
            self.queue.remove(key)
            self._forget_broken(obj)
            if gone is not None:
                self._after(gone, None)
            return
        before, entry = self.cache.set_pod(obj)
        if before is entry:
            return
        self._enqueue(before, entry)
        self._after(before, entry)

    def _enqueue(self, before: PodEntry | None, entry: PodEntry) -> None:
        key, name = pod_key(entry.obj), _scheduler_name(entry.obj)
        if not entry.pending or name not in self.schedulers:
            self.queue.remove(key)
            self._forget_broken(entry.obj)
            return
        if entry.info is None:
            self.queue.remove(key)
            self.broken[name][key] = entry.error
            return
        self._forget_broken(entry.obj)
        changed = before is None or not before.pending or _desired(before.obj) != _desired(entry.obj)
        if changed or key not in self.queue:
            self.queue.add(entry.info)
        else:
            self.queue.refresh(entry.info)

    def _after(self, before: PodEntry | None, entry: PodEntry | None) -> None:
        """Hints from a pod change beyond its own queueing: freed capacity, gangs, statuses."""
        was = before.counted_on if before is not None else ""
        now = entry.counted_on if entry is not None else ""
        if was and not now:
            self.queue.move()  # capacity freed
        some = entry if entry is not None else before
        assert some is not None
        name = _scheduler_name(some.obj)
        if name not in self.schedulers:
            return
        group = self.schedulers[name].group_of(some.obj)  # also for a finished pod, which has no info
        if group is not None:
            self.queue.activate(name, group)
        if group is not None or self.queue.modes.get(name) is Queueing.SESSION:
            self.queue.mark_dirty(name)

    def _forget_broken(self, obj: Mapping[str, Any]) -> None:
        self.broken.get(_scheduler_name(obj), {}).pop(pod_key(obj), None)

    def take_broken(self) -> dict[str, dict[str, str]]:
        """The broken pending pods noted since the last call, per scheduler."""
        out = {name: dict(keys) for name, keys in self.broken.items() if keys}
        for keys in self.broken.values():
            keys.clear()
        return out

    # -- watched objects ------------------------------------------------------------------------------------
    def on_object(self, rt: ResourceType, kind: EventType, obj: Object, old: Object | None = None) -> None:
        if rt == PERSISTENT_VOLUME_CLAIMS and kind is not EventType.DELETED and claim_now_usable(obj, old):
            self.queue.move()
        meta = obj.get("metadata") or {}
        unit = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        for name, scheduler in self.schedulers.items():
            if rt in scheduler.watches and rt != PODS:
                self.queue.mark_dirty(name)
                self.queue.activate(name, unit)


__all__ = ["Intake", "may_help"]
