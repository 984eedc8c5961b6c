"""Safety of the state directory: one server per directory, private files, and pid files that name a process.

- ``hold_lock``: the server takes an exclusive ``flock`` on ``<state>/lock`` before it opens the store and
  keeps it until it exits (the kernel drops it even on SIGKILL). A second server on the same directory would
  otherwise hand out the same resourceVersions and overwrite acknowledged writes.
- ``tighten``: the directory is 0700 and every file in it 0600, also when an older version made them wider.
- ``ProcessRecord``: the pid file records the pid with the process's start time and command line; a pid is
  only ever signalled while both still match, so a pid the kernel reused for another program is left alone.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import stat
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

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


__all__ = ["ProcessRecord", "StateDirBusy", "hold_lock", "locked", "port_in_use", "tighten"]
