"""Per-container cgroups, where this process may create them: every container runs in its own cgroup of the
memory controller, limited by ``resources.limits.memory`` when it has one (``memory.max`` on cgroup v2,
``memory.limit_in_bytes`` on v1) and, when the kernel's OOM killer ends it there, terminates as ``OOMKilled``
(exit 137) as on a node. The cgroup also lists every process of the container, however it daemonized or
rewrote its environment, so stopping it ends them all (the environment marker of ``sandbox.py`` does the
same where no cgroup can be made).

``detect`` tries v2 (``/sys/fs/cgroup`` with the memory controller) and then v1 (``/sys/fs/cgroup/memory``)
by creating a ``gangplane`` parent; where neither is writable (an unprivileged container, no root) limits
are not enforced and ``detect`` returns None (docs/nodes.md).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import signal
from dataclasses import dataclass
from pathlib import Path

V2_ROOT, V1_ROOT = Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/memory")


@dataclass(frozen=True, slots=True)
class MemoryCgroups:
    parent: Path
    version: int

    def create(self, name: str, limit_bytes: int | None) -> Path:
        """The container's cgroup (a new one: ``name`` is unique), limited to ``limit_bytes`` (None:
        unlimited, for tracking only: the kernel starts a new memory cgroup unlimited, so nothing is
        written, one file write less at each container start)."""
        path = self.parent / name
        path.mkdir(exist_ok=True)
        if limit_bytes is not None:
            limit_file = "memory.max" if self.version == 2 else "memory.limit_in_bytes"
            (path / limit_file).write_text(str(limit_bytes))
        if self.version == 2:
            with contextlib.suppress(OSError):
                (path / "memory.swap.max").write_text("0")  # as the kubelet's default: no swap
        return path


def members(path: Path) -> list[int]:
    try:
        return [int(line) for line in (path / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def oom_killed(path: Path) -> bool:
    """The kernel's OOM killer ended a process of this cgroup (``oom_kill`` in memory.events/oom_control)."""
    for name in ("memory.events", "memory.oom_control"):
        with contextlib.suppress(OSError):
            for line in (path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value or 0) > 0:
                    return True
    return False


def kill_all(path: Path) -> None:
    for pid in members(path):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.rmdir()


def enter_line(path: Path) -> str:
    """The shell line that moves the shell into the cgroup before it execs the container in place (same
    pid). A refused move (no delegation) leaves the limit unenforced rather than failing the container."""
    return f"{{ echo $$ > {shlex.quote(str(path / 'cgroup.procs'))}; }} 2>/dev/null || :"


def _try_v2(root: Path) -> MemoryCgroups | None:
    """cgroup v2: the memory controller available at ``root`` and enabled for a ``gangplane`` child whose
    own children (the containers) get ``memory.max``."""
    if "memory" not in (root / "cgroup.controllers").read_text().split():
        return None
    parent = root / "gangplane"
    parent.mkdir(exist_ok=True)
    if "memory" not in (root / "cgroup.subtree_control").read_text().split():
        (root / "cgroup.subtree_control").write_text("+memory")
    (parent / "cgroup.subtree_control").write_text("+memory")
    return MemoryCgroups(parent, 2)


def _try_v1(root: Path) -> MemoryCgroups | None:
    """cgroup v1: the memory hierarchy mounted at ``root``."""
    if not (root / "memory.limit_in_bytes").exists():
        return None
    parent = root / "gangplane"
    parent.mkdir(exist_ok=True)
    return MemoryCgroups(parent, 1)


def find(v2_root: Path = V2_ROOT, v1_root: Path = V1_ROOT) -> MemoryCgroups | None:
    """The first hierarchy that works: v2 at ``v2_root``, else v1 at ``v1_root``, else None. Only file
    I/O, so a test can point it at a directory tree shaped like cgroupfs."""
    for attempt, root in ((_try_v2, v2_root), (_try_v1, v1_root)):
        with contextlib.suppress(OSError, ValueError):
            found = attempt(root)
            if found is not None:
                return found
    return None


@functools.cache
def detect() -> MemoryCgroups | None:
    """``find`` on this machine's ``/sys/fs/cgroup``, tried once."""
    return find()
