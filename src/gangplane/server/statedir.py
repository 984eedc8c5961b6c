"""The state directory: its paths, its credentials (token, certificate, kubeconfig), and its safety — one
server per directory, private files, and pid files that name a process.

- ``hold_lock``: the server takes an exclusive ``flock`` on ``<state>/lock`` before it opens the store and
  keeps it until it exits (the kernel drops it even on SIGKILL). A second server on the same directory would
  otherwise hand out the same resourceVersions and overwrite acknowledged writes.
- ``tighten``: the directory is 0700 and every file in it 0600, also when an older version made them wider.
- ``ProcessRecord``: the pid file records the pid with the process's start time and command line; a pid is
  only ever signalled while both still match, so a pid the kernel reused for another program is left alone.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import fcntl
import json
import os
import secrets
import socket
import stat
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil
import yaml

from gangplane.clock import WallClock, to_datetime
from gangplane.server import tls
from gangplane.server.home import default_state_dir

LOCK_FILE = "lock"


class StateDirBusy(RuntimeError):
    """Another live process holds the state directory's lock."""


def hold_lock(root: Path) -> int:
    """Take the exclusive lock of ``root`` for the life of this process; returns the (inheritable=False) fd
    to keep open. Raises ``StateDirBusy`` naming the holder when another process has it."""
    fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise StateDirBusy(f"the state directory {root} is in use by pid {holder}") from None
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def locked(root: Path) -> bool:
    """Whether some process holds ``root``'s lock now (probing takes and drops it if free)."""
    path = root / LOCK_FILE
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def tighten(root: Path) -> None:
    """0700 on the directory and its sub-directories, 0600 on every file (never following links)."""
    _chmod(root, 0o700)
    for entry in root.rglob("*"):
        with contextlib.suppress(OSError):
            mode = entry.lstat().st_mode
            if stat.S_ISDIR(mode):
                _chmod(entry, 0o700)
            elif stat.S_ISREG(mode):
                _chmod(entry, 0o600)


def _chmod(path: Path, mode: int) -> None:
    with contextlib.suppress(OSError):
        if stat.S_IMODE(path.lstat().st_mode) & ~mode:
            os.chmod(path, stat.S_IMODE(path.lstat().st_mode) & mode, follow_symlinks=False)


@dataclass(frozen=True, slots=True)
class ProcessRecord:
    """What ``server.pid`` holds: enough to tell the server from a later process with the same pid."""

    pid: int
    create_time: float
    cmdline: list[str]
    args: list[str]  # the options it was started with (--config, --slurm-conf), to refuse different ones

    @classmethod
    def of(
        cls, pid: int, args: list[str], argv: list[str] | None = None, wait: float = 10.0
    ) -> ProcessRecord:
        """The record of ``pid``; with ``argv``, once the process has exec'd it (a just-spawned child shows
        its parent's command line until then). ``psutil.Error`` if it is gone."""
        process = psutil.Process(pid)
        deadline = time.monotonic() + wait
        while argv is not None and process.cmdline() != argv and time.monotonic() < deadline:
            time.sleep(0.01)
        return cls(pid, process.create_time(), process.cmdline(), args)

    def dumps(self) -> str:
        return json.dumps(asdict(self)) + "\n"

    @classmethod
    def loads(cls, text: str) -> ProcessRecord | None:
        """None for anything but a record this module wrote (a bare pid from an older version included:
        without its identity it must not be signalled)."""
        try:
            data = json.loads(text)
            return cls(
                int(data["pid"]), float(data["create_time"]), list(data["cmdline"]), list(data["args"])
            )
        except (ValueError, KeyError, TypeError):
            return None

    def alive(self) -> bool:
        """The recorded process still runs: same pid, start time and command line, and not a zombie."""
        try:
            process = psutil.Process(self.pid)
            same = abs(process.create_time() - self.create_time) < 0.01 and process.cmdline() == self.cmdline
            return same and process.status() != psutil.STATUS_ZOMBIE
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return False


def port_in_use(host: str, port: int) -> bool:
    """Whether binding ``host:port`` fails because something already listens there."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


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
    """The state directory, created 0700 (and tightened to 0700/0600 if an older version left it wider)."""
    paths = Paths(Path(state_dir).expanduser().resolve())
    paths.root.mkdir(mode=0o700, parents=True, exist_ok=True)
    paths.logs.mkdir(mode=0o700, exist_ok=True)
    tighten(paths.root)
    return paths


def lock(paths: Paths) -> int:
    """Hold the state directory for this server process (exits with a message if another one holds it)."""
    try:
        return hold_lock(paths.root)
    except StateDirBusy as exc:
        raise SystemExit(f"error: {exc}; stop it first (gangplane down)") from None


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


__all__ = [
    "CONTEXT",
    "Paths",
    "ProcessRecord",
    "StateDirBusy",
    "default_state_dir",
    "ensure_certificate",
    "ensure_token",
    "hold_lock",
    "kubeconfig",
    "lock",
    "locked",
    "port_in_use",
    "prepare",
    "server_url",
    "tighten",
    "write_kubeconfig",
    "write_private",
]
