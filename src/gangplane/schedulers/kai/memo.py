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
from gangplane.schedulers.core.evicting import EVICTION_IN_FLIGHT_S, Evicting
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
        self.book: Any = (
            None  # the last cycle's ``book.KaiBook``, brought up to date by the next (``kept_book``)
        )
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
