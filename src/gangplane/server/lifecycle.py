"""Running the control plane: foreground ``serve`` and ``status`` (starting and stopping it in the background is
``cluster/launch.py``: the layer that knows what ``gangplane up`` runs).

Everything lives in one state directory (``$GANGPLANE_HOME``, default ``~/.gangplane``; ``statedir``): the
SQLite store, the bearer token, the kubeconfig and the TLS key (all 0600), the pid file, the server log and the
pod logs. Nothing here reads or writes outside it.
"""

from __future__ import annotations

import contextlib
import gc
import os
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

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
    users: Mapping[str, dict[str, Any]] | None = None,
    drain: Callable[[], None] | None = None,
) -> uvicorn.Server:
    """An HTTPS uvicorn server for ``store``, with the token, certificate and kubeconfig of ``state_dir``;
    ``users`` are further bearer tokens with their users, ``drain`` runs before it stops serving."""
    paths = prepare(state_dir)
    token = ensure_token(paths)
    ensure_default_namespace(store)
    ca_pem = ensure_certificate(paths, host)
    app = create_app(
        store, token=token, logs_dir=paths.logs, metrics=metrics, extra_routes=extra_routes, users=users
    )
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
        proxy_headers=False,  # served on its own address, never behind a proxy: one ASGI layer less per request
    )
    return uvicorn.Server(config) if drain is None else DrainingServer(config, drain)


class DrainingServer(uvicorn.Server):
    """Keeps serving after the first SIGTERM/SIGINT until ``drain`` (run on a thread) has returned: what
    runs beside the API server (controllers, node agents in their own process) stops while the API still
    answers, as kube-apiserver outlives the kubelets of a cluster being shut down. A second signal stops
    serving at once (uvicorn's own handling)."""

    def __init__(self, config: uvicorn.Config, drain: Callable[[], None]) -> None:
        super().__init__(config)
        self._drain = drain
        self._draining: threading.Thread | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._draining is not None:
            super().handle_exit(sig, frame)
            return
        self._captured_signals.append(sig)  # re-raised once uvicorn has shut down, as its own handler does
        self._draining = threading.Thread(target=self._drain_then_exit, name="drain", daemon=True)
        self._draining.start()

    def _drain_then_exit(self) -> None:
        try:
            self._drain()
        finally:
            self.should_exit = True


def open_store(paths: Paths) -> SqliteStore:
    """The durable store of a state directory, with Trainer's admission."""
    trainer = TrainerAdmission(default_registry())
    store = SqliteStore(paths.store, admission=trainer)
    trainer.bind(store)
    return store


def freeze_startup_heap() -> None:
    """Take what a server process holds once it is started (modules, the CRD and OpenAPI schemas, the store
    as loaded) out of the cyclic garbage collector's full passes (``gc.freeze``): those objects live as long
    as the process, yet every full pass walked them all again - a tenth or more of the server's CPU while it
    takes thousands of writes (docs/scheduler-loop.md, "Measured"). Only for a process's entry point: what
    it freezes is never collected as a cycle."""
    gc.freeze()


def serve(state_dir: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
    """Run the API server alone over the SQLite store of ``state_dir`` until SIGINT/SIGTERM."""
    paths = prepare(state_dir)
    held = lock(paths)
    store = open_store(paths)
    try:
        server = make_server(paths.root, store, host, port)
        freeze_startup_heap()
        server.run()
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


def running_record(paths: Paths) -> statedir.ProcessRecord | None:
    """The server of the pid file if that very process still runs (pid, start time and command line)."""
    record = _record(paths)
    if record is None:
        return None
    with contextlib.suppress(ChildProcessError):
        os.waitpid(record.pid, os.WNOHANG)  # reap it if it is our own exited child
    return record if record.alive() else None


def served_url(paths: Paths) -> str | None:
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
    record = running_record(paths)
    url = served_url(paths) if record else None
    healthy = record is not None and url is not None and ready(url, paths.cert)
    pid, args = (record.pid, tuple(record.args)) if record else (None, ())
    return ServerStatus(paths.root, pid, record is not None, healthy, url, paths.kubeconfig, args)


__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "DrainingServer",
    "Paths",
    "ServerStatus",
    "default_state_dir",
    "ensure_default_namespace",
    "ensure_token",
    "freeze_startup_heap",
    "kubeconfig",
    "lock",
    "make_server",
    "open_store",
    "prepare",
    "ready",
    "running_record",
    "serve",
    "served_url",
    "status",
]
