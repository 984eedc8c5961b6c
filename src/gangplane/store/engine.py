"""The shared core of every backend: an in-memory cache of all objects, the version counter, indexes, the
change history and watch fan-out, written through a ``Journal`` that makes changes durable.

Every write goes through ``Engine._commit`` under one lock: validation first (``validation.py``: nothing the
store could not load back, or that kube-apiserver would refuse, is ever journaled), then the journal (so an
event is never seen for a change that could still be lost), then the cache, the history and the watchers. A
commit does O(object size + owner references + watchers of that type) work, never O(objects). Stored dicts
are never mutated after commit, so events and history share them; callers only ever receive copies.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import threading
import uuid
from collections.abc import Iterable
from typing import Protocol

from gangplane.clock import Clock, WallClock, rfc3339
from gangplane.errors import ApiError, CauseType, FieldError, Invalid, NotFound
from gangplane.store import validation
from gangplane.store.base import (
    Admission,
    EventType,
    ListOptions,
    Object,
    ObjectList,
    Operation,
    ResourceType,
    Watch,
    WatchEvent,
)
from gangplane.store.gc import owner_uids
from gangplane.store.history import DEFAULT_HISTORY_BYTES, Change, History
from gangplane.store.objects import Key, TypeKey, copy_object, copy_objects, key_of, meta, type_key
from gangplane.store.objects import resource_version as stored_version
from gangplane.store.selectors import ObjectFilter, build_filter
from gangplane.store.watchers import Watcher, bookmark

Ref = tuple[TypeKey, Key]
EVERYTHING = ListOptions()


class Journal(Protocol):
    """Durability for the engine. ``put`` (given the object and its validated JSON ``body``) and ``remove``
    must be durable when they return; ``load`` returns the last committed version and every stored object
    with its type, leaving out (quarantining) rows it cannot serve."""

    def load(self) -> tuple[int, list[tuple[ResourceType, Object]]]: ...

    def put(self, rt: ResourceType, obj: Object, rv: int, body: str) -> None: ...

    def remove(self, rt: ResourceType, key: Key, rv: int) -> None: ...

    def close(self) -> None: ...


def _same_problems(rt: ResourceType, old: Object, new_error: Invalid) -> bool:
    try:
        validation.check(rt, old)
    except Invalid as exc:
        return {str(c) for c in new_error.causes} <= {str(c) for c in exc.causes}
    except ApiError:
        return False
    return False


def group_resource(rt: ResourceType) -> str:
    return f"{rt.plural}.{rt.group}" if rt.group else rt.plural


def _bad_option(field: str, value: str, detail: str) -> Invalid:
    return Invalid("ListOptions", "", [FieldError(field, CauseType.INVALID, detail, value)])


def encode_continue(rv: int, key: Key) -> str:
    return base64.urlsafe_b64encode(json.dumps({"rv": rv, "start": list(key)}).encode()).decode()


def decode_continue(token: str) -> Key | None:
    if not token:
        return None
    try:
        start = json.loads(base64.urlsafe_b64decode(token.encode()))["start"]
        return (str(start[0]), str(start[1]))
    except (ValueError, KeyError, IndexError, TypeError, binascii.Error) as exc:
        raise _bad_option("continue", token, "invalid continue token") from exc


class Engine:
    """State and reads; ``ObjectStore`` adds the write semantics on top."""

    def __init__(
        self,
        journal: Journal,
        *,
        clock: Clock | None = None,
        admission: Admission | None = None,
        history_size: int = 10_000,
        history_bytes: int = DEFAULT_HISTORY_BYTES,
        rng: random.Random | None = None,
        bookmark_interval: float = 1.0,
    ) -> None:
        self._lock = threading.RLock()
        self._dry_run = False  # set only under the lock, by ObjectStore's dry-run writes
        self._journal = journal
        self._clock: Clock = clock or WallClock()
        self._admission = admission
        self._rng = rng or random.Random()
        self._bookmark_interval = bookmark_interval
        self._types: dict[TypeKey, ResourceType] = {}
        self._objects: dict[TypeKey, dict[Key, Object]] = {}
        self._uids: dict[str, Ref] = {}
        self._dependents: dict[str, set[Ref]] = {}
        self._watchers: dict[TypeKey, list[Watcher]] = {}
        self._rv, stored = journal.load()
        for rt, obj in stored:
            self._types.setdefault(type_key(rt), rt)
            self._index(type_key(rt), obj)
        self._history = History(history_size, floor=self._rv, max_bytes=history_bytes)

    def _now(self) -> str:
        return rfc3339(self._clock.now())

    def _new_uid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def _index(self, tk: TypeKey, obj: Object) -> None:
        key = key_of(obj)
        self._objects.setdefault(tk, {})[key] = obj
        self._uids[meta(obj)["uid"]] = (tk, key)
        for owner in owner_uids(obj):
            self._dependents.setdefault(owner, set()).add((tk, key))

    def _unindex(self, tk: TypeKey, obj: Object) -> None:
        key = key_of(obj)
        self._objects.get(tk, {}).pop(key, None)
        self._uids.pop(meta(obj)["uid"], None)
        for owner in owner_uids(obj):
            refs = self._dependents.get(owner)
            if refs is not None:
                refs.discard((tk, key))
                if not refs:
                    del self._dependents[owner]

    def _commit(self, rt: ResourceType, kind: EventType, new: Object, old: Object | None) -> Object:
        """Validate, then make one change durable, then visible. Returns the stored object (not a copy). In a
        dry run nothing is stored or announced: the object is returned as it would be, at its old
        resourceVersion."""
        if kind is not EventType.DELETED:
            new = validation.prepared(rt, new)
            self._validate(rt, new, old)
        rv = self._rv + 1
        obj = dict(new)
        obj["metadata"] = {**meta(new), "resourceVersion": str(rv)}
        body = validation.encoded(rt, obj) if kind is not EventType.DELETED else ""
        if self._dry_run:
            return {
                **obj,
                "metadata": {**meta(obj), "resourceVersion": meta(old or {}).get("resourceVersion", "")},
            }
        if kind is EventType.DELETED:
            self._journal.remove(rt, key_of(obj), rv)
        else:
            self._journal.put(rt, obj, rv, body)
        self._rv = rv
        tk = type_key(rt)
        self._types.setdefault(tk, rt)
        if old is not None:
            self._unindex(tk, old)
        if kind is not EventType.DELETED:
            self._index(tk, obj)
        # a MODIFIED or DELETED change also keeps the previous version alive: count it as the same size
        size = len(body) if body else validation.size_of(obj)
        change = Change(rv, tk, kind, obj, old, size * (1 if old is None else 2))
        self._history.append(change)
        for watcher in self._watchers.get(tk, ()):
            watcher.offer(change)
        return obj

    def _validate(self, rt: ResourceType, new: Object, old: Object | None) -> None:
        """``validation.check``, ratcheting as upstream does for stored data: an update may keep value
        problems the stored object already had (else a legacy object could never lose its finalizers)."""
        try:
            validation.check(rt, new)
        except Invalid as exc:
            if old is None or not _same_problems(rt, old, exc):
                raise

    def _admit(self, rt: ResourceType, op: Operation, new: Object, old: Object | None) -> Object:
        if self._admission is None:
            return new
        return self._admission(rt, op, copy_object(new), None if old is None else copy_object(old))

    def _find(self, rt: ResourceType, namespace: str, name: str) -> Object | None:
        return self._objects.get(type_key(rt), {}).get((namespace, name))

    def _require(self, rt: ResourceType, namespace: str, name: str) -> Object:
        obj = self._find(rt, namespace, name)
        if obj is None:
            raise NotFound(f'{group_resource(rt)} "{name}" not found', kind=rt.kind, name=name)
        return obj

    def _dependents_of(self, owner_uid: str) -> list[tuple[ResourceType, Object]]:
        refs = sorted(self._dependents.get(owner_uid, ()))
        return [(self._types[tk], self._objects[tk][key]) for tk, key in refs]

    def _lookup_uid(self, uid: str) -> tuple[ResourceType, Object] | None:
        ref = self._uids.get(uid)
        return None if ref is None else (self._types[ref[0]], self._objects[ref[0]][ref[1]])

    def _select(self, rt: ResourceType, selection: ObjectFilter) -> list[tuple[Key, Object]]:
        with self._lock:
            bucket = list(self._objects.get(type_key(rt), {}).items())
        return sorted((kv for kv in bucket if selection.matches(kv[1])), key=lambda kv: kv[0])

    def get(self, rt: ResourceType, namespace: str, name: str) -> Object:
        with self._lock:
            obj = self._require(rt, namespace, name)
        return copy_object(obj)

    def list(self, rt: ResourceType, options: ListOptions = EVERYTHING) -> ObjectList:
        selection = build_filter(options.namespace, options.label_selector, options.field_selector)
        start = decode_continue(options.continue_token)
        if options.limit < 0:
            raise _bad_option("limit", str(options.limit), "must be non-negative")
        with self._lock:
            rv = self._rv
        rows = [kv for kv in self._select(rt, selection) if start is None or kv[0] > start]
        if options.limit and len(rows) > options.limit:
            page, token = rows[: options.limit], encode_continue(rv, rows[options.limit - 1][0])
            return ObjectList(copy_objects([o for _, o in page]), str(rv), token, len(rows) - options.limit)
        return ObjectList(copy_objects([o for _, o in rows]), str(rv))

    def watch(
        self,
        rt: ResourceType,
        options: ListOptions = EVERYTHING,
        resource_version: str = "",
        *,
        bookmarks: bool = False,
        timeout: float | None = None,
    ) -> Watch:
        """``resource_version`` "" or "0": synthetic ADDED events for the current objects, then changes;
        otherwise every change after that version (``Gone`` if the history no longer covers it)."""
        selection = build_filter(options.namespace, options.label_selector, options.field_selector)
        if resource_version not in ("", "0") and not resource_version.isdigit():
            raise _bad_option("resourceVersion", resource_version, "must be a decimal integer")
        watcher = Watcher(
            rt,
            selection,
            drained_rv=self._drained_rv,
            on_close=self._unwatch,
            bookmark_interval=self._bookmark_interval if bookmarks else None,
            timeout=timeout,
        )
        with self._lock:
            self._prime(rt, watcher, resource_version, bookmarks)
            self._watchers.setdefault(type_key(rt), []).append(watcher)
        return Watch(watcher.events(), watcher.close)

    def _prime(self, rt: ResourceType, watcher: Watcher, resource_version: str, bookmarks: bool) -> None:
        if resource_version in ("", "0"):
            for _, obj in self._select(rt, watcher.selection):
                watcher.push(WatchEvent(EventType.ADDED, obj, stored_version(obj)))
            if bookmarks:
                watcher.push(bookmark(rt, self._rv, initial_end=True))
            return
        tk = type_key(rt)
        for change in self._history.since(int(resource_version)):
            if change.type_key == tk:
                watcher.offer(change)

    def _drained_rv(self, watcher: Watcher) -> int | None:
        with self._lock:
            return self._rv if watcher.queue.empty() else None

    def _unwatch(self, watcher: Watcher) -> None:
        with self._lock:
            watchers = self._watchers.get(type_key(watcher.rt), [])
            if watcher in watchers:
                watchers.remove(watcher)

    def _all_watchers(self) -> Iterable[Watcher]:
        return [w for ws in self._watchers.values() for w in ws]

    def close(self) -> None:
        """End every watch and release the journal; the store must not be used afterwards."""
        with self._lock:
            for watcher in self._all_watchers():
                watcher.close()
            self._journal.close()
