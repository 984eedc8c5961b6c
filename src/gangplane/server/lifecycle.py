"""Running the control plane: foreground ``serve``, and ``start_background`` / ``stop`` / ``status``.

Everything lives in one state directory (``$GANGPLANE_HOME``, default ``~/.gangplane``; ``statedir``): the
SQLite store, the bearer token, the kubeconfig and the TLS key (all 0600), the pid file, the server log and the
pod logs. Nothing here reads or writes outside it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import ssl
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil
import uvicorn
import yaml
from prometheus_client import CollectorRegistry
from starlette.routing import Route

from gangplane.errors import AlreadyExists, NotFound
from gangplane.server import statedir
from gangplane.server.admission import TrainerAdmission
from gangplane.server.app import create_app
from gangplane.server.resources import default_registry
from gangplane.server.statedir import (
    Paths,
    default_state_dir,
    ensure_certificate,
    ensure_token,
    kubeconfig,
    lock,
    prepare,
    server_url,
    write_kubeconfig,
    write_private,
)
from gangplane.store.base import Store
from gangplane.store.sqlite import SqliteStore

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7443


def ensure_default_namespace(store: Store) -> None:
    ns = default_registry().find("", "v1", "namespaces")
    assert ns is not None
    try:
        store.get(ns.storage, "", "default")
    except NotFound:
        with contextlib.suppress(AlreadyExists):
            store.create(ns.storage, {"kind": "Namespace", "metadata": {"name": "default"}})


def make_server(
    state_dir: Path,
    store: Store,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    metrics: CollectorRegistry | None = None,
    extra_routes: Sequence[Route] = (),
) -> uvicorn.Server:
    """An HTTPS uvicorn server for ``store``, with the token, certificate and kubeconfig of ``state_dir``."""
    paths = prepare(state_dir)
    token = ensure_token(paths)
    ensure_default_namespace(store)
    ca_pem = ensure_certificate(paths, host)
    app = create_app(store, token=token, logs_dir=paths.logs, metrics=metrics, extra_routes=extra_routes)
    write_kubeconfig(paths, server_url(host, port), token, ca_pem)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        ssl_certfile=paths.cert,
        ssl_keyfile=paths.key,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=2,
        access_log=False,
    )
    return uvicorn.Server(config)


def open_store(paths: Paths) -> SqliteStore:
    """The durable store of a state directory, with Trainer's admission."""
    trainer = TrainerAdmission(default_registry())
    store = SqliteStore(paths.store, admission=trainer)
    trainer.bind(store)
    return store


def serve(state_dir: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
    """Run the API server alone over the SQLite store of ``state_dir`` until SIGINT/SIGTERM."""
    paths = prepare(state_dir)
    held = lock(paths)
    store = open_store(paths)
    try:
        make_server(paths.root, store, host, port).run()
    finally:
        store.close()
        os.close(held)


@dataclass(frozen=True, slots=True)
class ServerStatus:
    state_dir: Path
    pid: int | None
    running: bool
    healthy: bool
    url: str | None
    kubeconfig: Path
    args: tuple[str, ...] = ()  # the options the running server was started with

    @property
    def state(self) -> str:
        return "healthy" if self.healthy else "unhealthy" if self.running else "stopped"


def _record(paths: Paths) -> statedir.ProcessRecord | None:
    try:
        return statedir.ProcessRecord.loads(paths.pid.read_text())
    except OSError:
        return None


def _running(paths: Paths) -> statedir.ProcessRecord | None:
    """The server of the pid file if that very process still runs (pid, start time and command line)."""
    record = _record(paths)
    if record is None:
        return None
    with contextlib.suppress(ChildProcessError):
        os.waitpid(record.pid, os.WNOHANG)  # reap it if it is our own exited child
    return record if record.alive() else None


def _url(paths: Paths) -> str | None:
    try:
        config = yaml.safe_load(paths.kubeconfig.read_text())
        return str(config["clusters"][0]["cluster"]["server"])
    except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError):
        return None


def ready(url: str, ca: Path, timeout: float = 1.0) -> bool:
    try:
        context = ssl.create_default_context(cafile=str(ca))
        with urllib.request.urlopen(f"{url}/readyz", timeout=timeout, context=context) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return False


def status(state_dir: Path) -> ServerStatus:
    paths = Paths(Path(state_dir).expanduser().resolve())
    record = _running(paths)
    url = _url(paths) if record else None
    healthy = record is not None and url is not None and ready(url, paths.cert)
    pid, args = (record.pid, tuple(record.args)) if record else (None, ())
    return ServerStatus(paths.root, pid, record is not None, healthy, url, paths.kubeconfig, args)


# The process ``gangplane up`` starts: the API server plus the embedded cluster (``gangplane.cluster``).
# ``gangplane.server`` serves the API alone.
CLUSTER_MODULE = "gangplane.cluster"


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
        if _running(paths) is None:
            paths.pid.unlink(missing_ok=True)
            raise _ServerGone()
        if time.monotonic() > deadline:
            stop(paths.root)
            raise RuntimeError(f"the control plane did not become ready; server log:\n{_log_tail(paths)}")
        time.sleep(0.1)
        url = url or _url(paths)
    return status(paths.root)


def stop(state_dir: Path, timeout: float = 10.0) -> bool:
    """SIGTERM the server, wait (SIGKILL after ``timeout``), remove the pid file; False if not running.
    Only the very process the pid file recorded is ever signalled, never a later one with the same pid."""
    paths = Paths(Path(state_dir).expanduser().resolve())
    record = _running(paths)
    if record is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(record.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _running(paths) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        if _running(paths) is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(record.pid, signal.SIGKILL)
    paths.pid.unlink(missing_ok=True)
    return record is not None


__all__ = [
    "CLUSTER_MODULE",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "Paths",
    "ServerStatus",
    "default_state_dir",
    "ensure_default_namespace",
    "ensure_token",
    "kubeconfig",
    "lock",
    "make_server",
    "open_store",
    "prepare",
    "serve",
    "start_background",
    "status",
    "stop",
]
