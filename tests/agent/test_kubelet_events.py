"""The kubelet's event queue: events are written off the pod workers, in order, and dropped beyond the
queue's bound as client-go's broadcaster drops them."""

from __future__ import annotations

import threading

from gangplane.agent.kubelet_events import EventSink
from gangplane.client.events import EventRecorder
from gangplane.clock import WallClock
from gangplane.store.base import ListOptions
from gangplane.store.catalog import EVENTS, NAMESPACES
from gangplane.store.memory import MemoryStore


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
