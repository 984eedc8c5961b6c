"""One socket write per answer: uvicorn's httptools protocol with its writes gathered per event-loop pass.

uvicorn writes an answer's head and its body with two ``transport.write`` calls, and over TLS each becomes a
record of its own and a ``send`` of its own: on a pod create that second write cost the API server about a
twentieth of its event loop's time (py-spy, docs/control-plane.md, "Performance"). ``GatheringTransport``
keeps what a connection writes during one pass of the loop and hands it to the socket in one write at the end
of that pass, so an answer's head and body (and a watch's events of the same pass) leave together. Nothing
is held longer than the pass that wrote it, and a close sends what is held first.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class GatheringTransport:
    """A transport whose writes of one event-loop pass reach ``inner`` as one write; everything else is
    ``inner``'s own."""

    def __init__(self, inner: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._inner, self._loop = inner, loop
        self._held: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._held:
            self._loop.call_soon(self._send)
        self._held.append(bytes(data))

    def close(self) -> None:
        self._send()
        self._inner.close()

    def _send(self) -> None:
        if self._held and not self._inner.is_closing():
            held, self._held = self._held, []
            self._inner.write(held[0] if len(held) == 1 else b"".join(held))
        self._held.clear()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class GatheringHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol over a ``GatheringTransport`` (pass it as ``uvicorn.Config(http=...)``)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        gathering = GatheringTransport(transport, self.loop)
        super().connection_made(gathering)  # type: ignore[arg-type]


__all__ = ["GatheringHttpTools", "GatheringTransport"]
