"""Group commit for the API server's writes.

Writes run on the event loop (a single-object write holds the store lock far less than a thread hop costs)
inside the store's ``deferred()``: they return before they are durable. Before answering, each request awaits
``GroupCommit.durable``: the first one schedules a ``Store.sync`` at the end of the current event-loop pass,
so the requests the loop handles in that pass (one per ready connection) share one transaction. No request
is answered, and no watcher sees a change, before its transaction has committed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from gangplane.store.engine import Engine, check_epoch

T = TypeVar("T")


class GroupCommit:
    def __init__(self, store: object) -> None:
        self._store = store if isinstance(store, Engine) else None  # other stores are durable on return
        self._pending: asyncio.Future[None] | None = None

    def epoch(self) -> int:
        """The store's count of failed transactions, taken before a write and passed to ``durable``."""
        return self._store.epoch if self._store is not None else 0

    def write(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Call the store write ``fn`` without waiting for its transaction (await ``durable`` after it)."""
        if self._store is None:
            return fn(*args, **kwargs)
        with self._store.deferred(borrow=True):  # the handler gives up its input and only renders the result
            return fn(*args, **kwargs)

    def encoded(self, obj: object) -> str | None:
        """The stored JSON of ``obj``, the object the last ``write`` returned (None if not at hand)."""
        return self._store.encoded(obj) if self._store is not None and isinstance(obj, dict) else None

    async def durable(self, epoch: int) -> None:
        """Return once every write made so far is committed; raises what the transaction raised, or a 500
        when a transaction failed since the write was made (it may have held it)."""
        store = self._store
        if store is None:
            return
        if not store.durable():
            if self._pending is None:
                loop = asyncio.get_running_loop()
                self._pending = loop.create_future()
                loop.call_soon(self._commit, store, self._pending)
            await asyncio.shield(self._pending)  # one request given up must not fail the others' wait
        check_epoch(store, epoch)

    def _commit(self, store: Engine, done: asyncio.Future[None]) -> None:
        self._pending = None
        try:
            store.sync()
        except Exception as exc:
            done.set_exception(exc)
        else:
            done.set_result(None)


__all__ = ["GroupCommit"]
