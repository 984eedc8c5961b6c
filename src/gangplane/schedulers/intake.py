"""Informer events into the scheduler cache and queue, with the QueueingHints that requeue waiting pods.

kube-scheduler's ``eventhandlers.go``: every node and pod event updates the cache (parsed once per
resourceVersion); an unbound pod of a known scheduler joins the queue; and an event that may make a waiting
pod schedulable moves it back to the active queue. The hints, per event:

- node added, or updated so that it offers more (capacity, labels, taints, schedulable again): move all;
  a node update that changes nothing a fit check reads (a heartbeat): nothing;
- bound pod deleted or finished (capacity freed): move all; a binding that failed: move all;
- pending pod added, or its spec / labels / annotations changed: activate its unit (a status write, such as
  our own ``PodScheduled=False``, is not a reason to try again); a new member of a gang that still has
  fewer than ``minMember`` (ungated) pods joins its unit without an attempt (the scheduler's ``may_attempt``:
  PreFilter would reject it for the reason its siblings carry);
- a gang member added, bound or gone (deleted, being deleted): activate its gang (siblings form in
  consecutive passes); a member's status write is not (Coscheduling registers pod adds, not updates);
- an object a scheduler watches (PodGroup, Queue, HyperNode, ...) added, deleted or its spec, labels or
  annotations changed: that scheduler's cycle runs and the unit named like the object (a gang's PodGroup) is
  activated. A status-only change activates nothing for a per-unit scheduler (it is that scheduler's own
  write); a session scheduler's cycle still runs, as before;
- a PersistentVolumeClaim added or just bound: move all (a pod waiting on it may now pass VolumeBinding);
- a pod event of a session scheduler (Volcano, KAI): that scheduler's cycle runs, as its group statuses
  follow the pods. For a per-unit scheduler (the default scheduler) only a change its group statuses read —
  a member added or gone, its phase, deletion or owners, of a pod of any scheduler — marks that group
  changed (``Changes.groups``): its next cycle recomputes that group's status alone.

A pending pod whose spec does not convert is noted in ``broken`` (its ``Error`` condition is written once).
All methods run under the loop's lock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gangplane.schedulers.base import Changes, Scheduler
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


def _member_facts(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a group's status reads of a member (PodGroup phase counts, ``occupiedBy``)."""
    meta = pod.get("metadata") or {}
    return (pod.get("status") or {}).get("phase"), meta.get("deletionTimestamp"), meta.get("ownerReferences")


def _gang_event(before: PodEntry | None, entry: PodEntry | None) -> bool:
    """A member added, bound or gone: the gang QueueingHint. A status write (a condition) is none of these.
    A new pending member is left to ``Intake._enqueue`` (its scheduler's ``may_attempt``)."""
    if entry is None:
        return True
    if before is None:
        return not entry.pending
    return _newly(before.obj, entry.obj, "spec", "nodeName") or _newly(
        before.obj, entry.obj, "metadata", "deletionTimestamp"
    )


def _newly(was: Mapping[str, Any], now: Mapping[str, Any], part: str, field: str) -> bool:
    """``part.field`` was empty and is set now (bound; being deleted)."""
    return not (was.get(part) or {}).get(field) and bool((now.get(part) or {}).get(field))


def _groups(scheduler: Scheduler, before: PodEntry | None, entry: PodEntry | None) -> set[str]:
    """The groups a pod was and is in (both when its label moved it)."""
    found = {scheduler.group_of(e.obj) for e in (before, entry) if e is not None}
    return {group for group in found if group is not None}


def may_help(old: NodeInfo | None, new: NodeInfo) -> bool:
    """Whether a node change can make a pod fit that did not (``NodeInfo`` holds only what fit reads)."""
    return old != new


class Intake:
    def __init__(
        self,
        cache: SchedulerCache,
        queue: SchedulingQueue,
        schedulers: Mapping[str, Scheduler],
        changes: Callable[[str], Changes] | None = None,
    ) -> None:
        """``changes``: keyed reads for a scheduler's hints (``may_attempt``), as its cycle gets them."""
        self.cache, self.queue, self.schedulers, self._changes = cache, queue, schedulers, changes
        self.broken: dict[str, dict[str, str]] = {name: {} for name in schedulers}
        self._per_unit = {n: s for n, s in schedulers.items() if queue.modes.get(n) is Queueing.PER_UNIT}

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
        if before is None and key not in self.queue and not self._may_attempt(name, entry.info.group):
            self.queue.join(entry.info)
        elif changed or key not in self.queue:
            self.queue.add(entry.info)
        else:
            self.queue.refresh(entry.info)

    def _may_attempt(self, name: str, group: str | None) -> bool:
        """The scheduler's hint for a new member (``may_attempt``); without one, every new pod is tried."""
        hint = getattr(self.schedulers[name], "may_attempt", None)
        if group is None or hint is None or self._changes is None:
            return True
        return bool(hint(group, self._changes(name)))

    def _after(self, before: PodEntry | None, entry: PodEntry | None) -> None:
        """Hints from a pod change beyond its own queueing: freed capacity, gangs, statuses."""
        was = before.counted_on if before is not None else ""
        now = entry.counted_on if entry is not None else ""
        if was and not now:
            self.queue.move()  # capacity freed
        self._mark_groups(before, entry)
        some = entry if entry is not None else before
        assert some is not None
        name = _scheduler_name(some.obj)
        if name not in self.schedulers:
            return
        if self.queue.modes.get(name) is Queueing.SESSION:
            self.queue.mark_dirty(name)
        if _gang_event(before, entry):  # also for a finished pod, which has no info
            for group in _groups(self.schedulers[name], before, entry):
                self.queue.activate(name, group)

    def _mark_groups(self, before: PodEntry | None, entry: PodEntry | None) -> None:
        """Groups of per-unit schedulers whose status a pod change may alter (of a pod of any scheduler:
        a PodGroup counts every labelled pod)."""
        changed = before is None or entry is None or _member_facts(before.obj) != _member_facts(entry.obj)
        for name, scheduler in self._per_unit.items():
            groups = _groups(scheduler, before, entry)
            if changed or len(groups) > 1:
                for group in groups:
                    self.queue.mark_dirty(name, group)

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
            if rt not in scheduler.watches or rt == PODS:
                continue
            if name in self._per_unit and not _object_changed(kind, obj, old):
                continue  # a status-only write, our own: no reason to try again
            self.queue.mark_dirty(name, unit)
            self.queue.activate(name, unit)


def _object_changed(kind: EventType, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    return kind is EventType.DELETED or old is None or _desired(old) != _desired(obj)


__all__ = ["Intake", "may_help"]
