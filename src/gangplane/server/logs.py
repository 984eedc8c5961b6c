"""Pod logs: ``<logs_dir>/<namespace>/<pod>/<container>.log`` (``.previous.log`` for ``previous=true``), read
whole, tailed, or followed.

Names are checked against the Kubernetes name syntax and the resolved path must stay under ``logs_dir``, so
no request can read anything outside the state directory.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from gangplane.server.query import BadRequest

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_CHUNK = 64 * 1024
_TERMINAL_PHASES = ("Succeeded", "Failed")


def _check(kind: str, name: str) -> str:
    if not _NAME.match(name) or ".." in name:
        raise BadRequest(f"invalid {kind} name {name!r}")
    return name


def log_path(logs_dir: Path, namespace: str, pod: str, container: str, *, previous: bool = False) -> Path:
    """The container's current log, or with ``previous`` the log of its last terminated instance (the node
    agent keeps it as ``<container>.previous.log`` when the container restarts)."""
    suffix = ".previous.log" if previous else ".log"
    parts = (_check("namespace", namespace), _check("pod", pod), _check("container", container) + suffix)
    root = logs_dir.resolve()
    path = root.joinpath(*parts).resolve()
    if not path.is_relative_to(root):
        raise BadRequest(f"invalid log path for pod {pod!r}")
    if previous and not path.is_file():
        raise BadRequest(f'previous terminated container "{container}" in pod "{pod}" not found')
    return path


def container_names(pod: dict[str, Any]) -> list[str]:
    spec = pod.get("spec") or {}
    return [str(c.get("name")) for c in (spec.get("initContainers") or []) + (spec.get("containers") or [])]


def choose_container(pod: dict[str, Any], requested: str) -> str:
    """The requested container, or the only one; as the API server, refuse to guess between several."""
    names = container_names(pod)
    name = pod.get("metadata", {}).get("name", "")
    if requested:
        if requested not in names:
            raise BadRequest(f"container {requested} is not valid for pod {name}")
        return requested
    main = [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []]
    if len(main) == 1:
        return main[0]
    raise BadRequest(f"a container name must be specified for pod {name}, choose one of: [{' '.join(main)}]")


def tail(data: bytes, lines: int | None) -> bytes:
    """The last ``lines`` lines of ``data`` (a trailing newline does not start a new line)."""
    if lines is None:
        return data
    if lines == 0:
        return b""
    parts = data.splitlines(keepends=True)
    return b"".join(parts[-lines:])


def read_log(path: Path, tail_lines: int | None) -> tuple[bytes, int]:
    """The log (or its last ``tail_lines`` lines) and the offset it was read up to."""
    if not path.is_file():
        return b"", 0
    with path.open("rb") as f:
        size = os.fstat(f.fileno()).st_size
        if tail_lines is None:
            return f.read(size), size
        start, data = size, b""
        while start > 0 and data.count(b"\n") <= tail_lines:
            start = max(0, start - _CHUNK)
            f.seek(start)
            data = f.read(size - start)
        return tail(data, tail_lines), size


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with path.open("rb") as f:
            f.seek(offset)
            return f.read(_CHUNK)
    except FileNotFoundError:
        return b""


async def follow(
    path: Path, offset: int, pod_alive: Callable[[], Awaitable[bool]], poll: float = 0.2
) -> AsyncIterator[bytes]:
    """Bytes appended to the file after ``offset``, until the pod is gone or finished and the file drained."""
    while True:
        chunk = _read_from(path, offset)
        if chunk:
            offset += len(chunk)
            yield chunk
            continue
        if not await pod_alive():
            if not _read_from(path, offset):
                return
            continue
        await anyio.sleep(poll)


def pod_running(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") not in _TERMINAL_PHASES


__all__ = ["choose_container", "container_names", "follow", "log_path", "pod_running", "read_log", "tail"]
