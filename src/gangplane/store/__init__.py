"""The object store of the embedded control plane: one ``Store`` contract, an in-memory and an SQLite
backend, and the pure pieces they share (selectors, patches, server-side apply)."""

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
