"""One container as a local process group: how it starts (``supervisor.py`` watches and stops it).

Images are not pulled or run: the container's argv runs in the agent's own environment, with the directory
of the agent's Python (its virtual environment's ``bin``) first on ``PATH``, so ``python``, ``torchrun`` and
other entry points resolve to what gangplane runs with. The container's variables are layered over the
agent's environment. stdout and stderr go, interleaved, to the container's log file; on a restart the ended
instance's log becomes the previous log (``kubectl logs --previous``).

The process leads its own session and process group, standing in for the container's PID namespace: when
the main process exits, whatever it left in the group is killed, as the kernel does when a PID namespace's
init exits. Stopping sends SIGTERM to the whole group, waits out the grace period, then SIGKILLs the group.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from gangplane.agent import cgroups, proctable
from gangplane.agent.executable import PREFIX, missing_directory, spawn_failure
from gangplane.agent.pod_state import Termination
from gangplane.clock import Clock


def venv_bin() -> Path:
    return Path(sys.executable).parent


def base_environment(inherited: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment every container starts from: the agent's, with its interpreter's ``bin`` first on
    ``PATH`` and unbuffered Python output (so ``kubectl logs -f`` shows lines as they are printed)."""
    env = dict(os.environ if inherited is None else inherited)
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p]
    first = str(venv_bin())
    env["PATH"] = os.pathsep.join([first, *(p for p in path if p != first)])
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def previous_log(path: Path) -> Path:
    """Where the last terminated instance's log is kept (``kubectl logs --previous``)."""
    return path.with_name(path.stem + ".previous.log")


def rotate_log(path: Path, *, keep_previous: bool) -> None:
    """Before an instance starts: a restart keeps the ended instance's log as the previous one (the kubelet
    keeps one terminated instance); a first start clears logs a former pod of the same name left."""
    previous = previous_log(path)
    if keep_previous and path.exists():
        path.replace(previous)
        return
    if not keep_previous:
        for stale in (path, previous):
            stale.unlink(missing_ok=True)


@dataclass(frozen=True, slots=True)
class Launch:
    """Everything needed to start one container instance."""

    argv: Sequence[str]
    env: Mapping[str, str]
    cwd: Path
    log_path: Path
    marker: str = ""  # sandbox.MARKER_ENV's value: finds the container's processes that left its group
    cgroup: Path | None = None  # the container's memory cgroup (``cgroups.py``), where limits are enforced
    fallback_to_logs: bool = False  # ``terminationMessagePolicy: FallbackToLogsOnError``


class StartError(Exception):
    """The process could not be started (no such executable, no such working directory, ...)."""


@dataclass(slots=True)
class ContainerProcess:
    """A running (or ended) container instance; ``ended`` is set once, by its supervisor (``supervisor.py``)."""

    popen: Child
    started_at: float
    marker: str = ""
    cgroup: Path | None = None
    log_on_error: Path | None = None  # the log whose tail becomes the message of a failed exit
    ended: Termination | None = None
    stopping: bool = False
    _done: threading.Event = field(default_factory=threading.Event)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return not self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def mark_done(self) -> None:
        self._done.set()


def start(launch: Launch, clock: Clock) -> ContainerProcess:
    """Start the container as the leader of a new session; a ``Supervisor`` watches it from then on."""
    if not launch.argv:
        raise StartError("no command specified: images are not run, so a container needs command or args")
    if (reason := missing_directory(launch.cwd)) is not None:
        raise StartError(PREFIX + reason)
    launch.log_path.parent.mkdir(parents=True, exist_ok=True)
    with launch.log_path.open("ab") as log:
        try:
            child = _spawn(launch, log.fileno())
        except OSError as err:
            if launch.cgroup:
                cgroups.remove(launch.cgroup)
            raise StartError(PREFIX + spawn_failure(launch.argv[0], err)) from err
    on_error = launch.log_path if launch.fallback_to_logs else None
    return ContainerProcess(child, clock.now(), launch.marker, launch.cgroup, on_error)


def _spawn(launch: Launch, log: int) -> Child:
    """A container behind its cgroup's shell is spawned with ``posix_spawn`` (the shell changes to its
    working directory), a third of ``subprocess``'s CPU in the agent; one without a wrapper needs the
    ``chdir`` that Python 3.11's ``posix_spawn`` lacks, so ``Popen``. The program was looked up before
    (``executable.py``), so what fails inside the shell is a rare race, not the usual error."""
    if launch.cgroup is None:
        return subprocess.Popen(
            list(launch.argv),
            env=dict(launch.env),
            cwd=launch.cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _disinherit_inherited()
    argv = cgroups.enter_argv(launch.cgroup, list(launch.argv), launch.cwd)
    actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, log, 1),
        (os.POSIX_SPAWN_DUP2, log, 2),
    ]
    # as Popen's restore_signals: Python ignores SIGPIPE and SIGXFSZ, and an ignored signal survives exec
    defaults = (signal.SIGPIPE, signal.SIGXFSZ)
    pid = os.posix_spawn(
        argv[0], argv, dict(launch.env), file_actions=actions, setsid=True, setsigdef=defaults
    )
    return Spawned(pid)


@functools.cache
def _disinherit_inherited() -> None:
    """``posix_spawn`` does not close descriptors as ``Popen(close_fds=True)`` does: those this process
    inherited open without close-on-exec (a pipe of the shell that started ``gangplane up`` that a pod
    would then hold open) become close-on-exec, once. Python opens its own with it (PEP 446)."""
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                if int(name) > 2 and os.get_inheritable(int(name)):
                    os.set_inheritable(int(name), False)


class Child(Protocol):
    """A started process as the supervisor waits for it: ``subprocess.Popen`` or ``Spawned``."""

    pid: int
    returncode: int | None

    def wait(self) -> int: ...


class Spawned:
    """A process from ``os.posix_spawn``, reaped as ``Popen.wait`` does it (-N: killed by signal N). Waited
    for by one thread, the supervisor's."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def wait(self) -> int:
        if self.returncode is None:
            try:
                _, status = os.waitpid(self.pid, 0)
                self.returncode = os.waitstatus_to_exitcode(status)
            except ChildProcessError:  # reaped elsewhere: its status is lost, as Popen reports it
                self.returncode = 0
        return self.returncode


# kubelet's ``MaxContainerTerminationMessageLogLines`` / ``MaxContainerTerminationMessageLogLength``
TERMINATION_LOG_LINES, TERMINATION_LOG_BYTES = 80, 2048


def log_tail(path: Path) -> str:
    """The end of a failed container's log as its termination message (``FallbackToLogsOnError``)."""
    try:
        with path.open("rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 64 * 1024))
            data = f.read()
    except OSError:
        return ""
    lines = b"".join(data.splitlines(keepends=True)[-TERMINATION_LOG_LINES:])
    return lines[-TERMINATION_LOG_BYTES:].decode(errors="replace")


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of the process group ``pgid``."""
    return sorted(pid for pid, group in proctable.live_groups().items() if group == pgid)
