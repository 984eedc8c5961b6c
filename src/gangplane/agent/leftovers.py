"""Processes a previous agent started and lost track of (the control plane was killed): stop them.

A crashed control plane leaves its pods' process groups running, unsupervised. When the restarted agent
recovers such a pod it reports those containers as ``ContainerStatusUnknown`` and the Job controller replaces
them, so the old processes must not keep running beside the new ones (a half-dead gang, or two rank 0s).
Each container ran as the leader of its own session (pid == process group id), recorded in its status as
``containerID: process://<pid>``; the group is killed only if that pid is still a process that started no
later than the container did, so a recycled pid is never hit.

Every container also carries ``GANGPLANE_CLUSTER=<id of the state directory>``: ``reap`` finds whatever a
control plane of that state directory left running - a process it started but had not yet recorded, or one
that outlived a ``down`` whose server had to be killed - and kills it with its group. ``up`` reaps before
its agents start, ``down`` after the server has exited.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import signal
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import psutil

from gangplane.agent import proctable
from gangplane.clock import parse_rfc3339

CLUSTER_ENV = "GANGPLANE_CLUSTER"

_PREFIX = "process://"
_SLACK_SECONDS = 2.0  # startedAt has second precision; the process is created just before it is recorded


def leftover_groups(status: Mapping[str, Any]) -> list[int]:
    """Process group ids of the containers this status says were running."""
    seen = [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
    return [pid for s in seen if (pid := _running_pid(s)) is not None]


def _running_pid(container: Mapping[str, Any]) -> int | None:
    running = (container.get("state") or {}).get("running")
    cid = str(container.get("containerID") or "")
    if running is None or not cid.startswith(_PREFIX) or not cid[len(_PREFIX) :].isdigit():
        return None
    pid = int(cid[len(_PREFIX) :])
    started = running.get("startedAt")
    return pid if _same_process(pid, parse_rfc3339(started) if started else None) else None


def _same_process(pid: int, started: float | None) -> bool:
    try:
        created = psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
    return started is None or created <= started + _SLACK_SECONDS


def kill_groups(groups: Iterable[int]) -> None:
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)


@functools.lru_cache(maxsize=16)  # asked at every container start; resolving the path costs a few syscalls
def cluster_id(state_root: Path) -> str:
    """The value of ``CLUSTER_ENV`` for the containers of the control plane over ``state_root``."""
    return hashlib.sha256(str(Path(state_root).resolve()).encode()).hexdigest()[:16]


def reap(state_root: Path, timeout: float = 10.0, root: Path = proctable.PROC) -> int:
    """SIGKILL every live process (and its process group) carrying this state directory's ``CLUSTER_ENV``;
    wait up to ``timeout`` seconds for them to vanish. Returns how many were found."""
    value = cluster_id(state_root)
    own = {os.getpid(), os.getpgrp()}  # a `down` run from inside a pod does not kill itself

    def marked() -> set[int]:
        return set(proctable.carrying(CLUSTER_ENV, [value], root).get(value, ())) - own

    found = marked()
    left, deadline = found, time.monotonic() + timeout
    while left:
        groups = proctable.live_groups(root)
        for pid in left & groups.keys():
            if groups[pid] not in own:
                proctable.signal_group(groups[pid], signal.SIGKILL)
        proctable.signal_all(left, signal.SIGKILL)
        if time.monotonic() >= deadline:
            break
        time.sleep(0.05)
        left = marked()
    return len(found)


__all__ = ["CLUSTER_ENV", "cluster_id", "kill_groups", "leftover_groups", "reap"]
