"""An informer: a local cache of one resource type kept current by list + watch, with event handlers.

Contract:
- ``start`` lists, fills the cache, then watches from the list's resourceVersion on a daemon thread; a
  ``Gone`` (410) or a broken watch re-lists and reconciles the cache, emitting the ADDED / MODIFIED / DELETED
  events the gap hid, so handlers see every object's latest state (level-based, not every intermediate one);
- handlers run on the informer's thread, in registration order, with ``(type, object, old)``; they must be
  quick (enqueue a key) and must not mutate the objects;
- ``get`` / ``list`` / ``by_index`` return the cached dicts themselves: read-only by contract. Over an
  in-process store (``SharingStore``) those are the store's own committed dicts, not copies, so a process
  holds each object once however many informers watch it; an in-place edit would corrupt the store, its
  history and every reader, so consumers copy what they change (``client/readonly.py`` checks it in tests);
- ``wait_synced`` returns once the first list has been delivered to the handlers.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Protocol, runtime_checkable

from gangplane.client.readonly import checking, freeze
from gangplane.errors import ApiError, Gone
from gangplane.store.base import EventType, ListOptions, Object, ObjectList, ResourceType, Store, Watch

Handler = Callable[[EventType, Object, Object | None], None]
IndexFunc = Callable[[Object], Iterable[str]]
Key = tuple[str, str]

_log = logging.getLogger(__name__)
_RETRY_SECONDS = 0.5
_WATCH_SECONDS = 300.0


@runtime_checkable
class SharingStore(Protocol):
    """An in-process store that can hand out its committed (never mutated) dicts instead of copies."""

    def list_shared(self, rt: ResourceType, options: ListOptions = ...) -> ObjectList: ...

    def watch(
        self,
        rt: ResourceType,
        options: ListOptions = ...,
        resource_version: str = ...,
        *,
        bookmarks: bool = ...,
        timeout: float | None = ...,
        shared: bool = ...,
    ) -> Watch: ...


def object_key(obj: Object) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _rv(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Informer:
    def __init__(self, store: Store, rt: ResourceType, options: ListOptions | None = None) -> None:
        self.store, self.rt = store, rt
        self._options = replace(options or ListOptions(), limit=0, continue_token="")
        self._cache: dict[Key, Object] = {}
        self._handlers: list[Handler] = []
        self._index_funcs: dict[str, IndexFunc] = {}
        self._indexes: dict[str, dict[str, set[Key]]] = {}
        self._lock = threading.RLock()
        self._synced = threading.Event()
        self._stopped = threading.Event()
        self._watch: Watch | None = None
        self._thread: threading.Thread | None = None
        self._freeze = checking()

    # -- configuration (before start) -------------------------------------------------------------------
    def add_handler(self, handler: Handler) -> None:
        with self._lock:
            self._handlers.append(handler)
            replay = list(self._cache.values()) if self._synced.is_set() else []
        for obj in replay:  # a late handler still sees every object once
            handler(EventType.ADDED, obj, None)

    def add_index(self, name: str, func: IndexFunc) -> None:
        with self._lock:
            self._index_funcs[name] = func
            self._indexes[name] = {}
            for key, obj in self._cache.items():
                self._index_one(name, key, obj)

    # -- reads --------------------------------------------------------------------------------------------
    def get(self, namespace: str, name: str) -> Object | None:
        with self._lock:
            return self._cache.get((namespace, name))

    def list(self, namespace: str | None = None) -> list[Object]:
        with self._lock:
            return [o for (ns, _), o in self._cache.items() if namespace is None or ns == namespace]

    def by_index(self, name: str, value: str) -> builtins.list[Object]:
        with self._lock:
            keys = self._indexes[name].get(value, set())
            return [self._cache[k] for k in sorted(keys)]

    def wait_synced(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    # -- lifecycle ----------------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"informer-{self.rt.plural}", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        watch = self._watch
        if watch is not None:
            watch.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self._watch_from(self._relist())
            except Gone:
                continue
            except ApiError as err:
                _log.warning("informer %s: %s; retrying", self.rt.plural, err)
                self._stopped.wait(_RETRY_SECONDS)
            except Exception:  # a broken connection must not kill the informer
                _log.exception("informer %s failed; retrying", self.rt.plural)
                self._stopped.wait(_RETRY_SECONDS)

    def _relist(self) -> str:
        store = self.store
        listed = (
            store.list_shared(self.rt, self._options)
            if isinstance(store, SharingStore)
            else store.list(self.rt, self._options)
        )
        fresh = {object_key(o): o for o in listed.items}
        with self._lock:
            gone = [o for k, o in self._cache.items() if k not in fresh]
        for obj in gone:
            self._apply(EventType.DELETED, obj)
        for obj in listed.items:
            self._apply(EventType.ADDED, obj)
        self._synced.set()
        return listed.resource_version

    def _watch_from(self, rv: str) -> None:
        while not self._stopped.is_set():
            self._watch = self._open_watch(rv)
            if self._stopped.is_set():
                self._watch.close()
                return
            for event in self._watch:
                rv = str(event.resource_version)
                if event.type is not EventType.BOOKMARK:
                    self._apply(event.type, event.object)

    def _open_watch(self, rv: str) -> Watch:
        store = self.store
        if isinstance(store, SharingStore):
            return store.watch(
                self.rt, self._options, rv, bookmarks=True, timeout=_WATCH_SECONDS, shared=True
            )
        return store.watch(self.rt, self._options, rv, bookmarks=True, timeout=_WATCH_SECONDS)

    def _apply(self, kind: EventType, obj: Object) -> None:
        key = object_key(obj)
        if self._freeze:
            obj = freeze(obj)
        with self._lock:
            old = self._cache.get(key)
            if kind is EventType.DELETED:
                if old is None:
                    return
                self._cache.pop(key)
                self._unindex(key, old)
            else:
                if old is not None and _rv(old) == _rv(obj):
                    return  # a re-list delivering what we already have
                kind = EventType.ADDED if old is None else EventType.MODIFIED
                self._cache[key] = obj
                self._unindex(key, old)
                for name in self._index_funcs:
                    self._index_one(name, key, obj)
            handlers = list(self._handlers)
        for handler in handlers:
            self._call(handler, kind, obj, old)

    def _call(self, handler: Handler, kind: EventType, obj: Object, old: Object | None) -> None:
        try:
            handler(kind, obj, old)
        except Exception:  # one bad handler must not stop the others or the informer
            _log.exception("informer %s: handler failed", self.rt.plural)

    def _index_one(self, name: str, key: Key, obj: Object) -> None:
        for value in self._index_funcs[name](obj):
            self._indexes[name].setdefault(value, set()).add(key)

    def _unindex(self, key: Key, old: Object | None) -> None:
        if old is None:
            return
        for name, func in self._index_funcs.items():
            for value in func(old):
                keys = self._indexes[name].get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._indexes[name][value]


__all__ = ["Handler", "IndexFunc", "Informer", "Key", "SharingStore", "object_key"]
