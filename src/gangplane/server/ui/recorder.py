"""What the store forgets: pods the gang schedulers evict are simply deleted, with no Event and no trace.

The recorder watches pods from the first dashboard request on (one thread per server) and keeps the last
``LIMIT`` evictions (``timeline_view.eviction_row`` decides what counts) for the Timeline. It ends when the
store's watch ends (the store closing).
"""

from __future__ import annotations

import logging
import threading
from collections import deque

from gangplane.clock import Clock
from gangplane.errors import NotFound
from gangplane.server.ui import facts
from gangplane.server.ui.live import open_watch
from gangplane.server.ui.timeline_view import TimelineRow, eviction_row
from gangplane.store import catalog
from gangplane.store.base import EventType, Object, Store

LIMIT = 1000
_log = logging.getLogger(__name__)


class EvictionRecorder:
    def __init__(self, store: Store, clock: Clock) -> None:
        self.store, self.clock = store, clock
        self._rows: deque[TimelineRow] = deque(maxlen=LIMIT)
        self._seen: deque[str] = deque(maxlen=LIMIT)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start watching (once; later calls do nothing)."""
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="dashboard-evictions", daemon=True)
            self._thread.start()

    def rows(self) -> list[TimelineRow]:
        with self._lock:
            return list(self._rows)

    def _run(self) -> None:
        try:
            for event in open_watch(self.store, catalog.PODS):
                if event.type is EventType.DELETED or facts.deleting(event.object):
                    self._note(event.object)
        except Exception:  # a dashboard helper must never take the server down
            _log.exception("the dashboard's eviction recorder stopped")

    def _job(self, pod: Object) -> Object | None:
        for ref in facts.meta(pod).get("ownerReferences") or []:
            if ref.get("kind") == "Job":
                try:
                    return self.store.get(
                        catalog.JOBS, str(facts.meta(pod).get("namespace")), str(ref.get("name"))
                    )
                except NotFound:
                    return None
        return None

    def _note(self, pod: Object) -> None:
        uid = str(facts.meta(pod).get("uid") or facts.key(pod))
        if uid in self._seen:
            return
        self._seen.append(uid)
        row = eviction_row(pod, self._job(pod), self.clock.now())
        if row is not None:
            with self._lock:
                self._rows.append(row)


__all__ = ["LIMIT", "EvictionRecorder"]
