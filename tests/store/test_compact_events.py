"""Events are held as their JSON text (store/compact.py): every read sees exactly what a dict store would."""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path
from typing import Any

from gangplane.api import limits
from gangplane.store import EventType, ListOptions, SqliteStore, compact
from gangplane.store.catalog import EVENTS
from gangplane.store.compact import EncodedBucket, new_bucket
from gangplane.store.core import ObjectStore
from gangplane.store.objects import type_key
from gangplane.store.patch import MERGE_PATCH

from .conftest import POD, pod


def event(name: str, involved: str = "p", **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default", "labels": {"x": "y"}},
        "involvedObject": {"kind": "Pod", "name": involved, "namespace": "default", "uid": "u-1"},
        "reason": "Started",
        "message": "Started container ✓",
        "source": {"component": "agent"},
        "count": 1,
        "firstTimestamp": "2026-12-03T10:00:00Z",
        "lastTimestamp": "2026-12-03T10:00:00Z",
        **fields,
    }


def test_only_events_are_encoded() -> None:
    assert isinstance(new_bucket(type_key(EVENTS)), EncodedBucket)
    assert type(new_bucket(type_key(POD))) is dict


def test_events_are_held_encoded(store: ObjectStore) -> None:
    store.create(EVENTS, event("e1"))
    bucket = store._objects[type_key(EVENTS)]
    assert isinstance(bucket, EncodedBucket)
    (data,) = bucket._rows.values()
    assert isinstance(data, bytes) and len(data) < len(json.dumps(store.get(EVENTS, "default", "e1"))) / 2


def test_reads_return_what_was_written(store: ObjectStore) -> None:
    created = store.create(EVENTS, event("e1"))
    store.create(EVENTS, event("e2", involved="q"))
    got = store.get(EVENTS, "default", "e1")
    assert got == created and list(got) == list(created)  # same content, same key order
    assert list(got["metadata"]) == list(created["metadata"])
    names = [e["metadata"]["name"] for e in store.list(EVENTS).items]
    assert names == ["e1", "e2"]
    selected = store.list(EVENTS, ListOptions(field_selector="metadata.name=e2", label_selector="x=y"))
    assert [e["involvedObject"]["name"] for e in selected.items] == ["q"]
    got["message"] = "edited by a reader"  # a reader's copy is its own
    listed = store.list(EVENTS).items
    listed[0]["involvedObject"]["name"] = "edited"
    assert store.get(EVENTS, "default", "e1")["message"] == "Started container ✓"
    assert store.list(EVENTS).items[0]["involvedObject"]["name"] == "p"


def test_count_bump_delete_and_watch(store: ObjectStore) -> None:
    first = store.create(EVENTS, event("e1"))
    watch = store.watch(EVENTS, resource_version=first["metadata"]["resourceVersion"], timeout=5)
    bumped = store.patch(
        EVENTS, "default", "e1", {"count": 2, "lastTimestamp": "2026-12-03T10:01:00Z"}, MERGE_PATCH
    )
    assert bumped["count"] == 2 and bumped["firstTimestamp"] == first["firstTimestamp"]
    store.delete(EVENTS, "default", "e1")
    seen = list(islice(iter(watch), 2))
    watch.close()
    assert [(e.type, e.object["count"]) for e in seen] == [(EventType.MODIFIED, 2), (EventType.DELETED, 2)]
    assert seen[0].object == bumped
    assert store.list(EVENTS).items == []
    initial = store.watch(EVENTS, timeout=5)  # a watch from "now" lists what is there as ADDED
    store.create(EVENTS, event("e3"))
    (added,) = islice(iter(initial), 1)
    initial.close()
    assert added.type is EventType.ADDED and added.object == store.get(EVENTS, "default", "e3")


def test_events_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    first = SqliteStore(path)
    first.create(EVENTS, event("e1"))
    first.patch(EVENTS, "default", "e1", {"count": 3}, MERGE_PATCH)
    first.create(POD, pod("p"))
    before = first.list(EVENTS)
    first.close()
    second = SqliteStore(path)
    try:
        assert second.list(EVENTS).items == before.items
        assert isinstance(second._objects[type_key(EVENTS)], EncodedBucket)
        assert second.get(EVENTS, "default", "e1")["count"] == 3
    finally:
        second.close()


def _pages(store: ObjectStore, rt: Any, limit: int, **selectors: str) -> list[tuple[list[str], int | None]]:
    out, token = [], ""
    while True:
        page = store.list(rt, ListOptions(limit=limit, continue_token=token, **selectors))
        out.append(([o["metadata"]["name"] for o in page.items], page.remaining))
        token = page.continue_token
        if not token:
            return out


def test_paging_events_answers_as_paging_pods(store: ObjectStore) -> None:
    for i in range(7):
        labels = {"x": "y"} if i % 2 else {}
        store.create(
            EVENTS,
            {**event(f"o{i}"), "metadata": {"name": f"o{i}", "namespace": "default", "labels": labels}},
        )
        store.create(POD, pod(f"o{i}", labels=labels))
    for selectors in (
        {},
        {"label_selector": "x=y"},
        {"field_selector": "metadata.name!=o3"},
        {"namespace": "other"},
    ):
        for limit in (1, 2, 3, 7, 8):
            assert _pages(store, EVENTS, limit, **selectors) == _pages(store, POD, limit, **selectors)


def test_an_event_is_encoded_once_for_journal_bucket_and_history(store: ObjectStore) -> None:
    """The bucket holds the journal's JSON deflated, and the watch history the bucket's own bytes: an Event
    create encodes it once (it was encoded three times)."""
    created = store.create(EVENTS, event("e1"))
    bucket = store._objects[type_key(EVENTS)]
    assert isinstance(bucket, EncodedBucket)
    (row,) = bucket._rows.values()
    assert row == compact.deflated(limits.dumps(created)) == compact.encode(created)
    (kept,) = store._history._logs[type_key(EVENTS)].changes
    assert kept.object is row
    watch = store.watch(EVENTS, resource_version=str(int(created["metadata"]["resourceVersion"]) - 1))
    (resumed,) = islice(watch, 1)
    watch.close()
    assert resumed.object == created
