"""The API server's transport gathers what a connection writes in one event-loop pass into one write."""

from __future__ import annotations

import asyncio
from typing import Any

from gangplane.server.coalesce import GatheringTransport


class RecordingTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        assert not self.closed
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str) -> Any:
        return f"info:{name}"


def test_the_writes_of_one_pass_reach_the_socket_as_one_and_nothing_waits_longer() -> None:
    inner = RecordingTransport()

    async def main() -> None:
        gathering = GatheringTransport(inner, asyncio.get_running_loop())  # type: ignore[arg-type]
        gathering.write(b"HTTP/1.1 201 Created\r\n\r\n")
        gathering.write(b"")
        gathering.write(memoryview(b'{"kind":"Pod"}'))
        assert inner.writes == []
        await asyncio.sleep(0)  # the pass ends
        assert inner.writes == [b'HTTP/1.1 201 Created\r\n\r\n{"kind":"Pod"}']
        gathering.write(b"next")
        await asyncio.sleep(0)
        assert inner.writes[-1] == b"next"
        assert gathering.get_extra_info("sslcontext") == "info:sslcontext"  # the rest is the inner one's

    asyncio.run(main())


def test_a_close_sends_what_is_held_first_and_later_writes_are_dropped() -> None:
    inner = RecordingTransport()

    async def main() -> None:
        gathering = GatheringTransport(inner, asyncio.get_running_loop())  # type: ignore[arg-type]
        gathering.write(b"last answer")
        gathering.close()
        assert inner.writes == [b"last answer"] and inner.closed
        gathering.write(b"too late")
        await asyncio.sleep(0)
        assert inner.writes == [b"last answer"]

    asyncio.run(main())
