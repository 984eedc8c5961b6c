"""Group commit for the API server's writes.

Writes run on the event loop (a single-object write holds the store lock far less than a thread hop costs)
inside the store's ``deferred()``: they return before they are durable. Before answering, each request awaits
``GroupCommit.durable``: the first one schedules a ``Store.sync`` at the end of the current event-loop pass,
so the requests the loop handles in that pass (one per ready connection) share one transaction. No request
is answered, and no watcher sees a change, before its transaction has committed.

A store that syncs to disk is synced on a thread of its own, one transaction after the other: ``sqlite3``
lets go of the GIL while SQLite writes, so the event loop goes on reading, admitting and buffering the next
requests (the next group) on one core while the last group commits on the other, as a database's group
commit pipelines its log writes. A store in memory syncs at once, on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from gangplane.store.engine import Engine, check_epoch

T = TypeVar("T")


class GroupCommit:
    def __init__(self, store: object) -> None:
        self._store = store if isinstance(store, Engine) else None  # other stores are durable on return
        self._pending: asyncio.Future[None] | None = None
        self._committer = Committer()

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
        """Start the transaction of this loop pass's writes; later writes wait for the next one."""
        self._pending = None
        if not store.sync_blocks:
            _settle(done, _outcome(store.sync))
            return
        self._committer.submit(store, done)


class Committer:
    """A thread that runs the stores' ``sync`` for the API server, one transaction after the other, and
    settles each transaction's future on the event loop it belongs to. The thread ends after ``IDLE_S`` with
    nothing to do (an idle server holds none) and starts again with the next transaction."""

    IDLE_S = 5.0

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Engine, asyncio.Future[None]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._running = False

    def submit(self, store: Engine, done: asyncio.Future[None]) -> None:
        with self._lock:
            self._jobs.put((store, done))
            if not self._running:
                # a daemon: a transaction in flight when the process ends is finished by ``Store.close``
                # (it takes the same lock), and one never started held no acknowledged write
                threading.Thread(target=self._run, name="gangplane-commit", daemon=True).start()
                self._running = True

    def _run(self) -> None:
        while (job := self._next()) is not None:
            store, done = job
            outcome = _outcome(store.sync)
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
                done.get_loop().call_soon_threadsafe(_settle, done, outcome)

    def _next(self) -> tuple[Engine, asyncio.Future[None]] | None:
        """The next transaction to run, or None (and the thread ends) after ``IDLE_S`` without one."""
        while True:
            try:
                return self._jobs.get(timeout=self.IDLE_S)
            except queue.Empty:
                with self._lock:
                    if self._jobs.empty():
                        self._running = False
                        return None


def _outcome(sync: Callable[[], None]) -> Exception | None:
    try:
        sync()
    except Exception as exc:
        return exc
    return None


def _settle(done: asyncio.Future[None], outcome: Exception | None) -> None:
    """Tell the requests waiting on ``done`` how their transaction ended."""
    if done.done():
        return
    if outcome is None:
        done.set_result(None)
    else:
        done.set_exception(outcome)


__all__ = ["GroupCommit"]
