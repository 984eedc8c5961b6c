"""Running the control plane: foreground ``serve``, and ``start_background`` / ``stop`` / ``status``.

Everything lives in one state directory (``$GANGPLANE_HOME``, default ``~/.gangplane``): the SQLite store,
the bearer token, the kubeconfig and the TLS key (all 0600), the pid file, the server log and the pod logs.
Nothing here reads or writes outside it.
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import os
import secrets
import signal
import ssl
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
import yaml
from prometheus_client import CollectorRegistry
from starlette.routing import Route

from gangplane.clock import WallClock, to_datetime
from gangplane.errors import AlreadyExists, NotFound
from gangplane.server import tls
from gangplane.server.admission import TrainerAdmission
from gangplane.server.app import create_app
from gangplane.server.home import default_state_dir
from gangplane.server.resources import default_registry
from gangplane.store.base import Admission, Store
from gangplane.store.sqlite import SqliteStore

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7443
CONTEXT = "gangplane"


@dataclass(frozen=True, slots=True)
class Paths:
    root: Path

    @property
    def token(self) -> Path:
        return self.root / "token"

    @property
    def store(self) -> Path:
        return self.root / "store.db"

    @property
    def pid(self) -> Path:
        return self.root / "server.pid"

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def server_log(self) -> Path:
        return self.root / "server.log"

    @property
    def cert(self) -> Path:
        return self.root / "tls.crt"

    @property
    def key(self) -> Path:
        return self.root / "tls.key"


def prepare(state_dir: Path) -> Paths:
    paths = Paths(Path(state_dir).expanduser().resolve())
    paths.root.mkdir(mode=0o700, parents=True, exist_ok=True)
    paths.logs.mkdir(mode=0o700, exist_ok=True)
    return paths


def write_private(path: Path, text: str) -> None:
    """Write ``text`` atomically into a file only the owner can read (0600 from the first byte)."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(text)
    os.replace(tmp, path)


def ensure_token(paths: Paths) -> str:
    """The bearer token, generated at first start and kept in ``<state_dir>/token``."""
    if paths.token.is_file():
        token = paths.token.read_text().strip()
        if token:
            return token
    token = secrets.token_urlsafe(32)
    write_private(paths.token, token + "\n")
    return token


def ensure_certificate(paths: Paths, host: str) -> bytes:
    """The serving certificate (PEM), made at first start or when it does not cover ``host``."""
    if paths.cert.is_file() and paths.key.is_file():
        pem = paths.cert.read_bytes()
        if tls.covers(pem, host):
            return pem
    pem, key = tls.make_certificate(host, to_datetime(WallClock().now()))
    write_private(paths.key, key.decode())
    write_private(paths.cert, pem.decode())
    return pem


def server_url(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else f"[{host}]" if ":" in host else host
    return f"https://{shown}:{port}"


def kubeconfig(url: str, token: str, ca_pem: bytes) -> dict[str, Any]:
    cluster = {"server": url, "certificate-authority-data": base64.b64encode(ca_pem).decode()}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": CONTEXT, "user": {"token": token}}],
        "contexts": [
            {"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": "default"}}
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_kubeconfig(paths: Paths, url: str, token: str, ca_pem: bytes) -> Path:
    write_private(paths.kubeconfig, yaml.safe_dump(kubeconfig(url, token, ca_pem), sort_keys=False))
    return paths.kubeconfig


def ensure_default_namespace(store: Store) -> None:
    ns = default_registry().find("", "v1", "namespaces")
    assert ns is not None
    try:
        store.get(ns.storage, "", "default")
    except NotFound:
        with contextlib.suppress(AlreadyExists):
            store.create(ns.storage, {"kind": "Namespace", "metadata": {"name": "default"}})


def load_admission(ref: str) -> Admission:
    """``module:attribute`` naming an ``Admission`` callable, for the layer above to inject one."""
    module, _, attr = ref.partition(":")
    if not module or not attr:
        raise ValueError(f"admission must be given as module:attribute, not {ref!r}")
    hook: Admission = getattr(importlib.import_module(module), attr)
    return hook


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


def open_store(paths: Paths, admission: Admission | None = None) -> SqliteStore:
    """The durable store of a state directory, with Trainer's admission unless ``admission`` replaces it."""
    trainer = TrainerAdmission(default_registry()) if admission is None else None
    store = SqliteStore(paths.store, admission=admission or trainer)
    if trainer is not None:
        trainer.bind(store)
    return store


def serve(
    state_dir: Path,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    admission: Admission | None = None,
) -> None:
    """Run the API server alone over the SQLite store of ``state_dir`` until SIGINT/SIGTERM."""
    paths = prepare(state_dir)
    store = open_store(paths, admission)
    try:
        make_server(paths.root, store, host, port).run()
    finally:
        store.close()


@dataclass(frozen=True, slots=True)
class ServerStatus:
    state_dir: Path
    pid: int | None
    running: bool
    healthy: bool
    url: str | None
    kubeconfig: Path

    @property
    def state(self) -> str:
        return "healthy" if self.healthy else "unhealthy" if self.running else "stopped"


def _read_pid(paths: Paths) -> int | None:
    try:
        return int(paths.pid.read_text().strip())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False  # our own child, now reaped
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
    pid = _read_pid(paths)
    running = pid is not None and _alive(pid)
    url = _url(paths) if running else None
    healthy = running and url is not None and ready(url, paths.cert)
    return ServerStatus(paths.root, pid if running else None, running, healthy, url, paths.kubeconfig)


# The process ``gangplane up`` starts: the API server plus the embedded cluster (``gangplane.cluster``).
# ``gangplane.server`` serves the API alone.
CLUSTER_MODULE = "gangplane.cluster"


def _spawn(
    paths: Paths, host: str, port: int, admission_ref: str | None, module: str, extra: list[str]
) -> int:
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
    if admission_ref:
        argv += ["--admission", admission_ref]
    argv += extra
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(paths.server_log), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    return os.posix_spawn(sys.executable, argv, dict(os.environ), file_actions=actions, setsid=True)


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
    admission_ref: str | None = None,
    timeout: float = 30.0,
    module: str = CLUSTER_MODULE,
    extra_args: list[str] | None = None,
) -> ServerStatus:
    """Start ``python -m <module>`` (the embedded cluster by default) detached; wait until ``/readyz``."""
    current = status(state_dir)
    if current.running:
        return current
    paths = prepare(state_dir)
    ensure_token(paths)
    ensure_certificate(paths, host)
    pid = _spawn(paths, host, port, admission_ref, module, extra_args or [])
    write_private(paths.pid, f"{pid}\n")
    url, deadline = server_url(host, port), time.monotonic() + timeout
    while not ready(url, paths.cert, timeout=0.5):
        if not _alive(pid) or time.monotonic() > deadline:
            stop(paths.root)
            raise RuntimeError(f"the control plane did not become ready; server log:\n{_log_tail(paths)}")
        time.sleep(0.1)
    return status(paths.root)


def stop(state_dir: Path, timeout: float = 10.0) -> bool:
    """SIGTERM the server, wait (SIGKILL after ``timeout``), remove the pid file; False if not running."""
    paths = Paths(Path(state_dir).expanduser().resolve())
    pid = _read_pid(paths)
    was_running = pid is not None and _alive(pid)
    if pid is not None and was_running:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    paths.pid.unlink(missing_ok=True)
    return was_running


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
    "load_admission",
    "make_server",
    "open_store",
    "prepare",
    "serve",
    "start_background",
    "status",
    "stop",
]
