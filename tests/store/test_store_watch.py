"""Conformance: watch ordering, resume from a resourceVersion, 410 Gone, selectors and bookmarks."""

from __future__ import annotations

import threading
import time
from itertools import islice

import pytest

from gangplane.errors import Gone
from gangplane.store import EventType, ListOptions, Watch, WatchEvent
from gangplane.store.core import ObjectStore

from .conftest import JOB, POD, MakeStore, pod


def take(watch: Watch, n: int) -> list[WatchEvent]:
    events = list(islice(iter(watch), n))
    assert len(events) == n, f"watch ended after {len(events)} of {n} events"
    return events


def summary(events: list[WatchEvent]) -> list[tuple[str, str]]:
    return [(e.type.value, e.object["metadata"]["name"]) for e in events]


def test_watch_from_now_sees_changes_in_order(store: ObjectStore) -> None:
    rv = store.list(POD).resource_version
    watch = store.watch(POD, resource_version=rv, timeout=5)
    store.create(POD, pod("a"))
    store.update(POD, pod("a", labels={"x": "1"}))
    store.delete(POD, "default", "a")
    events = take(watch, 3)
    watch.close()
    assert summary(events) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    versions = [e.resource_version for e in events]
    assert versions == sorted(versions) and versions[0] > int(rv)
    assert [int(e.object["metadata"]["resourceVersion"]) for e in events] == versions


def test_watch_without_version_starts_with_current_objects(store: ObjectStore) -> None:
    store.create(POD, pod("b"))
    store.create(POD, pod("a"))
    watch = store.watch(POD, timeout=5)
    store.create(POD, pod("c"))
    assert summary(take(watch, 3)) == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]
    watch.close()


def test_watch_resumes_after_a_resource_version(store: ObjectStore) -> None:
    first = store.create(POD, pod("a"))
    store.create(POD, pod("b"))
    store.create(JOB, {"metadata": {"name": "other-type", "namespace": "default"}})
    store.delete(POD, "default", "a")
    watch = store.watch(POD, resource_version=first["metadata"]["resourceVersion"], timeout=5)
    assert summary(take(watch, 2)) == [("ADDED", "b"), ("DELETED", "a")]
    watch.close()


def test_watch_from_compacted_version_is_gone(make_store: MakeStore) -> None:
    store = make_store(history_size=3)
    first = store.create(POD, pod("p0"))
    for i in range(1, 5):
        store.create(POD, pod(f"p{i}"))
    with pytest.raises(Gone) as info:
        store.watch(POD, resource_version=first["metadata"]["resourceVersion"])
    assert info.value.code == 410
    recent = store.list(POD).resource_version
    # The log holds history_size changes across types, trimming the largest type first: over HTTP the
    # namespaces the fixture created keep one of the three places, so the newest two pods are what is sure.
    store.watch(POD, resource_version=str(int(recent) - 2)).close()


def test_events_are_copies(store: ObjectStore) -> None:
    watch_a = store.watch(POD, resource_version="1", timeout=5)
    watch_b = store.watch(POD, resource_version="1", timeout=5)
    store.create(POD, pod("a", labels={"k": "v"}))
    take(watch_a, 1)[0].object["metadata"]["labels"]["k"] = "mutated"
    assert take(watch_b, 1)[0].object["metadata"]["labels"] == {"k": "v"}
    assert store.get(POD, "default", "a")["metadata"]["labels"] == {"k": "v"}
    watch_a.close()
    watch_b.close()


def test_label_selector_watch_turns_transitions_into_added_and_deleted(store: ObjectStore) -> None:
    options = ListOptions(label_selector="team=a")
    watch = store.watch(POD, options, resource_version=store.list(POD).resource_version, timeout=5)
    store.create(POD, pod("p", labels={"team": "b"}))
    store.update(POD, pod("p", labels={"team": "a"}))
    store.update(POD, pod("p", labels={"team": "a", "x": "1"}))
    store.update(POD, pod("p", labels={"team": "c"}))
    store.create(POD, pod("q", labels={"team": "a"}))
    events = take(watch, 4)
    watch.close()
    assert summary(events) == [("ADDED", "p"), ("MODIFIED", "p"), ("DELETED", "p"), ("ADDED", "q")]


def test_namespace_and_field_selector_watch(store: ObjectStore) -> None:
    options = ListOptions(namespace="ns1", field_selector="metadata.name=want")
    watch = store.watch(POD, options, resource_version="1", timeout=5)
    for ns, name in (("ns2", "want"), ("ns1", "other"), ("ns1", "want")):
        store.create(POD, pod(name, ns))
    events = take(watch, 1)
    watch.close()
    assert [(e.object["metadata"]["namespace"], e.object["metadata"]["name"]) for e in events] == [
        ("ns1", "want")
    ]


def test_close_ends_a_blocked_iterator(store: ObjectStore) -> None:
    watch = store.watch(POD, resource_version="1")
    received: list[WatchEvent] = []
    reader = threading.Thread(target=lambda: received.extend(watch))
    reader.start()
    time.sleep(0.05)
    watch.close()
    reader.join(timeout=2)
    assert not reader.is_alive() and received == []


def test_timeout_ends_the_watch(store: ObjectStore) -> None:
    started = time.monotonic()
    assert list(store.watch(POD, resource_version="1", timeout=0.1)) == []
    assert time.monotonic() - started < 2


def test_store_close_ends_watches(make_store: MakeStore) -> None:
    store = make_store()
    watch = store.watch(POD, resource_version="1", timeout=5)
    store.close()
    assert list(watch) == []


def test_bookmarks_carry_a_resumable_version(make_store: MakeStore) -> None:
    store = make_store(bookmark_interval=0.05)
    store.create(POD, pod("a"))
    watch = store.watch(POD, bookmarks=True, timeout=5)
    added, initial_end = take(watch, 2)
    assert added.type is EventType.ADDED
    assert initial_end.type is EventType.BOOKMARK
    assert initial_end.object["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    store.create(JOB, {"metadata": {"name": "j", "namespace": "d"}})
    idle = take(watch, 1)[0]
    watch.close()
    assert idle.type is EventType.BOOKMARK and idle.object["kind"] == "Pod"
    assert idle.resource_version == int(store.list(JOB).resource_version)
    assert idle.object["metadata"]["resourceVersion"] == str(idle.resource_version)
    resumed = store.watch(POD, resource_version=str(idle.resource_version), timeout=5)
    store.create(POD, pod("b"))
    assert summary(take(resumed, 1)) == [("ADDED", "b")]
    resumed.close()


def test_no_bookmarks_unless_asked(make_store: MakeStore) -> None:
    store = make_store(bookmark_interval=0.01)
    assert list(store.watch(POD, resource_version="1", timeout=0.1)) == []


def test_concurrent_writers_deliver_every_event_in_order(store: ObjectStore) -> None:
    watch = store.watch(POD, resource_version=store.list(POD).resource_version, timeout=10)

    def write(prefix: str) -> None:
        for i in range(25):
            store.create(POD, pod(f"{prefix}-{i}"))

    writers = [threading.Thread(target=write, args=(p,)) for p in ("a", "b", "c")]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    events = take(watch, 75)
    watch.close()
    versions = [e.resource_version for e in events]
    assert versions == sorted(set(versions))
    assert {e.object["metadata"]["name"] for e in events} == {f"{p}-{i}" for p in "abc" for i in range(25)}
