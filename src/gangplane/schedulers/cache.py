"""The scheduler cache: nodes and pods parsed once per resourceVersion, and snapshots taken incrementally.

kube-scheduler's ``internal/cache`` (``cache.go``, ``snapshot.go``) in our terms. Informer events arrive as
wire dicts; each is converted once (``node_info`` / ``pod_info``) when its resourceVersion changes, and kept.
Every change to what a node holds (its own facts, a pod counted on it, an assumed pod) stamps that node with
a new global generation; ``update_snapshot`` then brings a kept ``Snapshot`` up to date by visiting only the
nodes stamped after the snapshot's own generation, most recent first, stopping at the first it already has:
the cost is what changed since the last pass, not the size of the cluster. A change of the node set, of a
node's static facts (capacity, labels, taints) or of the resource index rebuilds the snapshot from the kept
infos (no dict is parsed again) — as kube-scheduler rebuilds its node lists when nodes come and go.

A pod is *counted* on a node when it is bound there and not terminal, or *assumed* there by the scheduler
(its binding is being written). An assumed pod is confirmed when the informer delivers it bound, and
forgotten when its binding fails. Pure: no I/O, no clock, not thread-safe (the loop holds one lock).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gangplane.schedulers.core.objects import (
    BROKEN_INPUT,
    GroupKey,
    NodeInfo,
    PodInfo,
    effective_requests,
    is_terminal,
    node_info,
    pod_info,
    pod_key,
)
from gangplane.schedulers.core.resources import ResourceIndex
from gangplane.schedulers.core.snapshot import Snapshot

_log = logging.getLogger(__name__)


def _rv(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def is_pending(pod: Mapping[str, Any]) -> bool:
    """Unbound, not terminal, not being deleted: a pod a scheduler should place."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    return not spec.get("nodeName") and not is_terminal(pod) and not meta.get("deletionTimestamp")


@dataclass(slots=True)
class PodEntry:
    """One pod as the cache keeps it: the informer's dict (read-only), its converted info (``None`` when the
    spec does not convert, with ``error`` saying why) and the node it is counted on (``""``: not counted)."""

    obj: Mapping[str, Any]
    requests: dict[str, int] | None
    info: PodInfo | None = None
    error: str = ""
    counted_on: str = ""
    assumed: bool = False

    @property
    def pending(self) -> bool:
        return not self.assumed and is_pending(self.obj)


class SchedulerCache:
    """Nodes and pods from informer events; ``group_of`` maps a pod dict to its gang key (by its scheduler)."""

    def __init__(self, group_of: Callable[[Mapping[str, Any]], GroupKey]) -> None:
        self._group_key_of = group_of
        self.index = ResourceIndex()
        self.nodes: dict[str, NodeInfo] = {}
        self.pods: dict[str, PodEntry] = {}
        self._node_rv: dict[str, str] = {}
        self._counted: dict[str, dict[str, PodInfo]] = {}  # node name -> pods counted on it
        self.generation = 0
        self.layout = 0  # bumped when the node set, a node's static facts or the index change
        self._recent: OrderedDict[str, int] = OrderedDict()  # node -> generation, most recent last

    # -- nodes ----------------------------------------------------------------------------------------------
    def set_node(self, obj: Mapping[str, Any]) -> NodeInfo | None:
        """Add or update a node; returns its previous info (``None`` when it is new or was malformed).
        The info is rebuilt only when the resourceVersion changed."""
        name = str((obj.get("metadata") or {}).get("name") or "")
        old = self.nodes.get(name)
        if self._node_rv.get(name) == _rv(obj) and name in self._node_rv:
            return old
        self._node_rv[name] = _rv(obj)
        try:
            info = node_info(obj)
        except BROKEN_INPUT as err:
            _log.warning("node %s left out of scheduling: malformed (%s)", name, err)
            if self.nodes.pop(name, None) is not None:
                self.layout += 1
            return old
        if info != old:
            self.nodes[name] = info
            self._grow_index(info.allocatable)
            self.layout += 1
            self._touch(name)
        return old

    def delete_node(self, name: str) -> NodeInfo | None:
        self._node_rv.pop(name, None)
        old = self.nodes.pop(name, None)
        if old is not None:
            self.layout += 1
            self._touch(name)
        return old

    # -- pods -----------------------------------------------------------------------------------------------
    def set_pod(self, obj: Mapping[str, Any]) -> tuple[PodEntry | None, PodEntry]:
        """Add or update a pod; returns ``(previous entry, current entry)`` (the same entry when the
        resourceVersion did not change, in which case nothing was recomputed)."""
        key = pod_key(obj)
        old = self.pods.get(key)
        if old is not None and _rv(old.obj) == _rv(obj):
            return old, old
        entry = self._entry(obj)
        if old is not None and old.assumed and entry.info is not None and is_pending(obj):
            entry.assumed, entry.counted_on = True, old.counted_on  # still being bound: keep the assumption
        self.pods[key] = entry
        self._recount(key, old, entry)
        return old, entry

    def delete_pod(self, key: str) -> PodEntry | None:
        old = self.pods.pop(key, None)
        if old is not None and old.counted_on:
            self._uncount(key, old.counted_on)
        return old

    def assume(self, key: str, node: str) -> PodInfo:
        """Count pending pod ``key`` on ``node`` while its binding is written (``KeyError`` if unknown)."""
        entry = self.pods[key]
        if entry.info is None or entry.counted_on:
            raise ValueError(f"pod {key} cannot be assumed: {entry.error or 'already counted'}")
        entry.assumed, entry.counted_on = True, node
        self._count(key, node, entry.info)
        return entry.info

    def forget(self, key: str) -> None:
        """Drop the assumption on ``key`` (its binding failed); a no-op once the bind was confirmed."""
        entry = self.pods.get(key)
        if entry is not None and entry.assumed:
            self._uncount(key, entry.counted_on)
            entry.assumed, entry.counted_on = False, ""

    def pending_infos(self) -> Iterable[PodEntry]:
        return (e for e in self.pods.values() if e.pending)

    # -- snapshots ------------------------------------------------------------------------------------------
    def update_snapshot(self, snapshot: Snapshot | None) -> Snapshot:
        """``snapshot`` brought up to date (the same object), or a new one when the layout changed."""
        if snapshot is None or snapshot.layout != self.layout or snapshot.index != self.index:
            return self.build_snapshot()
        changed = []
        for name, generation in reversed(self._recent.items()):
            if generation <= snapshot.generation:
                break
            changed.append(name)
        for name in changed:  # forget first: a pod re-created on another node must leave its old row first
            self._sync_forget(snapshot, name)
        for name in changed:
            self._sync_assume(snapshot, name)
        snapshot.commit()
        snapshot.generation = self.generation
        return snapshot

    def build_snapshot(self) -> Snapshot:
        """A snapshot from the kept infos alone: every node, every counted pod."""
        names = sorted(self.nodes)
        snapshot = Snapshot(self.index, [self.nodes[name] for name in names])
        for row, name in enumerate(names):  # by row: an assumed pod's own ``node_name`` is still empty
            for pod in self._counted.get(name, {}).values():
                snapshot.assume(pod, row)
        snapshot.commit()
        snapshot.generation, snapshot.layout = self.generation, self.layout
        return snapshot

    def _sync_forget(self, snapshot: Snapshot, name: str) -> None:
        if name not in self.nodes:
            return
        wanted = self._counted.get(name, {})
        for pod in snapshot.pods_on(snapshot.node_position(name)):
            if wanted.get(pod.key) is not pod:
                snapshot.forget(pod.key)

    def _sync_assume(self, snapshot: Snapshot, name: str) -> None:
        if name not in self.nodes:
            return
        row = snapshot.node_position(name)
        for key, pod in self._counted.get(name, {}).items():
            if snapshot.location(key) is None:
                snapshot.assume(pod, row)

    # -- internals ------------------------------------------------------------------------------------------
    def _entry(self, obj: Mapping[str, Any]) -> PodEntry:
        if is_terminal(obj):
            return PodEntry(obj, None)
        try:
            requests = effective_requests(obj.get("spec") or {})
        except BROKEN_INPUT as err:
            return PodEntry(obj, None, error=str(err))
        entry = PodEntry(obj, requests)
        self._grow_index(requests)
        self._convert(entry)
        return entry

    def _convert(self, entry: PodEntry) -> None:
        try:
            entry.info = pod_info(
                entry.obj, self.index, group_of=self._group_key_of(entry.obj), requests=entry.requests
            )
        except BROKEN_INPUT as err:
            entry.info, entry.error = None, str(err)

    def _recount(self, key: str, old: PodEntry | None, new: PodEntry) -> None:
        if old is not None and old.counted_on:
            self._uncount(key, old.counted_on)
        if new.info is not None and new.info.node_name:
            new.counted_on, new.assumed = new.info.node_name, False
        if new.counted_on and new.info is not None:
            self._count(key, new.counted_on, new.info)

    def _count(self, key: str, node: str, info: PodInfo) -> None:
        self._counted.setdefault(node, {})[key] = info
        self._touch(node)

    def _uncount(self, key: str, node: str) -> None:
        pods = self._counted.get(node, {})
        pods.pop(key, None)
        if not pods:
            self._counted.pop(node, None)
        self._touch(node)

    def _touch(self, node: str) -> None:
        self.generation += 1
        self._recent[node] = self.generation
        self._recent.move_to_end(node)
        if node not in self.nodes and node not in self._counted:
            del self._recent[node]

    def _grow_index(self, resources: Mapping[str, Any]) -> None:
        """A resource no node or pod named before widens the index; every info is rebuilt on it (rare)."""
        if all(name in self.index for name in resources):
            return
        self.index = ResourceIndex((*self.index.names, *resources))
        self.layout += 1
        counted = {k for pods in self._counted.values() for k in pods}
        self._counted.clear()
        for key, entry in self.pods.items():
            if entry.requests is not None:
                self._convert(entry)
            if key in counted and entry.info is not None:
                self._counted.setdefault(entry.counted_on, {})[key] = entry.info


__all__ = ["PodEntry", "SchedulerCache", "is_pending"]
