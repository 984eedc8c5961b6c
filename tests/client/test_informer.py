"""Informers over the in-memory store: initial list, live events, indexes, re-list after a gap."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gangplane.client.informer import Informer
from gangplane.store.base import EventType, ListOptions, Object
from gangplane.store.catalog import CONFIGMAPS
from gangplane.store.memory import MemoryStore
from waiting import wait_for


def cm(name: str, ns: str = "default", **labels: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
    }


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    s = MemoryStore()
    yield s
    s.close()


def test_lists_then_follows_changes(store: MemoryStore) -> None:
    store.create(CONFIGMAPS, cm("a"))
    informer = Informer(store, CONFIGMAPS)
    seen: list[tuple[EventType, str]] = []
    informer.add_handler(lambda kind, obj, old: seen.append((kind, obj["metadata"]["name"])))
    informer.start()
    assert informer.wait_synced(5)
    store.create(CONFIGMAPS, cm("b"))
    b = store.get(CONFIGMAPS, "default", "b")
    b["data"] = {"x": "1"}
    store.update(CONFIGMAPS, b)
    store.delete(CONFIGMAPS, "default", "a")
    wait_for(lambda: len(seen) == 4, 5.0)
    informer.stop()
    assert seen == [
        (EventType.ADDED, "a"),
        (EventType.ADDED, "b"),
        (EventType.MODIFIED, "b"),
        (EventType.DELETED, "a"),
    ]
    assert [o["metadata"]["name"] for o in informer.list()] == ["b"]
    assert informer.get("default", "b") is not None


def test_indexes_follow_label_changes(store: MemoryStore) -> None:
    informer = Informer(store, CONFIGMAPS, ListOptions(namespace="default"))
    informer.add_index("team", lambda o: [o["metadata"].get("labels", {}).get("team", "")])
    informer.start()
    informer.wait_synced(5)
    store.create(CONFIGMAPS, cm("a", team="x"))
    store.create(CONFIGMAPS, cm("b", team="x"))
    store.create(CONFIGMAPS, cm("c", ns="other", team="x"))
    wait_for(lambda: len(informer.by_index("team", "x")) == 2, 5.0)
    a = store.get(CONFIGMAPS, "default", "a")
    a["metadata"]["labels"]["team"] = "y"
    store.update(CONFIGMAPS, a)
    wait_for(lambda: [o["metadata"]["name"] for o in informer.by_index("team", "y")] == ["a"], 5.0)
    assert [o["metadata"]["name"] for o in informer.by_index("team", "x")] == ["b"]
    informer.stop()


def test_relist_after_history_loss_reports_what_the_gap_hid() -> None:
    store = MemoryStore(history_size=2)
    store.create(CONFIGMAPS, cm("a"))
    informer = Informer(store, CONFIGMAPS)
    informer.start()
    informer.wait_synced(5)
    informer.stop()  # the informer misses everything from here
    store.delete(CONFIGMAPS, "default", "a")
    for i in range(5):
        store.create(CONFIGMAPS, cm(f"n{i}"))
    resumed = Informer(store, CONFIGMAPS)
    resumed._cache = dict(informer._cache)  # as if the same informer came back after the gap
    seen: list[tuple[EventType, str]] = []
    resumed.add_handler(lambda kind, obj, old: seen.append((kind, obj["metadata"]["name"])))
    resumed.start()
    resumed.wait_synced(5)
    resumed.stop()
    assert (EventType.DELETED, "a") in seen
    assert sorted(n for k, n in seen if k is EventType.ADDED) == [f"n{i}" for i in range(5)]
    store.close()
