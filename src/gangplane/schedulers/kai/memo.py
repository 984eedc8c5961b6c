"""What a KAI session keeps across cycles: inputs parsed once per object, as kube-scheduler's cache parses a
pod once per resourceVersion (``schedulers/cache.py``), and the fair shares of the last queue book.

Wire dicts are read-only by contract (``schedulers/base.py``) and a changed object arrives as a new dict (the
informer stores each event's object; the simulator's shell builds a new dict per change), so an entry is
reused while the dict it was parsed from is the *same object*; the entry holds that dict, so its identity
cannot pass to another. Every table keeps only the objects seen
in the latest cycle, so memory follows the cluster. The same sequence of views gives the same results with
or without the memo (``tests/schedulers/kai/test_kai_memo.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from gangplane.schedulers.core.classes import PriorityClasses, priority_classes
from gangplane.schedulers.core.resources import ResourceIndex
from gangplane.schedulers.core.snapshot import Snapshot

T = TypeVar("T")


class ObjectTable(Generic[T]):
    """Values derived from one wire dict each, by key; rebuilt when the dict (or what it depends on) changes."""

    def __init__(self) -> None:
        self._kept: dict[Hashable, tuple[Mapping[str, Any], object, T]] = {}
        self._seen: dict[Hashable, tuple[Mapping[str, Any], object, T]] = {}

    def get(self, key: Hashable, obj: Mapping[str, Any], make: Callable[[], T], depends: object = None) -> T:
        """The value for ``obj`` under ``key``; ``make()`` when it is new or changed. ``depends`` is compared
        by identity too (e.g. the priority classes a PodGroup's priority was resolved against)."""
        kept = self._kept.get(key)
        if kept is None or kept[0] is not obj or kept[1] is not depends:
            kept = (obj, depends, make())
        self._seen[key] = kept
        return kept[2]

    def end_cycle(self) -> None:
        """Forget the objects not seen since the last call."""
        self._kept, self._seen = self._seen, {}


EVICTION_IN_FLIGHT_S = 30.0  # how long a decided eviction not yet seen in the view counts as releasing


class Evicting:
    """Pods this scheduler evicted whose deletion the view does not show yet (pod key -> uid, when decided).

    The shell writes evictions after the cycle, pod by pod, while the next cycle may already run: a victim
    not yet marked would look running, and its gang (a replacement pipelined onto the room of a pod already
    deleting) no longer a victim, so reclaim took another gang. Upstream KAI marks a victim Releasing in
    its session (``framework/session.go`` ``Evict``: ``updatePodOnSession(pod, Releasing)``) and its next
    session, one ``--schedule-period`` later, reads the deletion from the informers; our shell may run the
    next cycle at once, so the mark is kept until the view shows the pod deleting, pending or gone from
    its node, or replaced (another uid), or for ``EVICTION_IN_FLIGHT_S`` (a lost write: decided again)."""

    def __init__(self) -> None:
        self._pods: dict[str, tuple[str, float]] = {}  # in the order decided

    def __bool__(self) -> bool:
        return bool(self._pods)

    def add(self, decided: Mapping[str, str], now: float) -> None:
        for key, uid in decided.items():
            self._pods.pop(key, None)
            self._pods[key] = (uid, now)

    def expire(self, now: float) -> None:
        while self._pods:
            key, (_, when) = next(iter(self._pods.items()))
            if now - when < EVICTION_IN_FLIGHT_S:
                return
            del self._pods[key]

    def releasing(self, key: str, uid: str, held: bool, deleting: bool) -> bool:
        """Is this pod, as the view shows it, one whose eviction is still in flight? Any other sighting of
        it ends the entry."""
        found = self._pods.get(key)
        if found is None:
            return False
        if held and not deleting and found[0] == uid:
            return True
        del self._pods[key]
        return False


class KaiMemo:
    """The per-scheduler memo: PodGroups → job templates, pods → their parsed facts, priority classes."""

    def __init__(self) -> None:
        self.groups: ObjectTable[Any] = ObjectTable()
        self.pods: ObjectTable[Any] = ObjectTable()
        self.queues: ObjectTable[Any] = ObjectTable()
        self._classes: tuple[tuple[Mapping[str, Any], ...], PriorityClasses] | None = None
        # the last book's fair shares: (inputs, the queues divided, fair share per queue)
        self.shares: tuple[object, tuple[object, ...], Mapping[str, Any]] | None = None
        self._units: tuple[ResourceIndex, dict[bytes, Any]] | None = None
        self._total: tuple[object, Any] | None = None
        # the jobs kept across cycles (``kept.KeptJobs``), the inputs they were built against (priority
        # classes, broken queues), and the jobs the last cycle changed in place (rebuilt before reuse)
        self.kept: Any = None
        self.kept_inputs: object = None
        self.dirty: set[str] = set()
        self.evicting = Evicting()

    def classes(self, objs: Sequence[Mapping[str, Any]]) -> PriorityClasses:
        """The PriorityClasses, the same object while the class dicts are equal (few and small: compared whole,
        as a shell may hand over equal copies)."""
        current = tuple(objs)
        if self._classes is None or current != self._classes[0]:
            self._classes = (current, priority_classes(current))
        return self._classes[1]

    def total(self, snapshot: Snapshot, compute: Callable[[Snapshot], Any]) -> Any:
        """The cluster total, kept while the snapshot's node tuple (and so its allocatable and taints) is the
        same object."""
        if self._total is None or self._total[0] is not snapshot.nodes:
            self._total = (snapshot.nodes, compute(snapshot))
        return self._total[1]

    def units(self, index: ResourceIndex) -> dict[bytes, Any]:
        """Request row -> KAI units, kept while the resource index is the same object."""
        if self._units is None or self._units[0] is not index:
            self._units = (index, {})
        return self._units[1]

    def end_cycle(self) -> None:
        for table in (self.groups, self.pods, self.queues):
            table.end_cycle()


__all__ = ["EVICTION_IN_FLIGHT_S", "Evicting", "KaiMemo", "ObjectTable"]
