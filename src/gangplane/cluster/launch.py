"""Starting and stopping the control plane in the background (``gangplane up`` / ``down``): a detached
``python -m gangplane.cluster`` (or ``gangplane.server`` alone) over one state directory, waited for until
``/readyz``; only the very process the pid file records is ever signalled. The server layer only serves;
this layer knows what ``up`` runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

import psutil

from gangplane.agent.leftovers import reap
from gangplane.server import statedir
from gangplane.server.lifecycle import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    ServerStatus,
    ready,
    running_record,
    served_url,
    status,
)
from gangplane.server.statedir import (
    Paths,
    ensure_certificate,
    ensure_token,
    prepare,
    server_url,
    write_private,
)

# The process ``gangplane up`` starts: the API server plus the embedded cluster (``gangplane.cluster``).
# ``gangplane.server`` serves the API alone.
CLUSTER_MODULE = "gangplane.cluster"
# The server's agents stop every pod (SIGTERM, their grace period of 5 s, SIGKILL) before it exits; this
# leaves room for that on a loaded machine before the server itself is killed.
STOP_TIMEOUT = 30.0


def _spawn(paths: Paths, host: str, port: int, module: str, extra: list[str]) -> tuple[int, list[str]]:
    argv = [
        sys.executable,
        "-m",
        module,
        "--state-dir",
        str(paths.root),
        "--host",
        host,
        "--port",
        str(port),
    ]
    argv += extra
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(paths.server_log), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    return os.posix_spawn(sys.executable, argv, dict(os.environ), file_actions=actions, setsid=True), argv


def _log_tail(paths: Paths, lines: int = 20) -> str:
    try:
        return "\n".join(paths.server_log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def start_background(
    state_dir: Path,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    timeout: float = 30.0,
    module: str = CLUSTER_MODULE,
    extra_args: list[str] | None = None,
) -> ServerStatus:
    """Start ``python -m <module>`` (the embedded cluster by default) detached; wait until ``/readyz``.
    A server already running is waited for (it may still be starting) if it was started with the same
    options; with other options, or when it cannot start, ``RuntimeError`` says why."""
    paths = prepare(state_dir)
    args = extra_args or []
    current = status(paths.root)
    if current.running:
        if list(current.args) != args:
            shown = " ".join(current.args) or "no --config"
            raise RuntimeError(
                f"the control plane (pid {current.pid}) runs with {shown}; run `gangplane down` first"
            )
        with contextlib.suppress(_ServerGone):  # it was dying (a crash, a kill): start a new one
            return _await_ready(paths, current, timeout)
    _check_can_start(paths, host, port)
    ensure_token(paths)
    ensure_certificate(paths, host)
    pid, argv = _spawn(paths, host, port, module, args)
    try:
        write_private(paths.pid, statedir.ProcessRecord.of(pid, args, argv).dumps())
    except psutil.Error:
        raise RuntimeError(f"the control plane exited at once; server log:\n{_log_tail(paths)}") from None
    try:
        return _await_ready(paths, status(paths.root), timeout, host, port)
    except _ServerGone:
        raise RuntimeError(
            f"the control plane exited while starting; server log:\n{_log_tail(paths)}"
        ) from None


class _ServerGone(Exception):
    """The server being waited for exited."""


def _check_can_start(paths: Paths, host: str, port: int, grace: float = 5.0) -> None:
    """A server that was just killed still holds its lock until its last thread is gone: give it a moment."""
    deadline = time.monotonic() + grace
    while statedir.locked(paths.root) and time.monotonic() < deadline:
        time.sleep(0.05)
    if statedir.locked(paths.root):
        raise RuntimeError(f"another process holds the state directory {paths.root} (see {paths.root}/lock)")
    if statedir.port_in_use(host, port):
        raise RuntimeError(
            f"port {port} on {host} is already in use by another program; choose one with --port"
        )


def _await_ready(
    paths: Paths, current: ServerStatus, timeout: float, host: str | None = None, port: int | None = None
) -> ServerStatus:
    url = server_url(host, port) if host is not None and port is not None else current.url
    deadline = time.monotonic() + timeout
    while url is None or not ready(url, paths.cert, timeout=0.5):
        if running_record(paths) is None:
            paths.pid.unlink(missing_ok=True)
            raise _ServerGone()
        if time.monotonic() > deadline:
            stop(paths.root)
            raise RuntimeError(f"the control plane did not become ready; server log:\n{_log_tail(paths)}")
        time.sleep(0.1)
        url = url or served_url(paths)
    return status(paths.root)


def stop(state_dir: Path, timeout: float = STOP_TIMEOUT) -> bool:
    """SIGTERM the server, wait (SIGKILL after ``timeout``), remove the pid file, then kill whatever pod
    process of this state directory is still alive (``leftovers.reap``); False if the server was not running.
    Only the very process the pid file recorded is ever signalled, never a later one with the same pid."""
    paths = Paths(Path(state_dir).expanduser().resolve())
    record = running_record(paths)
    if record is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(record.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while running_record(paths) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        if running_record(paths) is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(record.pid, signal.SIGKILL)
    paths.pid.unlink(missing_ok=True)
    reap(paths.root)  # only what a killed server could not stop itself
    return record is not None


__all__ = ["CLUSTER_MODULE", "start_background", "stop"]
