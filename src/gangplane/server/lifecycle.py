"""Running the control plane: foreground ``serve`` and ``status`` (starting and stopping it in the background is
``cluster/launch.py``: the layer that knows what ``gangplane up`` runs).

Everything lives in one state directory (``$GANGPLANE_HOME``, default ``~/.gangplane``; ``statedir``): the
SQLite store, the bearer token, the kubeconfig and the TLS key (all 0600), the pid file, the server log and the
pod logs. Nothing here reads or writes outside it.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

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
        proxy_headers=False,  # served on its own address, never behind a proxy: one ASGI layer less per request
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
    "ready",
    "running_record",
    "serve",
    "served_url",
    "status",
]
