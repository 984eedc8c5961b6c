"""A uvicorn server run on a thread for the length of a test (or module), started before it is handed out."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn


@contextmanager
def serving(server: uvicorn.Server, timeout: float = 15.0) -> Iterator[uvicorn.Server]:
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "the server did not start"
    try:
        yield server
    finally:
        server.should_exit = True
        thread.join(10)
