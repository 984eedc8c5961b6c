"""The kubelet's event queue: events are written off the pod workers, in order, and dropped beyond the
queue's bound as client-go's broadcaster drops them; those queued together share one transaction."""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from gangplane.agent.kubelet_events import EventSink
from gangplane.client.events import EventRecorder
from gangplane.clock import WallClock
from gangplane.store.base import ListOptions
from gangplane.store.catalog import EVENTS, NAMESPACES
from gangplane.store.memory import MemoryStore
from gangplane.store.sqlite import SqliteStore


def _pod(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": name},
    }


def _store() -> MemoryStore:
    store = MemoryStore()
    store.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    return store


def test_close_writes_every_queued_event_in_order() -> None:
    store = _store()
    sink = EventSink(EventRecorder(store, WallClock(), "kubelet", host="node-0"))
    for i in range(20):
        sink.event(_pod(f"p{i}"), "Normal", "Started", "Started container main", "spec.containers{main}")
    sink.close()
    events = store.list(EVENTS, ListOptions(namespace="default")).items
    assert sorted(e["involvedObject"]["name"] for e in events) == sorted(f"p{i}" for i in range(20))
    assert all(e["source"] == {"component": "kubelet", "host": "node-0"} for e in events)
    store.close()


class _Blocked(EventRecorder):
    """A recorder whose writes wait for ``release``: the queue fills up behind the first."""

    def __init__(self, store: MemoryStore) -> None:
        super().__init__(store, WallClock(), "kubelet", host="node-0")
        self.writing, self.release = threading.Event(), threading.Event()
        self.written: list[str] = []

    def event(self, obj: dict[str, object], *args: str) -> None:
        self.writing.set()
        self.release.wait(10)
        self.written.append(str(obj["metadata"]["name"]))  # type: ignore[index]


def test_a_full_queue_drops_new_events_and_keeps_the_rest() -> None:
    store = _store()
    recorder = _Blocked(store)
    sink = EventSink(recorder, limit=3)
    sink.event(_pod("first"), "Normal", "Created", "Created container: main")
    assert recorder.writing.wait(10)  # the writer holds "first"; three more fit, the fifth is dropped
    for name in ("a", "b", "c", "dropped"):
        sink.event(_pod(name), "Normal", "Created", "Created container: main")
    recorder.release.set()
    sink.close()
    assert recorder.written == ["first", "a", "b", "c"]
    store.close()


class _Gated(EventRecorder):
    """A recorder whose first write waits for ``release`` (the queue fills behind it), then writes."""

    def __init__(self, store: SqliteStore) -> None:
        super().__init__(store, WallClock(), "kubelet", host="node-0")
        self.writing, self.release = threading.Event(), threading.Event()

    def event(self, obj: dict[str, object], *args: str) -> None:
        self.writing.set()
        self.release.wait(10)
        super().event(obj, *args)


def _transactions(store: SqliteStore, fail: bool = False) -> list[int]:
    """The number of statements of each journal transaction from now on (each one failing if ``fail``)."""
    journal: Any = store._journal
    flush, transactions = journal.flush, []

    def counting() -> None:
        transactions.append(len(journal._buffer))
        if fail:
            raise sqlite3.OperationalError("disk I/O error")
        flush()

    journal.flush = counting
    return transactions


def _queued_behind_one(store: SqliteStore, recorder: _Gated, names: list[str]) -> EventSink:
    sink = EventSink(recorder)
    sink.event(_pod("first"), "Normal", "Pulled", "Container image already present on machine")
    assert recorder.writing.wait(10)
    for name in names:
        sink.event(_pod(name), "Normal", "Started", "Started container main")
    return sink


def test_events_queued_together_share_one_transaction(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store.db")
    store.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    recorder = _Gated(store)
    sink = _queued_behind_one(store, recorder, [f"p{i}" for i in range(5)])
    transactions = _transactions(store)
    recorder.release.set()
    sink.close()
    assert len(transactions) == 2  # the first alone, the five queued behind it together
    events = store.list(EVENTS, ListOptions(namespace="default")).items
    assert sorted(e["involvedObject"]["name"] for e in events) == ["first", "p0", "p1", "p2", "p3", "p4"]
    store.close()


def test_a_failed_transaction_loses_its_events_not_the_writer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SqliteStore(tmp_path / "store.db")
    store.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    recorder = _Gated(store)
    sink = _queued_behind_one(store, recorder, ["lost-1", "lost-2"])
    journal: Any = store._journal
    flush = journal.flush
    _transactions(store, fail=True)
    recorder.release.set()
    with caplog.at_level(logging.WARNING):
        sink.close()
    assert "(1 of them)" in caplog.text and "(2 of them)" in caplog.text
    journal.flush = flush
    store.close()
    reopened = SqliteStore(tmp_path / "store.db")  # what is durable: neither lost event
    names = {
        e["involvedObject"]["name"] for e in reopened.list(EVENTS, ListOptions(namespace="default")).items
    }
    assert not names & {"first", "lost-1", "lost-2"}
    reopened.close()
