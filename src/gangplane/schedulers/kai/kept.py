"""KAI's jobs kept across cycles, with what the actions read of them as aggregates (kai.md *Performance*).

A session used to build every job from every PodGroup and pod each cycle and sum each queue's usage from
them. ``KeptJobs`` holds the jobs instead and is told which ones changed (``ClusterView.changes``; the
scheduler also names the jobs its own cycle touched). It keeps, updated by each job's own contribution when
it comes or goes:

- per queue, the raw request rows allocated, allocated non-preemptible and requested (integers, so adding
  and subtracting a job gives back exactly the sum a fresh count would);
- per queue, the priorities of jobs holding resources that are preemptible (the victims reclaim and preempt
  could look at), and the jobs with terminating pods (what allocate may pipeline onto);
- the waiting jobs in *lines*: one per (queue, gang shape, pending request, preemptibility), each in KAI's
  job order (``job_order``), so allocate can pass over every job of a shape that found no room at once.

Jobs without a topology request and with a gang threshold they can meet share lines; any other waiting job
is a line of its own.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from gangplane.schedulers.core.resources import ResourceIndex
from gangplane.schedulers.kai.gangs import above_minimum, satisfied
from gangplane.schedulers.kai.model import (
    KaiJob,
    KaiQueue,
    Member,
    Res,
    kai_units,
    needed_members,
    needed_members_count,
    shape_of,
)

Order = tuple[int, int, tuple[str, str], str]
Line = list[tuple[Order, str]]  # (job order, job key), ascending


def job_order(job: KaiJob) -> Order:
    """Higher priority, then groups below their minimum, then those exactly at it, then those above it (the
    ``elastic`` plugin's JobOrderFn, so elastic jobs grow in turn), then older, then key."""
    placed = job.placed_counts()
    state = 0 if not satisfied(job.tree, placed) else 2 if above_minimum(job.tree, placed) else 1
    return (-job.priority, state, job.order, job.key)


def _rows(members: Iterable[Member], width: int) -> npt.NDArray[np.int64]:
    total = np.zeros(width, dtype=np.int64)
    for m in members:
        total += m.pod.requests
    return total


class SharedLine(NamedTuple):
    """The key of a line jobs share: what makes them fail or fit alike."""

    queue: str
    preemptible: bool
    shape: object  # ``shape_of`` the pods each job needs: a try ``placement.place`` keeps as failed
    units: bytes


def line_of(job: KaiJob, units: Res) -> Hashable:
    """The line a waiting job joins: jobs of one line fail or fit alike in one allocate, and offer their
    queue the same request (``units``, its pending pods in KAI units)."""
    members = needed_members(job)
    if members is None or not members or job.topology:
        return ("own", job.key)
    minimum = needed_members_count(job, members)
    return SharedLine(job.queue, job.preemptible, shape_of(members, minimum), units.tobytes())


def line_shape(line: Hashable) -> object | None:
    """The gang shape of every job of a shared line; ``None`` for a line of its own."""
    return line.shape if isinstance(line, SharedLine) else None


def _units(index: ResourceIndex, row: npt.NDArray[np.int64]) -> Res:
    found = kai_units(index, row)
    found.flags.writeable = False
    return found


@dataclass(slots=True)
class _Entry:
    job: KaiJob
    usage: npt.NDArray[np.int64]  # 3 x width: allocated, allocated non-preemptible, requested
    holds: bool  # preemptible with a member holding resources
    releasing: bool
    line: Hashable | None
    order: Order


class KeptJobs:
    """The jobs of the queues that exist (leaf or not), by key; see the module docstring."""

    def __init__(self, index: ResourceIndex, queues: Sequence[KaiQueue]) -> None:
        self.index = index
        self.queues = tuple(queues)
        names = {q.name for q in queues}
        self.leaves = names - {q.parent for q in queues if q.parent in names}
        self.jobs: dict[str, KaiJob] = {}
        self.usage = {q.name: np.zeros((3, len(index)), dtype=np.int64) for q in queues}
        self.holding: dict[str, dict[int, int]] = {}  # queue -> priority -> preemptible jobs holding
        self.releasing: set[str] = set()
        self.lines: dict[Hashable, Line] = {}
        self.line_units: dict[Hashable, Res] = {}  # each line's pending request in KAI units
        self._entries: dict[str, _Entry] = {}
        # what the last lines allocate left: (the snapshot's nodes, their free room, the gang shapes that
        # found no room) — ``lines._still_failing``
        self.failed: tuple[object, npt.NDArray[np.int64], dict[object, Any]] | None = None
        self._units: dict[str, tuple[Res, Res, Res]] = {}

    def add(self, job: KaiJob) -> None:
        self.remove(job.key)
        width = len(self.index)
        running = [m for m in job.members if m.running]
        pending = job.pending()
        alloc, asked = _rows(running, width), _rows(pending, width)
        usage = np.stack([alloc, np.zeros(width, np.int64) if job.preemptible else alloc, alloc + asked])
        entry = _Entry(job, usage, job.preemptible and bool(running), any(m.releasing for m in job.members),
                       None, job_order(job))  # fmt: skip
        if pending and job.queue in self.leaves:
            # summed pod by pod as the session's ``request`` sums them, so the comparator sees the same
            units = sum((kai_units(self.index, m.pod.requests) for m in pending), start=np.zeros(3))
            entry.line = line_of(job, units)
            insort(self.lines.setdefault(entry.line, []), (entry.order, job.key))
            self.line_units[entry.line] = units
        self._count(entry, 1)
        self._entries[job.key] = entry
        self.jobs[job.key] = job

    def remove(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        del self.jobs[key]
        self._count(entry, -1)
        if entry.line is not None:
            line = self.lines[entry.line]
            del line[bisect_left(line, (entry.order, key))]
            if not line:
                del self.lines[entry.line], self.line_units[entry.line]

    def _count(self, entry: _Entry, sign: int) -> None:
        job = entry.job
        self.usage[job.queue] += sign * entry.usage
        self._units.pop(job.queue, None)
        if entry.holds:
            held = self.holding.setdefault(job.queue, {})
            held[job.priority] = held.get(job.priority, 0) + sign
            if not held[job.priority]:
                del held[job.priority]
        if entry.releasing:
            (self.releasing.add if sign > 0 else self.releasing.discard)(job.key)

    def queue_usage(self) -> dict[str, tuple[Res, Res, Res]]:
        """Per queue: (allocated, allocated non-preemptible, requested) in KAI units (each converted again
        only after its queue's sums moved; the arrays are read-only)."""
        for q, u in self.usage.items():
            if q not in self._units:
                self._units[q] = (
                    _units(self.index, u[0]),
                    _units(self.index, u[1]),
                    _units(self.index, u[2]),
                )
        return dict(self._units)

    def waiting_priority(self) -> dict[str, int]:
        """Per queue, the highest priority of its waiting jobs."""
        top: dict[str, int] = {}
        for line in self.lines.values():
            queue, priority = self.jobs[line[0][1]].queue, -line[0][0][0]
            top[queue] = max(top.get(queue, priority), priority)
        return top


__all__ = ["KeptJobs", "Line", "Order", "SharedLine", "job_order", "line_of", "line_shape"]
