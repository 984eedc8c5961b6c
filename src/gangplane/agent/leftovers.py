"""Processes a previous agent started and lost track of (the control plane was killed): stop them.

A crashed control plane leaves its pods' process groups running, unsupervised. When the restarted agent
recovers such a pod it reports those containers as ``ContainerStatusUnknown`` and the Job controller replaces
them, so the old processes must not keep running beside the new ones (a half-dead gang, or two rank 0s).
Each container ran as the leader of its own session (pid == process group id), recorded in its status as
``containerID: process://<pid>``; the group is killed only if that pid is still a process that started no
later than the container did, so a recycled pid is never hit.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable, Mapping
from typing import Any

import psutil

from gangplane.clock import parse_rfc3339

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


__all__ = ["kill_groups", "leftover_groups"]
