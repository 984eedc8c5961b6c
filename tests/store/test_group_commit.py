"""Group commit: deferred writes share one transaction, watchers see a change only once it is durable, and a
failed transaction loses exactly what it held (the cache goes back to the journal, watches end)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from gangplane.errors import ApiError
from gangplane.store import SqliteStore
from gangplane.store.core import ObjectStore
from gangplane.store.engine import check_epoch
from gangplane.store.memory import MemoryStore

from .conftest import POD, pod


def _transactions(store: SqliteStore) -> list[int]:
    """Record the size of each transaction the store's journal writes."""
    journal: Any = store._journal
    sizes: list[int] = []
    flush = journal.flush

    def counting() -> None:
        sizes.append(len(journal._buffer))
        flush()

    journal.flush = counting
    return sizes


def test_deferred_writes_share_one_transaction_and_are_seen_after_it(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store.db")
    sizes = _transactions(store)
    watch = store.watch(POD, resource_version=store.list(POD).resource_version, timeout=5)
    with store.deferred():
        for name in ("a", "b", "c"):
            store.create(POD, pod(name))
    assert not store.durable() and sizes == []
    assert [p["metadata"]["name"] for p in store.list(POD).items] == ["a", "b", "c"]  # the cache has them
    store.sync()
    assert store.durable() and sizes[-1] >= 3
    assert [e.object["metadata"]["name"] for e in _take(watch, 3)] == ["a", "b", "c"]
    watch.close()
    store.close()
    db = sqlite3.connect(tmp_path / "store.db")
    assert db.execute("SELECT COUNT(*) FROM objects WHERE plural = 'pods'").fetchone() == (3,)
    db.close()


def test_every_write_outside_deferred_is_durable_when_it_returns(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store.db")
    sizes = _transactions(store)
    store.create(POD, pod("a"))
    assert (
        store.durable() and len(sizes) == 1
    )  # one transaction (the pod, and the type row it is the first of)
    store.close()


def test_a_watch_started_before_the_sync_sees_each_change_once(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store.db")
    with store.deferred():
        store.create(POD, pod("a"))
    watch = store.watch(POD, timeout=2)  # its initial list holds "a" already
    store.sync()
    store.create(POD, pod("b"))
    names = [e.object["metadata"]["name"] for e in _take(watch, 2)]
    watch.close()
    assert names == ["a", "b"]
    store.close()


class _FailingJournal:
    """The memory journal, except that its next flush fails."""

    def __init__(self) -> None:
        self.fail = False

    def load(self) -> tuple[int, list[Any]]:
        return 0, []

    def put(self, *args: Any) -> None:
        pass

    def remove(self, *args: Any) -> None:
        pass

    def flush(self) -> None:
        if self.fail:
            self.fail = False
            raise OSError("disk full")

    def close(self) -> None:
        pass


def test_a_failed_transaction_loses_what_it_held_and_ends_watches() -> None:
    journal = _FailingJournal()
    store = ObjectStore(journal)
    watch = store.watch(POD, timeout=5)
    journal.fail = True
    with pytest.raises(OSError, match="disk full"):
        store.create(POD, pod("lost"))
    assert store.list(POD).items == [] and store.durable()
    assert list(watch) == []  # ended: its client lists again
    store.create(POD, pod("kept"))
    assert [p["metadata"]["name"] for p in store.list(POD).items] == ["kept"]
    store.close()


def test_memory_store_needs_no_sync() -> None:
    store = MemoryStore()
    with store.deferred():
        store.create(POD, pod("a"))
    store.sync()
    assert store.durable()
    store.close()


def _take(watch: Any, n: int) -> list[Any]:
    events = []
    for event in watch:
        events.append(event)
        if len(events) == n:
            break
    return events


def test_a_write_carried_by_another_s_failed_transaction_is_never_acknowledged() -> None:
    journal = _FailingJournal()
    store = ObjectStore(journal)
    epoch = store.epoch
    with store.deferred():
        store.create(POD, pod("a"))
    journal.fail = True
    with pytest.raises(OSError, match="disk full"):
        store.create(POD, pod("b"))  # its transaction held "a" too
    store.sync()  # nothing left to commit: "a" looks durable, but it was lost
    with pytest.raises(ApiError, match="not saved"):
        check_epoch(store, epoch)
    assert store.list(POD).items == []
    store.close()


def _label_in_place(rt: Any, op: Any, new: dict[str, Any], old: Any) -> dict[str, Any]:
    new["metadata"].setdefault("labels", {})["admitted"] = "yes"
    new["spec"]["containers"][0]["image"] = "defaulted"
    return new


def test_a_borrowing_create_takes_its_input_and_any_other_create_copies_it() -> None:
    """The API server gives up the body it decoded (``deferred(borrow=True)``): admission edits it without a
    copy first. Every other caller's object is left as it was."""
    store = MemoryStore(admission=_label_in_place)
    mine = pod("a")
    created = store.create(POD, mine)
    assert created["spec"]["containers"][0]["image"] == "defaulted"
    assert mine == pod("a")  # untouched
    given = pod("b")
    with store.deferred(borrow=True):
        stored = store.create(POD, given)
    assert given["spec"]["containers"][0]["image"] == "defaulted"  # edited in place, not copied
    assert stored["metadata"]["labels"] == {"admitted": "yes"} and stored == store.get(POD, "default", "b")
