"""Following several pods' logs at once: one reader thread per (pod, container), lines merged into a queue
with a ``[pod]`` or ``[pod/container]`` prefix, for ``logs trainjob/NAME -f`` and ``run``.

The log source is injected (``KubeStore.pod_log`` in the CLI, a fake in tests), so nothing here knows HTTP.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator

from gangplane.errors import ApiError, GangplaneError
from gangplane.store.base import Object

# (namespace, pod, container) -> the log's bytes as they arrive; ends when the pod's log ends.
LogSource = Callable[[str, str, str], Iterator[bytes]]
LogLine = tuple[str, str]  # (prefix, line without newline)


def container_names(pod: Object) -> list[str]:
    return [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []]


def prefix_for(pod: Object, container: str) -> str:
    """``[pod]`` when the pod has one container, ``[pod/container]`` otherwise."""
    name = str((pod.get("metadata") or {}).get("name", ""))
    return f"[{name}]" if len(container_names(pod)) <= 1 else f"[{name}/{container}]"


def split_lines(buffer: bytes, chunk: bytes) -> tuple[list[str], bytes]:
    """Complete lines in ``buffer + chunk`` and the unfinished rest."""
    data = buffer + chunk
    *complete, rest = data.split(b"\n")
    return [line.decode(errors="replace") for line in complete], rest


class LogFollower:
    """Reads logs in daemon threads; ``drain`` hands out the lines collected so far."""

    def __init__(self, source: LogSource) -> None:
        self._source = source
        self._lines: queue.Queue[LogLine] = queue.Queue()
        self._threads: dict[tuple[str, str, str], threading.Thread] = {}

    def follow(self, namespace: str, pod: Object, container: str) -> None:
        """Start following one container (once; later calls for the same one do nothing)."""
        name = str((pod.get("metadata") or {}).get("name", ""))
        key = (namespace, name, container)
        if key in self._threads:
            return
        prefix = prefix_for(pod, container)
        thread = threading.Thread(target=self._read, args=(key, prefix), daemon=True, name=f"logs-{name}")
        self._threads[key] = thread
        thread.start()

    def follow_pod(self, namespace: str, pod: Object) -> None:
        for container in container_names(pod):
            self.follow(namespace, pod, container)

    def _read(self, key: tuple[str, str, str], prefix: str) -> None:
        buffer = b""
        try:
            for chunk in self._source(*key):
                lines, buffer = split_lines(buffer, chunk)
                for line in lines:
                    self._lines.put((prefix, line))
        except (ApiError, GangplaneError) as exc:
            self._lines.put((prefix, f"<cannot read the log: {exc}>"))
        if buffer:
            self._lines.put((prefix, buffer.decode(errors="replace")))

    def drain(self, timeout: float = 0.0) -> list[LogLine]:
        """Lines collected so far, waiting up to ``timeout`` for the first one."""
        out: list[LogLine] = []
        try:
            out.append(self._lines.get(timeout=timeout) if timeout > 0 else self._lines.get_nowait())
            while True:
                out.append(self._lines.get_nowait())
        except queue.Empty:
            return out

    @property
    def active(self) -> bool:
        return any(t.is_alive() for t in self._threads.values())

    def wait(self, timeout: float) -> None:
        """Give running readers up to ``timeout`` seconds in all to reach the end of their logs."""
        deadline = time.monotonic() + timeout
        for thread in list(self._threads.values()):
            thread.join(max(0.0, deadline - time.monotonic()))


__all__ = ["LogFollower", "LogLine", "LogSource", "container_names", "prefix_for", "split_lines"]
