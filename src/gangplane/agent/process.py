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

import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gangplane.agent import cgroups, proctable, sandbox
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
    namespace: sandbox.Namespace | None = None  # its private mount namespace, if the machine allows one
    fallback_to_logs: bool = False  # ``terminationMessagePolicy: FallbackToLogsOnError``


class StartError(Exception):
    """The process could not be started (no such executable, no such working directory, ...)."""


@dataclass(slots=True)
class ContainerProcess:
    """A running (or ended) container instance; ``ended`` is set once, by its supervisor (``supervisor.py``)."""

    popen: subprocess.Popen[bytes]
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
    entry = cgroups.enter_line(launch.cgroup) if launch.cgroup else ""
    argv = sandbox.command(launch.argv, launch.namespace, entry)
    if launch.namespace is not None and launch.namespace.table:
        _write_table(launch.namespace)
    with launch.log_path.open("ab") as log:
        try:
            popen = subprocess.Popen(
                argv,
                env=dict(launch.env),
                cwd=launch.cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as err:
            if launch.cgroup:
                cgroups.remove(launch.cgroup)
            raise StartError(PREFIX + spawn_failure(launch.argv[0], err)) from err
    on_error = launch.log_path if launch.fallback_to_logs else None
    return ContainerProcess(popen, clock.now(), launch.marker, launch.cgroup, on_error)


def _write_table(ns: sandbox.Namespace) -> None:
    ns.table_path.parent.mkdir(parents=True, exist_ok=True)
    ns.table_path.write_text(ns.table)


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
