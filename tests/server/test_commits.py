"""The API server's group commit: the writes of one event-loop pass share a transaction, and none is
acknowledged before it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from gangplane.server.commits import GroupCommit
from gangplane.store import ResourceType, SqliteStore

CONFIGMAP = ResourceType("", "v1", "ConfigMap", "configmaps", has_status=False)


def _configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


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

    async def request(name: str) -> None:
        epoch = commits.epoch()
        commits.write(store.create, CONFIGMAP, _configmap(name))
        await commits.durable(epoch)
        answered.append(store.durable())

    async def main() -> None:
        await asyncio.gather(*(request(f"c{i}") for i in range(20)))

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
