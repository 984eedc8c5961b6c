"""Cache reads (controller-runtime's cached client): served from the manager's informers, started lazily."""

from __future__ import annotations

from gangplane.client.cache import CacheReads, LiveReads, StoreReader
from gangplane.client.controller import Manager
from gangplane.clock import ManualClock
from gangplane.store import catalog
from gangplane.store.base import ListOptions
from gangplane.store.memory import MemoryStore


def _cm(name: str, namespace: str = "default", **labels: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}, "data": {"k": name}}


def test_cache_reads_start_an_informer_on_first_read_and_filter_like_the_server() -> None:
    store = MemoryStore()
    for cm in (_cm("a", app="x"), _cm("b", app="y"), _cm("c", "other", app="x")):
        store.create(catalog.CONFIGMAPS, cm)
    manager = Manager(store, ManualClock())
    manager.start_informers()
    try:
        reads = CacheReads(manager)
        assert reads.get(catalog.CONFIGMAPS, "default", "a")["data"] == {"k": "a"}  # type: ignore[index]
        assert reads.get(catalog.CONFIGMAPS, "default", "missing") is None
        assert [o["metadata"]["name"] for o in reads.list(catalog.CONFIGMAPS, "default", "app=x")] == ["a"]
        assert len(reads.list(catalog.CONFIGMAPS, None, "app=x")) == 2
        assert reads.list(catalog.CONFIGMAPS, "default", "app=x") == LiveReads(store).list(
            catalog.CONFIGMAPS, "default", "app=x"
        )
    finally:
        manager.stop()


def test_a_narrowed_informer_is_shared_and_an_unserved_kind_reads_as_absent() -> None:
    store = MemoryStore()
    store.create(catalog.CONFIGMAPS, _cm("a", app="x"))
    store.create(catalog.CONFIGMAPS, _cm("b", app="y"))
    manager = Manager(store, ManualClock())
    narrowed = ListOptions(label_selector="app=x")
    watched = manager.informer(catalog.CONFIGMAPS, narrowed)
    manager.start_informers()
    try:
        reads = CacheReads(
            manager, options={catalog.CONFIGMAPS: narrowed}, served=lambda rt: rt != catalog.WORKLOADS
        )
        assert reads.informer(catalog.CONFIGMAPS) is watched
        assert reads.get(catalog.CONFIGMAPS, "default", "b") is None  # outside the narrowed cache
        assert reads.list(catalog.WORKLOADS, "default") == [] and reads.informer(catalog.WORKLOADS) is None
    finally:
        manager.stop()


def test_store_reader_hands_plugins_copies() -> None:
    store = MemoryStore()
    store.create(catalog.CONFIGMAPS, _cm("a"))
    manager = Manager(store, ManualClock())
    manager.start_informers()
    try:
        reader = StoreReader(CacheReads(manager))
        found = reader.get("v1", "ConfigMap", "default", "a")
        assert found is not None
        found["data"]["k"] = "edited"
        assert manager.informer(catalog.CONFIGMAPS).get("default", "a")["data"] == {"k": "a"}  # type: ignore[index]
        assert (
            reader.get("v1", "NoSuchKind", "default", "a") is None and reader.list("v1", "NoSuchKind") == []
        )
    finally:
        manager.stop()
