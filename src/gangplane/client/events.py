"""core/v1 Events as client-go's ``record`` package writes them: an ``EventRecorder`` and its correlator.

The correlator (``tools/record/events_cache.go``) does three things before anything is written:
- **aggregation**: more than ``MAX_SIMILAR`` events within ``SIMILAR_WINDOW`` that differ only in their
  message (same source, object, type and reason) are folded into one whose message is prefixed
  ``(combined from similar events): ``;
- **deduplication**: an event identical to one already recorded (same source, object, type, reason and
  message) is not created again: the existing Event's ``count`` goes up and its ``lastTimestamp`` moves (a
  patch), keeping ``firstTimestamp`` — which is what ``kubectl describe`` shows as ``x3 over 2m``;
- **spam filtering**: one source may record ``SPAM_BURST`` events about one object at once, then one per
  ``1 / SPAM_QPS`` seconds (a token bucket per source and object, ``EventSourceObjectSpamFilter``); an event
  past that is dropped after it was counted, so the next one written carries the count.

The correlator is pure over its own state (times are passed in); the recorder does the store I/O. The cache
is bounded like client-go's LRU (``MAX_CACHED``), so a long-running process cannot grow without bound.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from dataclasses import dataclass
from typing import Any

from gangplane.clock import Clock, rfc3339
from gangplane.errors import AlreadyExists, ApiError, NotFound
from gangplane.store import catalog
from gangplane.store.base import Object, Store
from gangplane.store.patch import MERGE_PATCH

_log = logging.getLogger(__name__)

MAX_SIMILAR = 10  # ``defaultAggregateMaxEvents``
SIMILAR_WINDOW = 600.0  # ``defaultAggregateIntervalInSeconds``
MAX_CACHED = 4096  # ``maxLruCacheEntries``
COMBINED_PREFIX = "(combined from similar events): "
MAX_MESSAGE = 1024  # the API server refuses longer Event notes (``NoteLengthLimit``)
SPAM_BURST = 25  # ``defaultSpamBurst``
SPAM_QPS = 1.0 / 300.0  # ``defaultSpamQPS``: the bucket's refill, one event per five minutes


@dataclass(frozen=True)
class Decision:
    """What to write for one event: ``create`` a new Event, or ``patch`` the existing ``name``."""

    name: str
    message: str
    count: int
    first_timestamp: float
    create: bool
    skip: bool = False  # the source spoke too often about the object: write nothing


@dataclass(slots=True)  # one per cached key (up to MAX_CACHED per recorder): no per-entry __dict__
class _Seen:
    name: str
    count: int
    first: float


@dataclass(slots=True)
class _Bucket:
    """A token bucket (client-go's ``flowcontrol`` token-bucket rate limiter): full at first."""

    tokens: float
    at: float

    def take(self, now: float) -> bool:
        self.tokens = min(float(SPAM_BURST), self.tokens + max(0.0, now - self.at) * SPAM_QPS)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


@dataclass(slots=True)
class _Similar:
    first: float
    # the distinct messages seen, up to one past MAX_SIMILAR (all that decides): a tuple, as most hold one
    messages: tuple[str, ...] = ()


def _bounded_put(cache: dict[Any, Any], key: Any, value: Any) -> None:
    """Put ``key`` last (the most recently used) and drop the least recently used past ``MAX_CACHED``: a plain
    dict keeps insertion order, so it is the LRU at half an ``OrderedDict``'s memory per entry."""
    cache.pop(key, None)
    cache[key] = value
    while len(cache) > MAX_CACHED:
        del cache[next(iter(cache))]


class EventCorrelator:
    """Decides create-or-count for each event (``EventCorrelator.EventCorrelate``). Thread-safe."""

    def __init__(self) -> None:
        # keyed (similar key, message): the similar key's tuple is the one _similar holds, not a longer copy
        self._seen: dict[tuple[tuple[str, ...], str], _Seen] = {}
        self._similar: dict[tuple[str, ...], _Similar] = {}
        self._buckets: dict[tuple[str, ...], _Bucket] = {}
        self._lock = threading.Lock()

    def correlate(
        self, similar_key: tuple[str, ...], message: str, name: str, now: float,
        spam_key: tuple[str, ...] | None = None,
    ) -> Decision:  # fmt: skip
        """Aggregate, count, then filter (``EventCorrelate``'s order); ``spam_key`` is the source and object
        (None: no spam filter)."""
        with self._lock:
            message, key = self._aggregate(similar_key, message, now)
            seen = self._seen.get(key)
            if seen is None:
                _bounded_put(self._seen, key, _Seen(name, 1, now))
                decision = Decision(name, message, 1, now, create=True)
            else:
                seen.count += 1
                _bounded_put(self._seen, key, seen)
                decision = Decision(seen.name, message, seen.count, seen.first, create=False)
            if spam_key is not None and not self._accept(spam_key, now):
                return dataclasses.replace(decision, skip=True)
            return decision

    def _accept(self, spam_key: tuple[str, ...], now: float) -> bool:
        bucket = self._buckets.get(spam_key) or _Bucket(float(SPAM_BURST), now)
        _bounded_put(self._buckets, spam_key, bucket)
        return bucket.take(now)

    def restart(self, similar_key: tuple[str, ...], message: str, name: str, now: float) -> Decision:
        """The Event a key pointed at is gone (deleted, or expired): count afresh on a new one."""
        combined = message.startswith(COMBINED_PREFIX)
        with self._lock:
            key = (similar_key, COMBINED_PREFIX if combined else message)
            _bounded_put(self._seen, key, _Seen(name, 1, now))
        return Decision(name, message, 1, now, create=True)

    def _aggregate(
        self, similar_key: tuple[str, ...], message: str, now: float
    ) -> tuple[str, tuple[tuple[str, ...], str]]:
        """The message to record and the key it is counted under: past the limit, every similar event is
        counted on one combined Event that shows the latest message."""
        group = self._similar.get(similar_key)
        if group is None or now - group.first > SIMILAR_WINDOW:
            group = _Similar(now)
            _bounded_put(self._similar, similar_key, group)
        if len(group.messages) <= MAX_SIMILAR and message not in group.messages:
            group.messages = (*group.messages, message)
        if len(group.messages) > MAX_SIMILAR:
            return COMBINED_PREFIX + message, (similar_key, COMBINED_PREFIX)
        return message, (similar_key, message)


_stamp_lock = threading.Lock()
_last_stamp = 0


def _unique_nanos(now: float) -> int:
    """client-go names an Event ``<object>.<unix nanos in hex>``; nanos are kept strictly increasing in this
    process, so two events in one instant (a manual clock, a coarse one) never share a name."""
    global _last_stamp
    with _stamp_lock:
        _last_stamp = max(int(now * 1e9), _last_stamp + 1)
        return _last_stamp


def involved(obj: Object, field_path: str = "") -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    ref = {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "name": str(meta.get("name") or ""),
        "namespace": str(meta.get("namespace") or ""),
        "uid": str(meta.get("uid") or ""),
    }
    if meta.get("resourceVersion"):
        ref["resourceVersion"] = str(meta["resourceVersion"])
    if field_path:
        ref["fieldPath"] = field_path
    return ref


class EventRecorder:
    """Writes core/v1 Events about objects (``record.EventRecorder``), correlated as client-go does; a failed
    write is only logged, never raised (events are best effort)."""

    def __init__(self, store: Store, clock: Clock, component: str, host: str = "") -> None:
        self.store, self.clock, self.component, self.host = store, clock, component, host
        self.correlator = EventCorrelator()

    def event(self, obj: Object, type_: str, reason: str, message: str, field_path: str = "") -> None:
        ref = involved(obj, field_path)
        now = self.clock.now()
        source = (self.component, self.host, ref["kind"], ref["namespace"], ref["name"], ref["uid"])
        similar = (*source, field_path, type_, reason)
        message = message[:MAX_MESSAGE]
        name = f"{ref['name']}.{_unique_nanos(now):x}"
        decision = self.correlator.correlate(
            similar, message, name, now, spam_key=(*source, ref["apiVersion"])
        )
        if decision.skip:
            _log.debug(
                "event %s for %s dropped: too many events about it from %s", reason, ref["name"], source
            )
            return
        try:
            if not decision.create and not self._count(ref["namespace"], decision, now):
                decision = self.correlator.restart(similar, decision.message, name, now)
            if decision.create:
                self._create(ref, type_, reason, decision, now)
        except ApiError as err:
            _log.warning("event %s for %s not recorded: %s", reason, ref["name"], err)

    def _count(self, namespace: str, decision: Decision, now: float) -> bool:
        """Bump the existing Event; False when it is gone (then a new one is created)."""
        patch = {"count": decision.count, "lastTimestamp": rfc3339(now), "message": decision.message}
        try:
            self.store.patch(catalog.EVENTS, namespace, decision.name, patch, MERGE_PATCH)
        except NotFound:
            return False
        return True

    def _create(self, ref: dict[str, Any], type_: str, reason: str, decision: Decision, now: float) -> None:
        stamp = rfc3339(now)
        source = {"component": self.component, **({"host": self.host} if self.host else {})}
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": decision.name, "namespace": ref["namespace"] or "default"},
            "involvedObject": ref,
            "type": type_,
            "reason": reason,
            "message": decision.message,
            "source": source,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }
        try:
            self.store.create(catalog.EVENTS, event)
        except AlreadyExists:  # a second event in the same nanosecond: count it on the first
            return
