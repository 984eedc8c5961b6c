"""Long-lived responses: watch event streams and followed pod logs; and large lists, sent as they are encoded.

Store watches block a thread per ``next``; when the client goes away the stream is cancelled, the watch is
closed (which wakes the thread) and the thread is abandoned rather than awaited. ``DisconnectAwareStream``
always listens for ``http.disconnect``, because with ASGI 2.4 Starlette would otherwise only notice a gone
client on the next write, which for a quiet watch may never come.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import anyio.to_thread
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from gangplane.store.base import Watch, WatchEvent

# Watches hold a thread each for as long as they are open; keep them off the default pool of 40.
WATCH_THREADS = 1000
BATCH = 100  # events one chunk carries at most


class DisconnectAwareStream(StreamingResponse):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as group:

            async def stream() -> None:
                await self.stream_response(send)
                group.cancel_scope.cancel()

            group.start_soon(stream)
            await self.listen_for_disconnect(receive)
            group.cancel_scope.cancel()


async def watch_lines(
    watch: Watch, render: Callable[[WatchEvent], dict[str, Any] | None], limiter: anyio.CapacityLimiter
) -> AsyncIterator[bytes]:
    """Newline-delimited JSON ``{"type", "object"}`` events; ``render`` returns None to skip an event. The
    events already queued behind the one a thread waited for come with it, in one chunk: a thread hop and
    a socket write per event were most of what a watched create cost the API server."""
    events = iter(watch)
    try:
        ended = False
        while not ended:
            batch, ended = await anyio.to_thread.run_sync(
                _taken, events, watch.ready, abandon_on_cancel=True, limiter=limiter
            )
            lines = [
                json.dumps(body, separators=(",", ":")).encode()
                for body in map(render, batch)
                if body is not None
            ]
            if lines:
                yield b"\n".join(lines) + b"\n"
    finally:
        watch.close()


def _taken(events: Iterator[WatchEvent], ready: Callable[[], int]) -> tuple[list[WatchEvent], bool]:
    """The next event (waiting for it) and up to ``BATCH`` - 1 already queued behind it; whether the watch
    has ended."""
    taken: list[WatchEvent] = []
    while not taken or (len(taken) < BATCH and ready() > 0):
        event = next(events, None)
        if event is None:
            return taken, True
        taken.append(event)
    return taken, False


LIST_CHUNK = 64 * 1024  # bytes of a large list's JSON encoded before they are sent
STREAMED_ITEMS = 64  # a list of more items is sent in chunks (fewer: one body, with its Content-Length)


async def list_chunks(body: dict[str, Any]) -> AsyncIterator[bytes]:
    """``body`` (a list: its ``items`` last) as compact JSON, the same bytes as ``json.dumps`` of it, a chunk
    at a time: kube-apiserver streams large lists too (KEP-5116). A list of 1,000 TrainJobs encoded whole
    took three buffers of its size at once (the encoder's parts, the text, its bytes), every poll."""
    items = body["items"]
    head = json.dumps({**body, "items": []}, separators=(",", ":"))
    parts, size = [head[:-2].encode()], 0  # up to and with the items' opening bracket
    for i, item in enumerate(items):
        part = json.dumps(item, separators=(",", ":")).encode()
        parts.append(b"," + part if i else part)
        size += len(part)
        if size >= LIST_CHUNK:
            yield b"".join(parts)
            parts, size = [], 0
    parts.append(b"]}")
    yield b"".join(parts)


__all__ = [
    "LIST_CHUNK",
    "STREAMED_ITEMS",
    "WATCH_THREADS",
    "DisconnectAwareStream",
    "list_chunks",
    "watch_lines",
]
