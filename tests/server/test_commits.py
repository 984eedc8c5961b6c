"""The API server's group commit: the writes of one event-loop pass share a transaction, and none is
acknowledged before it."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from gangplane.server.commits import Committer, GroupCommit
from gangplane.store import MemoryStore, ResourceType, SqliteStore

CONFIGMAP = ResourceType("", "v1", "ConfigMap", "configmaps", has_status=False)


def _configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


async def _request(commits: GroupCommit, store: MemoryStore | SqliteStore, name: str) -> None:
    """One request's write as the API server makes it: buffered on the loop, answered once durable."""
    epoch = commits.epoch()
    commits.write(store.create, CONFIGMAP, _configmap(name))
    await commits.durable(epoch)


def test_concurrent_writes_share_transactions_and_are_durable_when_answered(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store.db")
    journal: Any = store._journal
    transactions: list[int] = []
    flush = journal.flush

    def counting() -> None:
        transactions.append(len(journal._buffer))
        flush()

    journal.flush = counting
    commits = GroupCommit(store)
    answered: list[bool] = []

    async def answer(name: str) -> None:
        await _request(commits, store, name)
        answered.append(store.durable())

    async def main() -> None:
        await asyncio.gather(*(answer(f"c{i}") for i in range(20)))

    asyncio.run(main())
    assert answered == [True] * 20
    assert len(transactions) == 1 and transactions[0] >= 20  # one pass, one transaction
    store.close()
    reopened = SqliteStore(tmp_path / "store.db")
    assert len(reopened.list(CONFIGMAP).items) == 20
    reopened.close()


def test_a_write_returns_the_stored_object_to_render_without_a_copy(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store.db")
    commits = GroupCommit(store)
    created = commits.write(store.create, CONFIGMAP, _configmap("a"))
    asyncio.run(commits.durable(0))
    assert created is store._find(CONFIGMAP, "default", "a")
    store.close()


def _commit_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "gangplane-commit"]


def test_the_loop_takes_the_next_writes_while_a_transaction_is_written_on_the_commit_thread(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "store.db")
    journal: Any = store._journal
    flush, release = journal.flush, threading.Event()
    flushed_on: list[tuple[str, int]] = []

    def slow() -> None:  # the transaction takes its statements, then SQLite takes its time
        flushed_on.append((threading.current_thread().name, len(journal._buffer)))
        flush()
        release.wait(5)

    journal.flush = slow
    commits = GroupCommit(store)

    async def main() -> None:
        first = asyncio.ensure_future(_request(commits, store, "a"))
        while not flushed_on:  # the first transaction has started on the commit thread
            await asyncio.sleep(0.001)
        second = asyncio.ensure_future(
            _request(commits, store, "b")
        )  # the loop is free: b is written meanwhile
        await asyncio.sleep(0.01)
        assert not first.done() and not second.done()
        release.set()
        await asyncio.gather(first, second)

    asyncio.run(main())
    # a (with its type's row) alone, then b
    assert flushed_on == [("gangplane-commit", 2), ("gangplane-commit", 1)]
    store.close()


def test_a_failed_transaction_fails_every_request_that_waited_on_it(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "store.db")
    journal: Any = store._journal

    def broken() -> None:
        journal._buffer.clear()
        raise sqlite3.OperationalError("disk I/O error")

    journal.flush = broken
    commits = GroupCommit(store)

    async def main() -> list[BaseException | None]:
        return await asyncio.gather(
            *(_request(commits, store, f"c{i}") for i in range(3)), return_exceptions=True
        )

    outcomes = asyncio.run(main())
    assert [type(o) for o in outcomes] == [sqlite3.OperationalError] * 3
    assert store.list(CONFIGMAP).items == []  # the cache went back to what the journal has
    store.close()


def test_the_commit_thread_ends_when_idle_and_comes_back_with_the_next_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Committer, "IDLE_S", 0.05)
    store = SqliteStore(tmp_path / "store.db")
    commits = GroupCommit(store)
    before = len(_commit_threads())

    asyncio.run(_request(commits, store, "a"))
    deadline = time.monotonic() + 5
    while len(_commit_threads()) > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(_commit_threads()) == before
    asyncio.run(_request(commits, store, "b"))  # another loop, a new thread
    assert len(store.list(CONFIGMAP).items) == 2
    store.close()


def test_a_store_in_memory_commits_on_the_loop_without_a_thread() -> None:
    store = MemoryStore()
    commits = GroupCommit(store)
    before = len(_commit_threads())

    asyncio.run(_request(commits, store, "a"))
    assert store.durable()
    assert len(_commit_threads()) == before
