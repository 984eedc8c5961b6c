"""The binding workers in process: bindings queued together share one journal transaction, each keeps its
own checks, and none is reported bound before it is durable."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from gangplane.client.events import EventRecorder
from gangplane.clock import WallClock
from gangplane.errors import Conflict
from gangplane.schedulers.binder import BindingWorker, BindRequest
from gangplane.store.binding import bind_pod
from gangplane.store.catalog import EVENTS, PODS
from gangplane.store.groups import group_writes_of
from gangplane.store.memory import MemoryStore
from gangplane.store.sqlite import SqliteStore
from schedulers.kube_builders import pod


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(tmp_path / "store.db")
    yield s
    s.close()


def _counted(store: SqliteStore) -> list[int]:
    """The number of statements of each journal transaction from now on."""
    journal: Any = store._journal
    flush, transactions = journal.flush, []

    def counting() -> None:
        transactions.append(len(journal._buffer))
        flush()

    journal.flush = counting
    return transactions


def _pods(store: SqliteStore, count: int) -> list[BindRequest]:
    requests = []
    for i in range(count):
        created = store.create(PODS, pod(f"p{i}", cpu="1"))
        requests.append(BindRequest(f"ml/p{i}", f"node-{i % 3}", created["metadata"]["uid"]))
    return requests


def _event(store: SqliteStore, request: BindRequest) -> None:
    """The ``Scheduled`` Event, as the loop writes it after each binding."""
    recorder = EventRecorder(store, WallClock(), "default-scheduler")
    bound = store.get(PODS, "ml", request.pod_key.split("/")[1])
    recorder.event({**bound, "apiVersion": "v1", "kind": "Pod"}, "Normal", "Scheduled", f"to {request.node}")


def _bind_queued(store: SqliteStore, requests: list[BindRequest], outcomes: list[Any], group: bool) -> None:
    """Queue every request before one worker starts, so it finds them all waiting."""

    def done(request: BindRequest, error: Exception | None) -> None:
        bound = store.get(PODS, "ml", request.pod_key.split("/")[1])["spec"].get("nodeName")
        outcomes.append((request.pod_key, error, bound, store.durable()))

    worker = BindingWorker(
        partial(bind_pod, store),
        done,
        workers=1,
        group=group_writes_of(store) if group else None,
        written=partial(_event, store),
    )
    for request in requests:
        worker._queue.put(request)
    worker.start()
    worker.flush()
    worker.stop()


def test_queued_bindings_share_one_transaction_and_are_durable_when_reported(store: SqliteStore) -> None:
    requests = _pods(store, 10)
    transactions, outcomes = _counted(store), []
    _bind_queued(store, requests, outcomes, group=True)
    assert transactions == [21]  # one transaction: ten bindings, ten Events and the Event type's row
    assert outcomes == [(r.pod_key, None, r.node, True) for r in requests]
    assert len(store.list(EVENTS).items) == 10


def test_without_a_group_each_binding_has_its_own_transaction(store: SqliteStore) -> None:
    requests = _pods(store, 4)
    transactions, outcomes = _counted(store), []
    _bind_queued(store, requests, outcomes, group=False)
    assert transactions == [1, 2, 1, 1, 1, 1, 1, 1]  # each binding, then its Event (the first with its type)
    assert [o[1] for o in outcomes] == [None] * 4


def test_a_binding_that_conflicts_fails_alone(store: SqliteStore) -> None:
    requests = _pods(store, 3)
    bind_pod(store, "ml", "p1", {"target": {"kind": "Node", "name": "elsewhere"}, "metadata": {"name": "p1"}})
    outcomes: list[Any] = []
    _bind_queued(store, requests, outcomes, group=True)
    assert [(o[0], type(o[1]), o[2]) for o in outcomes] == [
        ("ml/p0", type(None), "node-0"),
        ("ml/p1", Conflict, "elsewhere"),
        ("ml/p2", type(None), "node-2"),
    ]


def test_a_failed_transaction_reports_every_binding_in_it_failed(store: SqliteStore) -> None:
    requests = _pods(store, 5)
    journal: Any = store._journal

    def broken() -> None:
        journal._buffer.clear()
        raise sqlite3.OperationalError("disk I/O error")

    journal.flush = broken
    outcomes: list[Any] = []
    _bind_queued(store, requests, outcomes, group=True)
    assert [(type(o[1]), o[2]) for o in outcomes] == [(sqlite3.OperationalError, None)] * 5  # none kept
    assert store.list(EVENTS).items == []  # nor any Event of theirs


def test_the_memory_store_groups_as_well() -> None:
    store = MemoryStore()
    assert group_writes_of(store) is store
    assert group_writes_of(object()) is None  # type: ignore[arg-type]  # an API client: one request each


def test_a_step_that_raises_leaves_the_bindings_before_it_durable(store: SqliteStore) -> None:
    requests = _pods(store, 3)

    def written(request: BindRequest) -> None:
        if request.pod_key == "ml/p1":
            raise RuntimeError("a bug after the second binding")

    worker = BindingWorker(
        partial(bind_pod, store), lambda r, e: None, group=group_writes_of(store), written=written
    )
    with pytest.raises(RuntimeError):
        worker._write(requests)  # as a worker thread runs it
    assert store.durable()  # nothing left in the cache that no transaction carries
    assert [store.get(PODS, "ml", f"p{i}")["spec"].get("nodeName") for i in range(3)] == [
        "node-0",
        "node-1",
        None,
    ]
