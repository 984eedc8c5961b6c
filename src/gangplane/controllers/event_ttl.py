"""Events expire, as kube-apiserver's ``--event-ttl`` (default 1 h) makes them: an Event is removed once its
last write is older than the TTL.

kube-apiserver stores each Event under an etcd lease of the TTL, renewed by every write (a count bump
included). gangplane's store has no leases, so a periodic sweep does the same: ``expired`` (pure) picks the
Events whose latest timestamp — ``lastTimestamp``, ``series.lastObservedTime``, ``eventTime`` or, failing
those, ``metadata.creationTimestamp`` — is more than the TTL ago; ``EventExpiry`` deletes them every
``period`` seconds (a tenth of the TTL, between 1 s and 1 min), so an Event outlives its TTL by at most one
period. ``parse_duration`` reads the flag as kube-apiserver does (``1h``, ``30m``, ``1h0m0s``, or seconds).
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from gangplane.clock import Clock, parse_rfc3339
from gangplane.errors import Conflict, NotFound
from gangplane.store.base import ListOptions, Object, Store
from gangplane.store.catalog import EVENTS

DEFAULT_TTL = 3600.0
PAGE = 500  # Events read per list call in a sweep
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?$")
_log = logging.getLogger(__name__)


def parse_duration(text: str) -> float:
    """Seconds in a Go duration of hours, minutes and seconds (``1h30m``), or a plain number of seconds."""
    with contextlib.suppress(ValueError):
        seconds = float(text)
        if seconds > 0:
            return seconds
    match = _DURATION.match(text.strip())
    if not text.strip() or match is None or not any(match.groups()):
        raise ValueError(f"invalid duration {text!r}: use e.g. 1h, 30m, 1h0m0s or seconds")
    hours, minutes, secs = (float(g or 0) for g in match.groups())
    total = hours * 3600 + minutes * 60 + secs
    if total <= 0:
        raise ValueError(f"invalid duration {text!r}: must be positive")
    return total


def last_written(event: Mapping[str, Any]) -> float | None:
    """The latest time an Event records about itself (None when it records none that parses)."""
    series = event.get("series") or {}
    meta = event.get("metadata") or {}
    found = []
    for text in (event.get("lastTimestamp"), series.get("lastObservedTime"), event.get("eventTime"),
                 meta.get("creationTimestamp")):  # fmt: skip
        if isinstance(text, str) and text:
            with contextlib.suppress(ValueError):
                found.append(parse_rfc3339(text))
    return max(found, default=None)


def expired(
    events: Iterable[Mapping[str, Any]], now: float, ttl: float
) -> list[tuple[str, str, dict[str, str]]]:
    """(namespace, name, delete preconditions) of the Events last written more than ``ttl`` seconds before
    ``now``: the uid and resourceVersion read, so one written again since (a repeat renews it) stays."""
    out = []
    for event in events:
        when = last_written(event)
        if when is not None and now - when > ttl:
            meta = event.get("metadata") or {}
            read = {k: str(meta[k]) for k in ("uid", "resourceVersion") if meta.get(k)}
            out.append((str(meta.get("namespace") or ""), str(meta.get("name")), read))
    return out


class EventExpiry:
    """The sweep, on its own thread between ``start`` and ``stop``."""

    def __init__(
        self, store: Store, clock: Clock, ttl: float = DEFAULT_TTL, period: float | None = None
    ) -> None:
        if ttl <= 0:
            raise ValueError("the event TTL must be positive")
        self.store, self.clock, self.ttl = store, clock, ttl
        self.period = period if period is not None else min(60.0, max(1.0, ttl / 10))
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def sweep(self) -> int:
        """Delete the expired Events now; how many went."""
        gone, now = 0, self.clock.now()
        for page in self._pages():
            for namespace, name, read in expired(page, now, self.ttl):
                with contextlib.suppress(NotFound, Conflict):  # deleted, written again or replaced meanwhile
                    self.store.delete(EVENTS, namespace, name, preconditions=read or None)
                    gone += 1
        return gone

    def _pages(self) -> Iterator[list[Object]]:
        """Every Event, a page at a time: the store holds Events encoded and decodes only the page asked for,
        so a sweep never holds thousands of them at once (which set the control plane's peak memory)."""
        token = ""
        while True:
            page = self.store.list(EVENTS, ListOptions(limit=PAGE, continue_token=token))
            yield page.items
            token = page.continue_token
            if not token:
                return

    def _run(self) -> None:
        while not self._stopped.wait(self.period):
            try:
                self.sweep()
            except Exception:  # a failed sweep must not end expiry for the life of the process
                _log.exception("event expiry sweep failed")

    def start(self) -> None:
        self._stopped.clear()
        self._thread = threading.Thread(target=self._run, name="event-expiry", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


__all__ = ["DEFAULT_TTL", "EventExpiry", "expired", "last_written", "parse_duration"]
