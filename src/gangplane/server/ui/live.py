"""Server-sent events for a dashboard page: one stream per page, fed by store watches, coalesced.

A page names what it shows (``?watch=trainjobs,pods``); the stream opens one store watch per kind, starting
at the current resource version, and sends a single ``changed`` event once things settle: the first change
opens a ``SETTLE`` window that gathers every further change, and two events are at least ``MIN_GAP`` apart.
A busy cluster therefore costs a page at most one re-render per ``MIN_GAP``, however many objects change.
A comment line every ``HEARTBEAT`` seconds lets a gone browser be noticed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import anyio
import anyio.to_thread
from starlette.types import Receive, Scope, Send

from gangplane.store import catalog
from gangplane.store.base import ListOptions, ResourceType, Store, Watch

SETTLE = 0.15
MIN_GAP = 0.5
HEARTBEAT = 15.0

WATCHABLE: dict[str, ResourceType] = {
    "nodes": catalog.NODES,
    "pods": catalog.PODS,
    "events": catalog.EVENTS,
    "jobs": catalog.JOBS,
    "jobsets": catalog.JOBSETS,
    "trainjobs": catalog.TRAINJOBS,
    "workloads": catalog.WORKLOADS,
    "clusterqueues": catalog.CLUSTER_QUEUES,
    "cohorts": catalog.COHORTS,
    "localqueues": catalog.LOCAL_QUEUES,
    "volcanoqueues": catalog.VOLCANO_QUEUES,
    "kaiqueues": catalog.KAI_QUEUES,
}


def kinds(requested: str) -> list[ResourceType]:
    """The watchable kinds a ``watch`` parameter names (unknown names are ignored)."""
    names = dict.fromkeys(n.strip() for n in requested.split(","))
    return [WATCHABLE[n] for n in names if n in WATCHABLE]


def open_watch(store: Store, rt: ResourceType) -> Watch:
    """A watch for changes from now on (no synthetic ADDED events for what exists)."""
    version = store.list(rt, ListOptions(limit=1)).resource_version
    return store.watch(rt, resource_version=version)


class Coalescer:
    """Counts changes; ``wait`` returns once a change has settled (or on heartbeat time, with 0)."""

    def __init__(self) -> None:
        self.pending = 0
        self.changed = anyio.Event()
        self.last_sent = 0.0

    def note(self) -> None:
        self.pending += 1
        self.changed.set()

    async def wait(self) -> int:
        with anyio.move_on_after(HEARTBEAT):
            await self.changed.wait()
        if not self.pending:
            return 0
        await anyio.sleep(max(SETTLE, self.last_sent + MIN_GAP - time.monotonic()))
        count, self.pending = self.pending, 0
        self.changed = anyio.Event()
        self.last_sent = time.monotonic()
        return count


async def _pump(watch: Watch, coalescer: Coalescer, limiter: anyio.CapacityLimiter) -> None:
    events = iter(watch)
    while True:
        event = await anyio.to_thread.run_sync(next, events, None, abandon_on_cancel=True, limiter=limiter)
        if event is None:
            coalescer.note()  # the watch ended (store closing, history gone): let the page re-read once
            return
        coalescer.note()


class ChangeStream:
    """An ASGI response: ``text/event-stream`` of ``changed`` events (data: how many changes were coalesced)
    until the client goes away, when every watch is closed."""

    def __init__(
        self,
        store: Store,
        types: Sequence[ResourceType],
        limiter: anyio.CapacityLimiter,
        headers: Sequence[tuple[bytes, bytes]] = (),
    ) -> None:
        self.store, self.types, self.limiter, self.headers = store, types, limiter, list(headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        watches = [await anyio.to_thread.run_sync(open_watch, self.store, rt) for rt in self.types]
        coalescer = Coalescer()
        try:
            headers = [(b"content-type", b"text/event-stream"), (b"x-accel-buffering", b"no"), *self.headers]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            async with anyio.create_task_group() as group:
                for watch in watches:
                    group.start_soon(_pump, watch, coalescer, self.limiter)
                group.start_soon(_until_disconnect, receive, group.cancel_scope)
                await _body(send, b"retry: 2000\n: connected\n\n")
                while True:
                    count = await coalescer.wait()
                    await _body(
                        send, f"event: changed\ndata: {count}\n\n".encode() if count else b": beat\n\n"
                    )
        finally:
            for watch in watches:
                watch.close()


async def _body(send: Send, data: bytes) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": True})


async def _until_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


__all__ = ["HEARTBEAT", "MIN_GAP", "SETTLE", "WATCHABLE", "ChangeStream", "Coalescer", "kinds", "open_watch"]
