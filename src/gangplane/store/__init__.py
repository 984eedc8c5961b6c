"""The object store of the embedded control plane: one ``Store`` contract, an in-memory and an SQLite
backend, and the pure pieces they share (selectors, patches, server-side apply)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gangplane.lazy import exports

if TYPE_CHECKING:
    from gangplane.store.base import (
        Admission,
        EventType,
        ListOptions,
        Object,
        ObjectList,
        Operation,
        Propagation,
        ResourceType,
        Store,
        Watch,
        WatchEvent,
    )
    from gangplane.store.memory import MemoryStore
    from gangplane.store.patch import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH
    from gangplane.store.selectors import parse_field_selector, parse_label_selector
    from gangplane.store.sqlite import SqliteStore

_EXPORTS = {
    "Admission": "gangplane.store.base",
    "EventType": "gangplane.store.base",
    "ListOptions": "gangplane.store.base",
    "Object": "gangplane.store.base",
    "ObjectList": "gangplane.store.base",
    "Operation": "gangplane.store.base",
    "Propagation": "gangplane.store.base",
    "ResourceType": "gangplane.store.base",
    "Store": "gangplane.store.base",
    "Watch": "gangplane.store.base",
    "WatchEvent": "gangplane.store.base",
    "MemoryStore": "gangplane.store.memory",
    "APPLY_PATCH": "gangplane.store.patch",
    "JSON_PATCH": "gangplane.store.patch",
    "MERGE_PATCH": "gangplane.store.patch",
    "STRATEGIC_MERGE_PATCH": "gangplane.store.patch",
    "parse_field_selector": "gangplane.store.selectors",
    "parse_label_selector": "gangplane.store.selectors",
    "SqliteStore": "gangplane.store.sqlite",
}


__getattr__ = exports(__name__, _EXPORTS)

__all__ = [
    "APPLY_PATCH",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "Admission",
    "EventType",
    "ListOptions",
    "MemoryStore",
    "Object",
    "ObjectList",
    "Operation",
    "Propagation",
    "ResourceType",
    "SqliteStore",
    "Store",
    "Watch",
    "WatchEvent",
    "parse_field_selector",
    "parse_label_selector",
]
