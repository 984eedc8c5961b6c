"""One pass over ``/proc`` answers for many containers at once.

Stopping or reaping hundreds of containers must not scan ``/proc`` once per container (each scan reads every
process): the supervisor asks these functions once per tick for everything it waits on. A process counts as
live unless it is a zombie (it has exited; only its parent's ``wait`` is missing).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Collection, Iterator
from pathlib import Path

PROC = Path("/proc")


def _pids(root: Path) -> Iterator[str]:
    try:
        names = os.listdir(root)
    except OSError:
        return
    yield from (name for name in names if name.isdigit())


def live_groups(root: Path = PROC) -> dict[int, int]:
    """pid -> process group id of every live (non-zombie) process."""
    table: dict[int, int] = {}
    for name in _pids(root):
        try:
            data = (root / name / "stat").read_bytes()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()  # the command name may hold spaces and parentheses
        if len(fields) > 2 and fields[0] not in (b"Z", b"X"):
            table[int(name)] = int(fields[2])
    return table


def carrying(variable: str, values: Collection[str], root: Path = PROC) -> dict[str, list[int]]:
    """value -> live pids whose environment sets ``variable=value``, for each of ``values`` (zombies have no
    environment, so only live processes are found)."""
    wanted = {f"{variable}={v}".encode(): v for v in values}
    found: dict[str, list[int]] = {}
    if not wanted:
        return found
    for name in _pids(root):
        try:
            environ = (root / name / "environ").read_bytes()
        except OSError:
            continue
        for entry in environ.split(b"\0"):
            if entry in wanted:
                found.setdefault(wanted[entry], []).append(int(name))
    return found


def signal_all(pids: Collection[int], signum: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def signal_group(pgid: int, signum: signal.Signals) -> bool:
    """Signal every process of the group; False when the group no longer exists."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:  # only zombies left (or a reused id we do not own)
        return False
    return True


def group_exists(pgid: int) -> bool:
    """Some process (a zombie included) is still in the group: signal 0 checks without sending anything."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process reused the id: not ours, but the id is taken
        return True
    return True


__all__ = ["carrying", "group_exists", "live_groups", "signal_all", "signal_group"]
