"""The shared core of every backend: an in-memory cache of all objects, the version counter, indexes, the
change history and watch fan-out, written through a ``Journal`` that makes changes durable.

Every write goes through ``Engine._commit`` under one lock: validation first (``validation.py``: nothing the
store could not load back, or that kube-apiserver would refuse, is ever journaled), then the journal's
buffer and the cache. A commit does O(object size + owner references + watchers of that type) work, never
O(objects). Stored dicts are never mutated after commit, so events and history share them; callers only
ever receive copies.

Group commit: the journal makes its buffered changes durable in ``sync`` - one transaction for every change
buffered since the last one, written outside the engine lock, so writers that arrive meanwhile are batched
into the next. Only then are the changes appended to the history and offered to watchers: no event is ever
seen for a change that could still be lost. Every write method syncs before it returns (an acknowledged
write is durable), except inside ``deferred()``, where the caller syncs (the API server awaits it, so the
requests of one event-loop pass share one transaction). Reads see the cache, which may hold a change for
the instant until its transaction commits; anything written after such a read is committed after it.
A failed transaction is rolled back and the cache reloaded from the journal; watchers are closed.
"""

from __future__ import annotations

import contextlib
import math
import random
import threading
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from contextvars import ContextVar

from gangplane.clock import Clock, WallClock, rfc3339
from gangplane.errors import ApiError, Invalid, NotFound
from gangplane.store import validation
from gangplane.store.base import (
    Admission,
    EventType,
    ListOptions,
    Object,
    ObjectList,
    Operation,
    PassingAdmission,
    ResourceType,
    Watch,
    WatchEvent,
)
from gangplane.store.compact import (
    COMPACT_TYPES,
    EncodedBucket,
    copies_for,
    deflated,
    new_bucket,
    select_page,
)
from gangplane.store.gc import owner_uids
from gangplane.store.history import DEFAULT_HISTORY_BYTES, Change, History
from gangplane.store.journal import Journal
from gangplane.store.listing import Rows, bad_option, decode_continue, encode_continue, page_of
from gangplane.store.objects import (
    Key,
    TypeKey,
    copy_object,
    group_resource,
    key_of,
    meta,
    sharing_unchanged,
    type_key,
    uuid4_text,
)
from gangplane.store.objects import resource_version as stored_version
from gangplane.store.selectors import ObjectFilter, build_filter
from gangplane.store.sharing import SubtreeTable
from gangplane.store.watchers import Watcher, bookmark

Ref = tuple[TypeKey, Key]
Copies = Callable[[list[Object]], list[Object]]  # how a list hands out the objects it found
EVERYTHING = ListOptions()
MAX_BATCH = 128  # changes one call may buffer before it commits them itself (a cascade of thousands)
_DEFERRED: ContextVar[bool] = ContextVar("gangplane_store_deferred", default=False)
_BORROWED: ContextVar[bool] = ContextVar("gangplane_store_borrowed", default=False)


def _as_they_are(objs: list[Object]) -> list[Object]:
    return objs


def check_epoch(engine: Engine, epoch: int) -> None:
    """Refuse to acknowledge a write made before a transaction failed: it may have been in it (500)."""
    if engine.epoch != epoch:
        raise ApiError("the store could not commit this write (a transaction failed); it was not saved")


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
        self._passes = admission.passes if isinstance(admission, PassingAdmission) else None
        self._rng = rng or random.Random()
        self._bookmark_interval = bookmark_interval
        self._types: dict[TypeKey, ResourceType] = {}
        self._objects: dict[TypeKey, MutableMapping[Key, Object]] = {}  # Events encoded (compact.py)
        self._uids: dict[str, Ref] = {}
        # owner uid -> its dependents: one Ref alone (most owners have one), a set once there are more
        self._dependents: dict[str, Ref | set[Ref]] = {}
        self._type_keys: dict[TypeKey, TypeKey] = {}  # one tuple per type for every index entry and change
        self._watchers: dict[TypeKey, list[Watcher]] = {}
        self._history_limits = (history_size, history_bytes)
        self._subtrees = SubtreeTable()  # equal parts of stored objects held once (sharing.py)
        self._flush_lock = threading.Lock()  # one transaction at a time; taken before ``_lock``, never after
        self._local = threading.local()  # how deeply this thread is inside write methods
        self._unpublished: list[Change] = []  # committed to the cache, not yet durable nor seen by watchers
        self._writes: dict[TypeKey, int] = {}  # commits per type, never reset (``epoch`` covers reloads)
        self.epoch = 0  # counts failed transactions: a write that saw it change may have been lost
        self._stamp: tuple[int, str] = (-1, "")  # the second ``_now`` last formatted, and its text
        self._load()

    def _load(self) -> None:
        self._rv, stored = self._journal.load()
        for tk in self._objects:
            self._objects[tk] = new_bucket(tk)
        self._uids.clear()
        self._dependents.clear()
        for rt, obj in stored:
            tk = self._type_key(rt)
            self._types.setdefault(tk, rt)
            self._index(tk, self._subtrees.stored(tk, obj))
        self._durable_rv = self._rv
        self._unpublished = []
        size, max_bytes = self._history_limits
        self._history = History(size, floor=self._rv, max_bytes=max_bytes)

    # -- group commit -----------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def deferred(self, *, borrow: bool = False) -> Iterator[None]:
        """Writes in this block return before they are durable; the caller must ``sync`` before it
        acknowledges them. With ``borrow`` they return the stored object itself, not a copy: the caller
        only reads it (the API server renders it); and a create takes the object it is given as its own
        (admission may edit it), instead of copying it first: the caller gives it up."""
        token, borrowed = _DEFERRED.set(True), _BORROWED.set(borrow)
        try:
            yield
        finally:
            _DEFERRED.reset(token)
            _BORROWED.reset(borrowed)

    def _given(self) -> bool:
        """Whether this call's input objects are its own to keep (``deferred(borrow=True)``)."""
        return _BORROWED.get()

    def _result(self, stored: Object) -> Object:
        """What a write returns: a copy, unless the caller borrows (``deferred``)."""
        return stored if _BORROWED.get() else copy_object(stored)

    @contextlib.contextmanager
    def _write_call(self) -> Iterator[None]:
        """One public write: holds the lock; on leaving the outermost one, syncs unless deferred."""
        depth, epoch = getattr(self._local, "depth", 0), self.epoch
        self._local.depth = depth + 1
        try:
            with self._lock:
                yield
        finally:
            self._local.depth = depth
            if depth == 0 and not _DEFERRED.get():
                self.sync()
                check_epoch(self, epoch)

    def durable(self) -> bool:
        """Every write made so far is durable (and was offered to watchers)."""
        return self._durable_rv >= self._rv

    def sync(self) -> None:
        """Make every write made so far durable, then visible to watchers: one journal transaction for all
        of them (and for those other threads buffer while it is written)."""
        target = self._rv
        with self._flush_lock:
            if self._durable_rv < target:  # else another thread's transaction carried it
                self._flush(self._lock)

    def _flush(self, hold: contextlib.AbstractContextManager[object]) -> None:
        """One transaction; the caller holds ``_flush_lock``, and ``hold`` takes the engine lock (a null
        context when the caller holds it already; else the journal is written outside it, so writers keep
        buffering meanwhile)."""
        with hold:
            changes, self._unpublished = self._unpublished, []
            upto = self._rv
        try:
            self._journal.flush()
        except BaseException:
            with hold:
                self._recover()
            raise
        with hold:
            self._durable_rv = max(self._durable_rv, upto)
            self._publish(changes)

    def _publish(self, changes: list[Change]) -> None:
        for change in changes:
            self._history.append(change)
            for watcher in self._watchers.get(change.type_key, ()):
                if change.rv > watcher.since:
                    watcher.offer(change)

    def _recover(self) -> None:
        """A transaction failed: what it held is lost, so the cache goes back to what the journal has, and
        every watch ends (its client lists again)."""
        self._load()
        self.epoch += 1
        for watcher in self._all_watchers():
            watcher.close()

    def _now(self) -> str:
        """The clock's time as Kubernetes writes it; formatted once per second (every create stamps it)."""
        now = self._clock.now()
        second, text = self._stamp
        if math.floor(now) != second:
            second, text = math.floor(now), rfc3339(now)
            self._stamp = (second, text)
        return text

    def encoded(self, obj: Object) -> str | None:
        """The journal's JSON of ``obj`` if it is what this thread's last write committed, else None: the API
        server answers a write with it rather than encode the same object again."""
        committed = getattr(self._local, "committed", None)
        return committed[1] if committed is not None and committed[0] is obj else None

    def changes(self, rt: ResourceType) -> tuple[int, int]:
        """A token that differs after any write of an ``rt`` object or a reload of the cache: what a value
        derived from those objects (admission's default PriorityClass) can be cached against."""
        with self._lock:
            return self.epoch, self._writes.get(type_key(rt), 0)

    def _new_uid(self) -> str:
        return uuid4_text(self._rng.getrandbits(128))

    def _type_key(self, rt: ResourceType) -> TypeKey:
        """``type_key(rt)``, the same tuple every time: the indexes and the history hold one per entry."""
        tk = type_key(rt)
        return self._type_keys.setdefault(tk, tk)

    def _index(self, tk: TypeKey, obj: Object, packed: bytes | None = None) -> None:
        """Hold ``obj`` (``packed``: already encoded, for a bucket of encoded objects) and index it."""
        key = key_of(obj)
        bucket = self._objects.get(tk)
        if bucket is None:
            bucket = self._objects[tk] = new_bucket(tk)
        if packed is not None and isinstance(bucket, EncodedBucket):
            bucket.put_encoded(key, packed)
        else:
            bucket[key] = obj
        ref = self._uids[meta(obj)["uid"]] = (tk, key)
        for owner in owner_uids(obj):
            refs = self._dependents.setdefault(owner, ref)
            if type(refs) is set:
                refs.add(ref)
            elif refs != ref:
                self._dependents[owner] = {refs, ref}  # type: ignore[arg-type]

    def _unindex(self, tk: TypeKey, obj: Object) -> None:
        key = key_of(obj)
        self._objects.get(tk, {}).pop(key, None)
        self._uids.pop(meta(obj)["uid"], None)
        ref = (tk, key)
        for owner in owner_uids(obj):
            refs = self._dependents.get(owner)
            if type(refs) is set:
                refs.discard(ref)
                if len(refs) == 1:
                    self._dependents[owner] = next(iter(refs))
            elif refs == ref:
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
        obj = sharing_unchanged(old, obj)
        body = validation.encoded(rt, obj) if kind is not EventType.DELETED else ""
        if self._dry_run:
            return {
                **obj,
                "metadata": {**meta(obj), "resourceVersion": meta(old or {}).get("resourceVersion", "")},
            }
        tk = self._type_key(rt)
        packed = None
        if kind is EventType.DELETED:
            self._journal.remove(rt, key_of(obj), rv)
        else:
            obj = self._subtrees.stored(tk, obj, old)
            packed = deflated(body) if tk in COMPACT_TYPES else None  # the journal's JSON, not a 2nd encode
            self._journal.put(rt, obj, rv, body)
            self._local.committed = (obj, body)
        self._rv = rv
        self._types.setdefault(tk, rt)
        self._writes[tk] = self._writes.get(tk, 0) + 1
        if old is not None:
            self._unindex(tk, old)
        if kind is not EventType.DELETED:
            self._index(tk, obj, packed)
        # a MODIFIED or DELETED change also keeps the previous version alive: count it as the same size
        size = len(body) if body else validation.size_of(obj)
        self._unpublished.append(Change(rv, tk, kind, obj, old, size * (1 if old is None else 2), packed))
        if len(self._unpublished) >= MAX_BATCH and self._flush_lock.acquire(blocking=False):
            try:  # a long cascade: commit and publish as it goes, not all at its end
                self._flush(contextlib.nullcontext())
            finally:
                self._flush_lock.release()
        return obj

    def _validate(self, rt: ResourceType, new: Object, old: Object | None) -> None:
        """``validation.check``, ratcheting as upstream does for stored data: an update may keep value
        problems the stored object already had (else a legacy object could never lose its finalizers)."""
        try:
            validation.check(rt, new)
        except Invalid as exc:
            if old is None or not validation.same_problems(rt, old, exc):
                raise

    def _admit(
        self, rt: ResourceType, op: Operation, new: Object, old: Object | None, *, owned: bool = False
    ) -> Object:
        """The admission hook's verdict; it gets copies (``owned``: ``new`` is already this call's own)."""
        if self._admission is None or (self._passes is not None and self._passes(rt, op, new, old)):
            return new
        return self._admission(
            rt, op, new if owned else copy_object(new), None if old is None else copy_object(old)
        )

    def _find(self, rt: ResourceType, namespace: str, name: str) -> Object | None:
        return self._objects.get(type_key(rt), {}).get((namespace, name))

    def _require(self, rt: ResourceType, namespace: str, name: str) -> Object:
        obj = self._find(rt, namespace, name)
        if obj is None:
            raise NotFound(f'{group_resource(rt)} "{name}" not found', kind=rt.kind, name=name)
        return obj

    def _dependents_of(self, owner_uid: str) -> list[tuple[ResourceType, Object]]:
        found = self._dependents.get(owner_uid)
        refs: list[Ref] = sorted(found) if isinstance(found, set) else [] if found is None else [found]
        return [(self._types[tk], self._objects[tk][key]) for tk, key in refs]

    def _lookup_uid(self, uid: str) -> tuple[ResourceType, Object] | None:
        ref = self._uids.get(uid)
        return None if ref is None else (self._types[ref[0]], self._objects[ref[0]][ref[1]])

    def _select(self, rt: ResourceType, selection: ObjectFilter) -> list[tuple[Key, Object]]:
        with self._lock:
            bucket = list(self._objects.get(type_key(rt), {}).items())
        return sorted((kv for kv in bucket if selection.matches(kv[1])), key=lambda kv: kv[0])

    def exists(self, rt: ResourceType, namespace: str, name: str) -> bool:
        with self._lock:
            return self._find(rt, namespace, name) is not None

    def get(self, rt: ResourceType, namespace: str, name: str) -> Object:
        with self._lock:
            obj = self._require(rt, namespace, name)
        return copy_object(obj)

    def list(self, rt: ResourceType, options: ListOptions = EVERYTHING) -> ObjectList:
        return self._list(rt, options, copies_for(type_key(rt)))

    def list_borrowed(self, rt: ResourceType, options: ListOptions = EVERYTHING) -> ObjectList:
        """``list`` (paging included) of the committed dicts themselves: for a caller that only reads them
        and lets go (the API server renders a list), so a list of thousands copies none of them."""
        return self._list(rt, options, _as_they_are)

    def _list(self, rt: ResourceType, options: ListOptions, copies: Copies) -> ObjectList:
        selection = build_filter(options.namespace, options.label_selector, options.field_selector)
        start = decode_continue(options.continue_token)
        if options.limit < 0:
            raise bad_option("limit", str(options.limit), "must be non-negative")
        with self._lock:
            rv = self._rv
        page, remaining = self._page(rt, selection, start, options.limit)
        if remaining:
            token = encode_continue(rv, page[-1][0])
            return ObjectList(copies([o for _, o in page]), str(rv), token, remaining)
        return ObjectList(copies([o for _, o in page]), str(rv))

    def _page(
        self, rt: ResourceType, selection: ObjectFilter, start: Key | None, limit: int
    ) -> tuple[Rows, int]:
        """Up to ``limit`` matches after ``start`` (0: all), and how many matches follow them."""
        with self._lock:
            bucket = self._objects.get(type_key(rt))
            texts = bucket.texts() if isinstance(bucket, EncodedBucket) else None
        if texts is not None:
            return select_page(texts, selection, start, limit)
        return page_of(self._select(rt, selection), start, limit)

    def list_shared(self, rt: ResourceType, options: ListOptions = EVERYTHING) -> ObjectList:
        """``list`` (every match, no paging) of the committed dicts themselves, not copies: for in-process
        readers that never mutate them (informers), so they hold no second copy of the store."""
        selection = build_filter(options.namespace, options.label_selector, options.field_selector)
        with self._lock:
            rv = self._rv
        return ObjectList([o for _, o in self._select(rt, selection)], str(rv))

    def watch(
        self,
        rt: ResourceType,
        options: ListOptions = EVERYTHING,
        resource_version: str = "",
        *,
        bookmarks: bool = False,
        timeout: float | None = None,
        shared: bool = False,
    ) -> Watch:
        """``resource_version`` "" or "0": synthetic ADDED events for the current objects, then changes;
        otherwise every change after that version (``Gone`` if the history no longer covers it). ``shared``:
        events carry the committed dicts, not copies (``list_shared``'s readers)."""
        selection = build_filter(options.namespace, options.label_selector, options.field_selector)
        if resource_version not in ("", "0") and not resource_version.isdigit():
            raise bad_option("resourceVersion", resource_version, "must be a decimal integer")
        watcher = Watcher(
            rt,
            selection,
            drained_rv=self._drained_rv,
            on_close=self._unwatch,
            bookmark_interval=self._bookmark_interval if bookmarks else None,
            timeout=timeout,
            shared=shared,
        )
        with self._lock:
            self._prime(rt, watcher, resource_version, bookmarks)
            self._watchers.setdefault(type_key(rt), []).append(watcher)
        return Watch(watcher.events(), watcher.close, watcher.queue.qsize)

    def _prime(self, rt: ResourceType, watcher: Watcher, resource_version: str, bookmarks: bool) -> None:
        """The watch's start; changes not yet durable come later, when published, unless already included
        (``watcher.since``)."""
        if resource_version in ("", "0"):
            watcher.since = self._rv
            for _, obj in self._select(rt, watcher.selection):
                watcher.push(WatchEvent(EventType.ADDED, obj, stored_version(obj)))
            if bookmarks:
                watcher.push(bookmark(rt, watcher.since, initial_end=True))
            return
        watcher.since = min(int(resource_version), self._rv)  # a future version: every change from now on
        tk = type_key(rt)
        for change in self._history.since(int(resource_version), tk):
            watcher.offer(change)

    def _drained_rv(self, watcher: Watcher) -> int | None:
        with self._lock:
            if not watcher.queue.empty():
                return None
            return max(self._durable_rv, watcher.since)

    def _unwatch(self, watcher: Watcher) -> None:
        with self._lock:
            watchers = self._watchers.get(type_key(watcher.rt), [])
            if watcher in watchers:
                watchers.remove(watcher)

    def _all_watchers(self) -> Iterable[Watcher]:
        return [w for ws in self._watchers.values() for w in ws]

    def close(self) -> None:
        """Make what is buffered durable, end every watch and release the journal; the store must not be
        used afterwards."""
        with contextlib.suppress(Exception):  # a failed last transaction was rolled back and logged
            self.sync()
        with self._flush_lock, self._lock:
            for watcher in self._all_watchers():
                watcher.close()
            self._journal.close()
