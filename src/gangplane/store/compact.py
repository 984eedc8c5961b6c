"""Where the engine keeps one type's current objects: a plain dict, or for Events their encoded JSON.

kube-apiserver keeps no watch cache for Events (``DefaultWatchCacheSizes`` sets ``events`` and
``events.k8s.io/events`` to 0, k8s.io/kubernetes pkg/kubeapiserver/default_storage_factory_builder.go): they
are numerous (a few per object change, kept for the 1 h ``--event-ttl``), rarely read, and read from etcd
when they are. The engine must hold every object to serve reads, so for those types it holds each one as its
compact JSON, deflated with a preset dictionary of an Event's usual fields (a 665-byte Event takes 180 bytes,
a tenth of its decoded dicts; 6 us to deflate, 2 to inflate), and decodes it on every read: ``get``,
``list`` and a watch's initial events each see a fresh dict equal to what was written, with the same key
order. A list
with a ``limit`` decodes only its page (``select_page``), so paging through every Event never holds them all.

Nothing in-process watches Events through an informer, so no reader holds a shared decoded copy; a change's
decoded object lives only as long as the watch history keeps that change.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterator, MutableMapping

from gangplane.store.base import Object
from gangplane.store.objects import Key, TypeKey, copy_objects
from gangplane.store.selectors import ObjectFilter

COMPACT_TYPES = frozenset({("", "events"), ("events.k8s.io", "events")})
# What most Events repeat, as client-go's recorder writes them: deflate refers back to it instead of
# spelling each field name again. Changing it makes stored texts unreadable; they live only in memory.
_PRESET = json.dumps(
    {"apiVersion": "v1", "kind": "Event",
     "metadata": {"name": "", "namespace": "default", "uid": "", "creationTimestamp": "", "generation": 1,
                  "resourceVersion": ""},
     "involvedObject": {"apiVersion": "batch/v1", "kind": "Job", "name": "", "namespace": "default", "uid": "",
                        "resourceVersion": ""},
     "type": "Normal", "reason": "", "message": "", "source": {"component": ""}, "firstTimestamp": "",
     "lastTimestamp": "", "count": 1, "reportingComponent": "", "reportingInstance": ""},
    separators=(",", ":"),
).encode()  # fmt: skip
_WBITS, _LEVEL, _MEM_LEVEL = -10, 6, 3  # raw deflate, 1 KiB window: small state, fast for ~1 KB texts


def encode(obj: Object) -> bytes:
    return deflated(json.dumps(obj, separators=(",", ":")))


def deflated(text: str) -> bytes:
    """``encode`` of the object whose compact JSON is ``text`` (the journal's: the engine encodes an Event
    once, for the journal, the bucket and the watch history alike)."""
    deflate = zlib.compressobj(_LEVEL, zlib.DEFLATED, _WBITS, _MEM_LEVEL, zlib.Z_DEFAULT_STRATEGY, _PRESET)
    return deflate.compress(text.encode()) + deflate.flush()


def decode(data: bytes) -> Object:
    inflate = zlib.decompressobj(_WBITS, _PRESET)
    decoded: Object = json.loads(inflate.decompress(data) + inflate.flush())
    return decoded


class EncodedBucket(MutableMapping[Key, Object]):
    """A mapping of keys to objects that stores each object encoded (``encode``)."""

    __slots__ = ("_rows",)

    def __init__(self) -> None:
        self._rows: dict[Key, bytes] = {}

    def __getitem__(self, key: Key) -> Object:
        return decode(self._rows[key])

    def __setitem__(self, key: Key, obj: Object) -> None:
        self._rows[key] = encode(obj)

    def __delitem__(self, key: Key) -> None:
        del self._rows[key]

    def put_encoded(self, key: Key, data: bytes) -> None:
        """Hold ``data``, an object already encoded (``deflated``)."""
        self._rows[key] = data

    def __iter__(self) -> Iterator[Key]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def texts(self) -> dict[Key, bytes]:
        """A snapshot of the encoded objects (the caller holds the store's lock)."""
        return dict(self._rows)


def select_page(
    texts: dict[Key, bytes], selection: ObjectFilter, start: Key | None, limit: int
) -> tuple[list[tuple[Key, Object]], int]:
    """The matches after ``start`` in key order, at most ``limit`` of them (0: all), decoded one at a time so
    a page costs what it holds; with how many matches are left after it. Without label or field selectors
    those are counted by key, not decoded (the expiry sweep pages through every Event this way)."""
    keys = sorted(k for k in texts if (start is None or k > start) and selection.namespace in (None, k[0]))
    page: list[tuple[Key, Object]] = []
    for at, key in enumerate(keys):
        if limit and len(page) == limit:
            if selection.labels.empty and not selection.fields:
                return page, len(keys) - at
            return page, sum(1 for k in keys[at:] if selection.matches(decode(texts[k])))
        obj = decode(texts[key])
        if selection.matches(obj):
            page.append((key, obj))
    return page, 0


def new_bucket(tk: TypeKey) -> MutableMapping[Key, Object]:
    """An empty bucket for the objects of type ``tk``."""
    return EncodedBucket() if tk in COMPACT_TYPES else {}


def copies_for(tk: TypeKey) -> Callable[[list[Object]], list[Object]]:
    """How a list hands out objects of type ``tk``: copies, except where each read decodes afresh (a list of
    every Event, as the expiry sweep makes, would otherwise hold them twice)."""
    return _as_decoded if tk in COMPACT_TYPES else copy_objects


def _as_decoded(objs: list[Object]) -> list[Object]:
    return objs


__all__ = [
    "COMPACT_TYPES",
    "EncodedBucket",
    "copies_for",
    "decode",
    "deflated",
    "encode",
    "new_bucket",
    "select_page",
]
