"""A bounded, in-memory log of committed changes, so a watch can resume from a resourceVersion.

The log keeps the newest ``capacity`` changes across all types, and no more than ``max_bytes`` of them
(measured as their JSON size, counting a MODIFIED change's previous version too), so large objects updated
often cannot pin memory. A resume point older than what the log still
covers raises ``errors.Gone`` (HTTP 410): the client must list again. Appending is O(1); the log holds no
lock of its own (the engine's write lock serialises appends and reads).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from gangplane.errors import Gone
from gangplane.store.base import EventType, Object
from gangplane.store.objects import TypeKey

DEFAULT_HISTORY_BYTES = 64 * 1024 * 1024


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


class History:
    """Changes with ``floor < rv <= newest``; every change after ``floor`` is present."""

    def __init__(self, capacity: int, floor: int, max_bytes: int = DEFAULT_HISTORY_BYTES) -> None:
        if capacity < 1 or max_bytes < 1:
            raise ValueError("history capacity and max_bytes must be at least 1")
        self._changes: deque[Change] = deque()
        self._capacity = capacity
        self._max_bytes = max_bytes
        self.bytes = 0
        self.floor = floor

    def append(self, change: Change) -> None:
        """Keep the newest change always (a watcher may be resuming from just before it)."""
        self._changes.append(change)
        self.bytes += change.size
        while len(self._changes) > 1 and (
            len(self._changes) > self._capacity or self.bytes > self._max_bytes
        ):
            dropped = self._changes.popleft()
            self.bytes -= dropped.size
            self.floor = dropped.rv

    def since(self, rv: int) -> list[Change]:
        """Changes with a version above ``rv``, oldest first; ``Gone`` if some were already dropped."""
        if rv < self.floor:
            raise Gone(f"too old resource version: {rv} ({self.floor})")
        start = len(self._changes)
        while start > 0 and self._changes[start - 1].rv > rv:
            start -= 1
        return [self._changes[i] for i in range(start, len(self._changes))]

    def __len__(self) -> int:
        return len(self._changes)
