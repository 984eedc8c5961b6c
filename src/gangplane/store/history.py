"""A bounded, in-memory log of committed changes, so a watch can resume from a resourceVersion.

The log keeps the newest ``capacity`` changes across all types. A resume point older than what the log still
covers raises ``errors.Gone`` (HTTP 410): the client must list again. Appending is O(1); the log holds no
lock of its own (the engine's write lock serialises appends and reads).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from gangplane.errors import Gone
from gangplane.store.base import EventType, Object
from gangplane.store.objects import TypeKey


@dataclass(frozen=True, slots=True)
class Change:
    """One committed write. ``old`` is the previous state (None for ADDED) so watchers with selectors can
    turn a MODIFIED into ADDED or DELETED when an object enters or leaves their selection."""

    rv: int
    type_key: TypeKey
    type: EventType
    object: Object
    old: Object | None


class History:
    """Changes with ``floor < rv <= newest``; every change after ``floor`` is present."""

    def __init__(self, capacity: int, floor: int) -> None:
        if capacity < 1:
            raise ValueError("history capacity must be at least 1")
        self._changes: deque[Change] = deque()
        self._capacity = capacity
        self.floor = floor

    def append(self, change: Change) -> None:
        self._changes.append(change)
        if len(self._changes) > self._capacity:
            self.floor = self._changes.popleft().rv

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
