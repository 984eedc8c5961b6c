"""What a pod's processes use right now, read from the operating system; the only place the metrics API
touches processes.

The node agents run each container as the leader of its own process group and record it in the pod's status
as ``containerID: process://<pid>`` (agent/pod_status.py). A container's usage is that process and its
descendants: CPU as cores over a short sampling window (as metrics-server reports a rate, not a total), memory
as resident set size. A pid that no longer runs, or that started after the container did (a recycled pid),
counts as nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import psutil

from gangplane.clock import parse_rfc3339

_PREFIX = "process://"
_SLACK = 1.0  # seconds: a container's start is recorded after its process is created


@dataclass(frozen=True, slots=True)
class Usage:
    cpu_cores: float = 0.0
    memory_bytes: int = 0


def container_pids(pod: Mapping[str, Any]) -> dict[str, int]:
    """Container name -> the pid of its process group leader, for running containers with a recorded pid."""
    found = {}
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        cid = str(status.get("containerID") or "")
        started = ((status.get("state") or {}).get("running") or {}).get("startedAt")
        if cid.startswith(_PREFIX) and cid[len(_PREFIX) :].isdigit() and started:
            pid = int(cid[len(_PREFIX) :])
            if _same_process(pid, parse_rfc3339(started)):
                found[str(status.get("name"))] = pid
    return found


def _same_process(pid: int, started: float) -> bool:
    try:
        return psutil.Process(pid).create_time() <= started + _SLACK
    except (psutil.Error, OSError):
        return False


def _tree(pid: int) -> list[psutil.Process]:
    try:
        leader = psutil.Process(pid)
        return [leader, *leader.children(recursive=True)]
    except (psutil.Error, OSError):
        return []


def _cpu_seconds(procs: Iterable[psutil.Process]) -> dict[int, float]:
    seconds = {}
    for proc in procs:
        try:
            times = proc.cpu_times()
            seconds[proc.pid] = times.user + times.system
        except (psutil.Error, OSError):
            continue
    return seconds


def _memory(procs: Iterable[psutil.Process]) -> int:
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except (psutil.Error, OSError):
            continue
    return total


def sample(pids: Mapping[str, int], window: float = 0.2) -> dict[str, Usage]:
    """Usage of each named process tree: CPU over ``window`` seconds (processes present at both ends)."""
    trees = {name: _tree(pid) for name, pid in pids.items()}
    before = {name: _cpu_seconds(procs) for name, procs in trees.items()}
    started = time.monotonic()
    time.sleep(window)
    elapsed = max(time.monotonic() - started, 1e-6)
    usage = {}
    for name, procs in trees.items():
        after = _cpu_seconds(procs)
        used = sum(max(after[p] - before[name][p], 0.0) for p in after if p in before[name])
        usage[name] = Usage(used / elapsed, _memory(procs))
    return usage


__all__ = ["Usage", "container_pids", "sample"]
