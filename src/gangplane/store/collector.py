"""The garbage collector's writes: deletion with finalizers, and the cascades of ``gc.py``'s rules.

Cascades run from a work list, never by recursion, so an owner chain of any depth is collected without
``RecursionError``, and each owner's dependents are listed once per cascade step, never once per dependent
(a release check is queued at most once per owner at a time), so deleting an owner of n dependents is
O(n) — also with ``dryRun``, where nothing is removed and the dry-run "gone" set stands in for the removals.

``sweep`` is the collector's startup pass (Kubernetes' garbage collector rebuilds its graph after a restart
the same way): an object whose every owner is gone is deleted, references to missing owners are dropped
from objects that still have a live owner, and foreground-deleting owners are re-checked for release. A
cascade cut short by a crash of the process therefore finishes at the next start.
"""

from __future__ import annotations

import logging
from collections import deque
from enum import Enum

from gangplane.errors import ApiError
from gangplane.store import gc, graceful
from gangplane.store.base import EventType, Object, Operation, Propagation, ResourceType
from gangplane.store.catalog import LEASES
from gangplane.store.engine import Engine
from gangplane.store.objects import key_of, meta, same_content

log = logging.getLogger(__name__)


class Step(Enum):
    COLLECT = "collect"  # the owner was removed: collect its dependents
    FOREGROUND = "foreground"  # the owner is foreground-deleting: delete its dependents, then release it
    RELEASE = "release"  # a dependent went: maybe drop the owner's foregroundDeletion finalizer


class Collector(Engine):
    """Deletion and garbage collection over the engine's indexes; ``ObjectStore`` adds the verbs."""

    _work: deque[tuple[Step, str]]
    _queued_releases: set[str]
    _gone: set[str]  # uids a dry run has removed (they stay in the indexes)
    _draining: bool

    def _init_collector(self) -> None:
        self._work, self._queued_releases, self._gone, self._draining = deque(), set(), set(), False

    def _save(self, rt: ResourceType, new: Object, old: Object, *, admit: bool = True) -> Object:
        """Store an update; an update that leaves a deleting object without finalizers deletes it, unless it
        is a pod still in its deletion grace period: the kubelet deletes that one when its containers stopped
        (``ShouldDeleteDuringUpdate`` in kube-apiserver's ``registry/generic/registry/store.go``)."""
        if admit:
            new = self._admit(rt, Operation.UPDATE, new, old)
        if gc.deleting(new) and not gc.finalizers(new) and not meta(old).get("deletionGracePeriodSeconds"):
            return self._remove(rt, new, old)
        if same_content(old, new):
            return old
        return self._commit(rt, EventType.MODIFIED, new, old)

    def _delete(
        self, rt: ResourceType, obj: Object, propagation: Propagation, grace: int | None = None
    ) -> Object:
        if graceful.is_pod(rt):
            kept = self._delete_pod(rt, obj, grace)
            if kept is not None:
                return kept
        if gc.deleting(obj):
            return obj
        uid = str(meta(obj)["uid"])
        if propagation is Propagation.ORPHAN:
            self._orphan(uid)
        foreground = propagation is Propagation.FOREGROUND and bool(self._live_dependents(uid))
        if not gc.finalizers(obj) and not foreground:
            return self._remove(rt, obj, obj)
        marked = self._commit(
            rt, EventType.MODIFIED, gc.mark_deleting(obj, self._now(), foreground=foreground), obj
        )
        if foreground:
            self._work.append((Step.FOREGROUND, uid))
            self._drain()
        found = self._lookup_uid(uid)
        return marked if found is None or self._dry_run else found[1]

    def _delete_pod(self, rt: ResourceType, pod: Object, grace: int | None) -> Object | None:
        """Graceful deletion (``graceful.py``): the pod as marked, or removed if already marked and its
        period is now 0; ``None`` when the delete goes on as for any object."""
        node = graceful.node_of(pod)
        served = bool(node) and self._find(LEASES, graceful.NODE_LEASE_NAMESPACE, node) is not None
        kept = graceful.after_delete(pod, grace, served, self._clock.now())
        if kept is None:
            if gc.deleting(pod) and not gc.finalizers(pod):
                return self._remove(rt, pod, pod)
            return None
        return kept if kept is pod else self._commit(rt, EventType.MODIFIED, kept, pod)

    def _orphan(self, owner_uid: str) -> None:
        for rt, dep in self._live_dependents(owner_uid):
            self._save(rt, gc.without_owner(dep, owner_uid), dep, admit=False)

    def _remove(self, rt: ResourceType, final: Object, old: Object) -> Object:
        """Delete from storage; its dependents and its foreground-deleting owners are dealt with next."""
        gone = self._commit(rt, EventType.DELETED, final, old)
        uid = str(meta(old)["uid"])
        if self._dry_run:
            self._gone.add(uid)
        self._work.append((Step.COLLECT, uid))
        for owner in sorted(gc.owner_uids(old)):
            self._queue_release(owner)
        self._drain()
        return gone

    def _queue_release(self, owner_uid: str) -> None:
        if owner_uid not in self._queued_releases:
            self._queued_releases.add(owner_uid)
            self._work.append((Step.RELEASE, owner_uid))

    def _drain(self) -> None:
        """Run the queued cascade steps; only the outermost call does, so nesting never grows the stack."""
        if self._draining:
            return
        self._draining = True
        try:
            while self._work:
                step, uid = self._work.popleft()
                if step is Step.COLLECT:
                    for dep_rt, dep in self._live_dependents(uid):
                        self._collect(dep_rt, dep, uid)
                elif step is Step.FOREGROUND:
                    for dep_rt, dep in self._live_dependents(uid):
                        self._delete(dep_rt, dep, Propagation.FOREGROUND)
                    self._queue_release(uid)
                else:
                    self._queued_releases.discard(uid)
                    self._release(uid)
        finally:
            self._draining = False
            self._work.clear()
            self._queued_releases.clear()

    def _live_dependents(self, owner_uid: str) -> list[tuple[ResourceType, Object]]:
        return [(rt, d) for rt, d in self._dependents_of(owner_uid) if str(meta(d)["uid"]) not in self._gone]

    def _alive(self, uid: str) -> bool:
        return uid in self._uids and uid not in self._gone

    def _collect(self, rt: ResourceType, dep: Object, owner_uid: str) -> None:
        current = self._find(rt, *key_of(dep))
        if (
            current is None
            or owner_uid not in gc.owner_uids(current)
            or not self._alive(meta(current)["uid"])
        ):
            return
        if any(u != owner_uid and self._alive(u) for u in gc.owner_uids(current)):
            self._save(rt, gc.without_owner(current, owner_uid), current, admit=False)
        else:
            self._delete(rt, current, Propagation.BACKGROUND)

    def _release(self, owner_uid: str) -> None:
        found = self._lookup_uid(owner_uid)
        if found is None or not self._alive(owner_uid):
            return
        rt, owner = found
        if not (gc.deleting(owner) and gc.FOREGROUND_FINALIZER in gc.finalizers(owner)):
            return  # checked first: listing the dependents is the costly part
        if gc.releasable(owner, [d for _, d in self._live_dependents(owner_uid)]):
            names = [f for f in gc.finalizers(owner) if f != gc.FOREGROUND_FINALIZER]
            self._save(rt, gc.with_finalizers(owner, names), owner, admit=False)

    def sweep(self) -> int:
        """The startup pass; returns how many objects it changed or deleted. One object that cannot be
        changed is logged and left, never stopping the rest."""
        with self._write_call():
            candidates = [
                (self._types[tk], obj) for tk, bucket in self._objects.items() for obj in bucket.values()
            ]
            changed = 0
            for rt, obj in candidates:
                try:
                    changed += self._sweep_one(rt, obj)
                except ApiError as exc:
                    log.error("garbage collector: cannot collect %s %s: %s", rt.kind, key_of(obj), exc)
            return changed

    def _sweep_one(self, rt: ResourceType, obj: Object) -> int:
        current = self._find(rt, *key_of(obj))
        if current is None:
            return 0
        owners = gc.owner_uids(current)
        missing = {u for u in owners if u not in self._uids}
        if owners and missing == owners:
            self._delete(rt, current, Propagation.BACKGROUND)
            return 1
        if missing:
            trimmed = current
            for uid in sorted(missing):
                trimmed = gc.without_owner(trimmed, uid)
            self._save(rt, trimmed, current, admit=False)
            return 1
        if gc.deleting(current) and gc.FOREGROUND_FINALIZER in gc.finalizers(current):
            self._work.append((Step.FOREGROUND, str(meta(current)["uid"])))
            self._drain()
            return 1
        return 0
