"""A bounded, in-memory log of committed changes, so a watch can resume from a resourceVersion.

Kept per resource type, as kube-apiserver's watch cache keeps one cache per type: a burst of one type (Events)
cannot evict another's recent past. Each type keeps its newest ``min_per_type`` changes at least, and beyond
that only changes younger than ``fresh_seconds`` (kube-apiserver sizes each watch cache between 100 and
100 * 1024 events by the same 75 s "event fresh duration": k8s.io/apiserver pkg/storage/cacher/watch_cache.go).
Across all types the log holds no more than ``capacity`` changes and ``max_bytes`` of them (their JSON size,
counting a MODIFIED change's previous version too), taking the oldest changes of the largest type first, so
large objects updated often cannot pin memory. Old versions live only here (the store holds the current ones,
and a change shares its object with the store), so this bound is most of what the history costs.

Events are kept encoded (``store/compact.py``) and decoded when a watch resumes through them, as the store
holds them: kube-apiserver keeps no watch cache for Events at all, and here nothing reads their past except a
resuming watch. 1,590 Event changes took 2.5 MiB held decoded in the memory benchmark, 0.74 MiB so.

A resume point older than what the log still covers for that type raises ``errors.Gone`` (HTTP 410): the
client must list again, which every informer does. Appending is O(1) amortised plus O(types) when a global
bound is hit; the log holds no lock of its own (the engine's write lock serialises appends and reads).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from gangplane.errors import Gone
from gangplane.store.base import EventType, Object
from gangplane.store.compact import COMPACT_TYPES, decode, encode
from gangplane.store.objects import TypeKey

DEFAULT_HISTORY_BYTES = 64 * 1024 * 1024
MIN_PER_TYPE = 100  # kube-apiserver's --default-watch-cache-size
FRESH_SECONDS = 75.0  # kube-apiserver's eventFreshDuration


@dataclass(frozen=True, slots=True)
class Change:
    """One committed write. ``old`` is the previous state (None for ADDED) so watchers with selectors can
    turn a MODIFIED into ADDED or DELETED when an object enters or leaves their selection."""

    rv: int
    type_key: TypeKey
    type: EventType
    object: Object
    old: Object | None
    size: int = 0  # bytes this change keeps alive (its JSON, twice when it also holds the old version)
    packed: bytes | None = None  # ``object`` encoded, for a type the store holds encoded (compact.py)


@dataclass(frozen=True, slots=True)
class _Packed:
    """A change of an encoded type as the log keeps it: its objects encoded."""

    rv: int
    type_key: TypeKey
    type: EventType
    object: bytes
    old: bytes | None
    size: int

    @staticmethod
    def of(change: Change) -> _Packed:
        old = None if change.old is None else encode(change.old)
        packed = encode(change.object) if change.packed is None else change.packed  # the store's own bytes
        return _Packed(change.rv, change.type_key, change.type, packed, old, change.size)

    def unpacked(self) -> Change:
        old = None if self.old is None else decode(self.old)
        return Change(self.rv, self.type_key, self.type, decode(self.object), old, self.size)


@dataclass(slots=True)
class _TypeLog:
    """One type's changes with ``floor < rv``: every change of the type after ``floor`` is present."""

    floor: int
    changes: deque[Change | _Packed] = field(default_factory=deque)
    times: deque[float] = field(default_factory=deque)  # when each was appended (apart: no pair per change)


class History:
    """Per type, the changes after that type's floor; ``floor`` is where a type never written starts."""

    def __init__(
        self,
        capacity: int,
        floor: int,
        max_bytes: int = DEFAULT_HISTORY_BYTES,
        *,
        min_per_type: int = MIN_PER_TYPE,
        fresh_seconds: float = FRESH_SECONDS,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        if capacity < 1 or max_bytes < 1 or min_per_type < 1:
            raise ValueError("history capacity, max_bytes and min_per_type must be at least 1")
        self._logs: dict[TypeKey, _TypeLog] = {}
        self._capacity, self._max_bytes = capacity, max_bytes
        self._min_per_type, self._fresh, self._now = min_per_type, fresh_seconds, now
        self._count = 0
        self._next_sweep = 0.0
        self.bytes = 0
        self.floor = floor

    def append(self, change: Change) -> None:
        """Keep the newest change always (a watcher may be resuming from just before it)."""
        log = self._logs.setdefault(change.type_key, _TypeLog(self.floor))
        now = self._now()
        log.changes.append(_Packed.of(change) if change.type_key in COMPACT_TYPES else change)
        log.times.append(now)
        self._count += 1
        self.bytes += change.size
        self._expire(log, now)
        if now >= self._next_sweep:  # types gone quiet age out too, without a pass over all on every write
            self._next_sweep = now + 1.0
            for each in self._logs.values():
                self._expire(each, now)
        while self._count > 1 and (self._count > self._capacity or self.bytes > self._max_bytes):
            self._drop(max(self._logs.values(), key=lambda each: (len(each.changes), each is not log)))

    def _expire(self, log: _TypeLog, now: float) -> None:
        while len(log.changes) > self._min_per_type and now - log.times[0] > self._fresh:
            self._drop(log)

    def _drop(self, log: _TypeLog) -> None:
        dropped = log.changes.popleft()
        log.times.popleft()
        self._count -= 1
        self.bytes -= dropped.size
        log.floor = dropped.rv

    def since(self, rv: int, type_key: TypeKey) -> list[Change]:
        """Changes of ``type_key`` with a version above ``rv``, oldest first; ``Gone`` if some were already
        dropped."""
        log = self._logs.get(type_key) or _TypeLog(self.floor)
        if rv < log.floor:
            raise Gone(f"too old resource version: {rv} ({log.floor})")
        changes = log.changes
        start = len(changes)
        while start > 0 and changes[start - 1].rv > rv:
            start -= 1
        return [_unpacked(changes[i]) for i in range(start, len(changes))]

    def count(self, type_key: TypeKey) -> int:
        log = self._logs.get(type_key)
        return 0 if log is None else len(log.changes)

    def __len__(self) -> int:
        return self._count


def _unpacked(kept: Change | _Packed) -> Change:
    return kept.unpacked() if isinstance(kept, _Packed) else kept
