"""Watch fan-out: one unbounded queue per watch, so a slow reader never blocks a writer.

The engine calls ``Watcher.offer`` under its write lock with each durable change; ``offer`` only filters
and enqueues (no copying, no I/O). The reader's thread copies each object as it is yielded, so callers may
mutate what they receive, except for a ``shared`` watch: its events carry the committed dicts themselves,
for in-process readers that never mutate them (informers; see ``client/readonly.py`` for the check).
A watch ends on ``close()`` (from any thread), on its timeout, or when the store closes.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator

from gangplane.store.base import EventType, Object, ResourceType, WatchEvent
from gangplane.store.history import Change
from gangplane.store.objects import clone
from gangplane.store.selectors import ObjectFilter

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_CLOSED = object()


def translate(change: Change, selection: ObjectFilter) -> WatchEvent | None:
    """The event a watcher with ``selection`` sees for ``change``, if any: objects entering the selection
    are ADDED, objects leaving it are DELETED (with their new state), as the API server's watch cache does."""
    now = selection.matches(change.object)
    if change.type is not EventType.MODIFIED:
        return WatchEvent(change.type, change.object, change.rv) if now else None
    before = change.old is not None and selection.matches(change.old)
    if now and before:
        return WatchEvent(EventType.MODIFIED, change.object, change.rv)
    if now:
        return WatchEvent(EventType.ADDED, change.object, change.rv)
    if before:
        return WatchEvent(EventType.DELETED, change.object, change.rv)
    return None


def bookmark(rt: ResourceType, rv: int, *, initial_end: bool = False) -> WatchEvent:
    metadata: dict[str, object] = {"resourceVersion": str(rv)}
    if initial_end:
        metadata["annotations"] = {INITIAL_EVENTS_END: "true"}
    obj: Object = {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": metadata}
    return WatchEvent(EventType.BOOKMARK, obj, rv)


class Watcher:
    """One open watch. ``drained_rv`` returns the store's current version if this watcher's queue is empty
    (checked under the store lock), else None; that is the only version a bookmark may safely carry."""

    def __init__(
        self,
        rt: ResourceType,
        selection: ObjectFilter,
        *,
        drained_rv: Callable[[Watcher], int | None],
        on_close: Callable[[Watcher], None],
        bookmark_interval: float | None,
        timeout: float | None,
        shared: bool = False,
    ) -> None:
        self.rt = rt
        self.shared = shared
        self.selection = selection
        self.since = 0  # the version the watch started after: changes up to it are not offered again
        self.queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._drained_rv = drained_rv
        self._on_close = on_close
        self._bookmark_interval = bookmark_interval
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._closed = threading.Event()

    def offer(self, change: Change) -> None:
        event = translate(change, self.selection)
        if event is not None:
            self.queue.put(event)

    def push(self, event: WatchEvent) -> None:
        self.queue.put(event)

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self.queue.put(_CLOSED)
            self._on_close(self)

    def _wait(self) -> float | None:
        waits = [w for w in (self._bookmark_interval, self._remaining()) if w is not None]
        return max(0.0, min(waits)) if waits else None

    def _remaining(self) -> float | None:
        return None if self._deadline is None else self._deadline - time.monotonic()

    def events(self) -> Iterator[WatchEvent]:
        try:
            while not self._closed.is_set():
                remaining = self._remaining()
                if remaining is not None and remaining <= 0:
                    return
                try:
                    item = self.queue.get(timeout=self._wait())
                except queue.Empty:
                    if self._bookmark_interval is not None and (rv := self._drained_rv(self)) is not None:
                        yield bookmark(self.rt, rv)
                    continue
                if item is _CLOSED:
                    return
                assert isinstance(item, WatchEvent)
                yield (
                    item if self.shared else WatchEvent(item.type, clone(item.object), item.resource_version)
                )
        finally:
            self.close()
