"""A Volcano session kept across passes: the jobs as parsed, their queue demands summed per queue, and the
indexes the actions read instead of visiting every job, all brought level by what changed since the last
pass (``ClusterView.changes``: the groups whose PodGroup or pods were written).

Upstream's scheduler cache does the same (``pkg/scheduler/cache``: jobs updated by informer events, not
re-listed). Here each pass: the jobs the last session changed (a phase, a task status) are put back as
parsed; each changed group is parsed again (or dropped) and its demand replaces the old one in its queue's
sums (the vectors hold whole units, so the sums are exact in any order); the indexes follow. A context
change (resource index, HyperNode tiers, PriorityClasses, the set of queues) parses everything again. Used
when no "why pending" text is built (``VolcanoConfig.explain`` off): then a job's status depends only on the
job, so a job nobody touched keeps the status it had. Pure: no I/O, no clock.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gangplane.api.scheduling import volcano as vc
from gangplane.schedulers.base import StatusWrite
from gangplane.schedulers.core.classes import PriorityClasses
from gangplane.schedulers.core.objects import NodeInfo
from gangplane.schedulers.core.resources import ResourceIndex
from gangplane.schedulers.volcano.book import QueueDemand
from gangplane.schedulers.volcano.filling import LastFilling
from gangplane.schedulers.volcano.hypernodes import HyperNodeTree
from gangplane.schedulers.volcano.jobs import HOLDING, Job, TaskStatus
from gangplane.schedulers.volcano.memo import Settled
from gangplane.schedulers.volcano.proportion import QueuePolicy
from gangplane.schedulers.volcano.vec import Vec

PENDING_PHASES = frozenset({"", vc.PodGroupPhase.PENDING})
EVICTABLE = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})
OrderKey = tuple[int, int, float, tuple[str, str]]
Line = list[tuple[OrderKey, str]]  # (job order, job key), sorted


@dataclass(slots=True)
class _Parsed:
    """A job as parsed: what a session resets it to, and the demand it adds to its queue."""

    phase: str
    statuses: tuple[TaskStatus, ...]
    demand: Vec  # its ``QueueDemand`` as rows: allocated, request, inqueue, elastic


def static_order(job: Job) -> OrderKey:
    """``Session.job_order`` of a job holding nothing (its DRF share is 0, nothing else moves)."""
    return (-job.priority, int(job.ready()), 0.0, job.order)


def enqueue_shape(job: Job) -> bytes | None:
    return None if job.min_resources is None else job.min_resources.tobytes()


def _move_in_line(per_shape: dict[Any, Line], shape: object, entry: tuple[OrderKey, str], add: bool) -> bool:
    """Put ``entry`` into (or take it out of) its shape's line, kept in order; whether the line came or went."""
    line = per_shape.setdefault(shape, [])
    if add:
        insort(line, entry)
        return len(line) == 1
    del line[bisect_left(line, entry)]
    if line:
        return False
    del per_shape[shape]
    return True


class LeastMinimum:
    """The least ``minResources`` per dimension over the enqueue lines' shapes, kept as lines come and go:
    per dimension, how many lines hold each value (few distinct ones), so a pass reads the least without
    stacking every shape."""

    def __init__(self) -> None:
        self.values: list[Counter[int]] = []
        self.lines = 0

    def move(self, shape: bytes, add: bool) -> None:
        row = np.frombuffer(shape, dtype=np.int64).tolist()
        if not self.lines:
            self.values = [Counter() for _ in row]
        for counts, value in zip(self.values, row, strict=True):
            counts[value] += 1 if add else -1
            if not counts[value]:
                del counts[value]
        self.lines += 1 if add else -1

    def get(self) -> Vec | None:
        """The least ``minResources`` (per dimension) of the lined Pending jobs that have one, or ``None``."""
        if not self.lines:
            return None
        least: Vec = np.array([min(counts) for counts in self.values], dtype=np.float64)
        return least


@dataclass(slots=True)
class Indexes:
    """Which jobs each action may touch, as parsed. A session only moves tasks away from Pending and
    evictable statuses, so each set is a superset of what the action finds when it runs."""

    pending_phase: set[str] = field(default_factory=set)  # Pending PodGroups (enqueue)
    pending_holding: set[str] = field(default_factory=set)  # ... of those holding resources (order moves)
    with_work: set[str] = field(default_factory=set)  # admitted, with pending tasks needing resources
    evictable: set[str] = field(default_factory=set)  # holding Bound/Running tasks (victims)
    lowest: dict[str, Counter[int]] = field(default_factory=dict)  # per queue, their priorities
    releasing: set[str] = field(default_factory=set)  # with terminating tasks
    best_effort: set[str] = field(default_factory=set)  # with pending best-effort tasks (backfill)
    lines: dict[str, dict[bytes | None, Line]] = field(default_factory=dict)  # enqueue, per queue and shape
    least: LeastMinimum = field(default_factory=LeastMinimum)  # over the shapes of ``lines``
    work_lines: dict[str, dict[object, Line]] = field(default_factory=dict)  # allocate, per queue and shape
    work_loose: set[str] = field(default_factory=set)  # with work, not in ``work_lines`` (holding, invalid)

    marks: dict[str, _Marks] = field(default_factory=dict)  # per job key, what ``add`` found
    tables: tuple[set[str], ...] = field(init=False)  # the sets above in ``_Marks.flags`` order

    def __post_init__(self) -> None:
        self.tables = (self.pending_phase, self.pending_holding, self.with_work, self.evictable,
                       self.releasing, self.best_effort)  # fmt: skip

    def add(self, job: Job) -> None:
        marks = self.marks[job.key] = _marks(job)
        self._move(marks, True)

    def remove(self, job: Job) -> None:
        """Take the job out as ``add`` put it in (its marks are kept: nothing is derived again)."""
        self._move(self.marks.pop(job.key), False)

    def _move(self, marks: _Marks, add: bool) -> None:
        key, queue = marks.key, marks.queue
        for table, member in zip(self.tables, marks.flags, strict=True):
            if member:
                (table.add if add else table.discard)(key)
        if marks.lowest is not None:
            counts = self.lowest.setdefault(queue, Counter())
            counts[marks.lowest] += 1 if add else -1
            if not counts[marks.lowest]:
                del counts[marks.lowest]
        if marks.enqueue_line is not None:
            shape = marks.enqueue_line[0]
            moved = _move_in_line(self.lines.setdefault(queue, {}), shape, marks.enqueue_line[1], add)
            if moved and shape is not None:
                self.least.move(shape, add)
        if marks.work_line is not None:
            _move_in_line(self.work_lines.setdefault(queue, {}), *marks.work_line, add)
        elif marks.flags[2]:
            (self.work_loose.add if add else self.work_loose.discard)(key)


@dataclass(frozen=True, slots=True)
class _Marks:
    """Where a job sits in the indexes: the tables it is in (``Indexes`` order: pending phase, pending and
    holding, with work, evictable, releasing, best effort), the priority it adds to its queue's lowest
    holders, and its enqueue and allocate line entries."""

    key: str
    queue: str
    flags: tuple[bool, bool, bool, bool, bool, bool]
    lowest: int | None
    enqueue_line: tuple[bytes | None, tuple[OrderKey, str]] | None
    work_line: tuple[object, tuple[OrderKey, str]] | None


def _marks(job: Job) -> _Marks:
    pending = job.pending()
    statuses = {t.status for t in job.tasks}
    holding = not statuses.isdisjoint(HOLDING)
    evictable = not statuses.isdisjoint(EVICTABLE)
    pending_phase = job.phase in PENDING_PHASES
    work = not pending_phase and any(not t.best_effort for t in pending)
    releasing = TaskStatus.RELEASING in statuses
    flags = (pending_phase, pending_phase and holding, work, evictable, releasing,
             any(t.best_effort for t in pending))  # fmt: skip
    entry = (static_order(job), job.key) if not holding else None
    enqueue_line = (enqueue_shape(job), entry) if pending_phase and entry is not None else None
    lined = work and entry is not None and job.valid_reason() is None
    work_line = (job.shape(), entry) if lined and entry is not None else None
    return _Marks(job.key, job.queue, flags, job.priority if evictable else None, enqueue_line, work_line)


_ROWS_HELD = 4096  # distinct demand inputs held before they are forgotten (a trace has few shapes)


def demand_inputs(job: Job) -> tuple[object, ...]:
    """What a job's queue demand (``queues.job_demand``) reads besides the resource index: its phase, gang
    minimum and ``minResources``, and each task's status, best-effort mark and requests (the held and
    pending sums, and the ready count the inqueue part compares with the minimum). Jobs with equal inputs
    have equal demands, so the rows are computed once per inputs (a trace's jobs come in few shapes)."""
    tasks = tuple((t.status, t.best_effort, t.pod.requests.tobytes()) for t in job.tasks)
    return (job.phase, job.min_member, enqueue_shape(job), tasks)


@dataclass(frozen=True, slots=True)
class Inputs:
    """What a pass read besides the jobs and the nodes' total (``reopen._read``), with what it was read
    from: the resource index, the nodes, and the HyperNode, Queue and PriorityClass objects."""

    index: ResourceIndex
    nodes: Sequence[NodeInfo]
    sources: tuple[tuple[Mapping[str, Any], ...], ...]
    tree: HyperNodeTree
    queue_objs: Mapping[str, Mapping[str, Any]]
    policies: list[QueuePolicy]
    broken_queues: Mapping[str, str]
    classes: PriorityClasses
    context: tuple[object, ...]


@dataclass(frozen=True, slots=True)
class QueueSaid:
    """A Queue's last status answer (``status.queue_writes_of``): the write or ``None``, what it was computed
    from (resourceVersion, counts, allocation), and the Queue object and allocation vector it was read from
    (held, so no id is reused: while both are the same objects and the counts did not move, it stands)."""

    inputs: tuple[object, ...]
    write: StatusWrite | None
    obj: Mapping[str, Any]
    allocated: Vec | None


class Kept:
    """The kept jobs with their parsed state, demands, statuses' phases, and indexes."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.context: tuple[object, ...] | None = None
        self.jobs: dict[str, Job] = {}
        self.keys: list[str] = []  # the jobs' keys in order (a session walks jobs in key order)
        self.left_out: dict[str, str] = {}
        self.parsed: dict[str, _Parsed] = {}
        self.sums: dict[
            str, tuple[Vec, int, QueueDemand]
        ] = {}  # per queue: demand sums as rows, jobs, as read
        self.index = Indexes()
        self.phases: dict[str, str] = {}  # job key -> phase for the queue counts, as last closed
        self.counts: Counter[tuple[str, str]] = Counter()  # (queue, phase) -> jobs
        self.settled: dict[str, Settled] = {}
        self.visit: set[str] = set()  # jobs whose status the next close must look at
        self.reread: set[str] = set()  # groups the last pass wrote: parsed again whatever changes say
        self.queues_said: dict[str, QueueSaid] = {}  # ``status.queue_writes_of``
        self.recounted: set[str] = set()  # queues whose phase counts moved since the last close
        self.filling = LastFilling()  # the proportion plugin's last water-filling (``book``)
        self.total: tuple[tuple[object, bytes], Vec] | None = None  # Ready nodes' allocatable, by its inputs
        self.inputs: Inputs | None = None  # the last pass's tree, queues and classes (``reopen._read``)
        self.orders: dict[str, OrderKey] = {}  # job key -> its order as parsed, for the total in ``total``
        self.rows: dict[tuple[object, ...], Vec] = {}  # ``demand_inputs`` -> demand rows, in this context

    def table(self) -> Mapping[str, Job]:
        return _Table(self.jobs, self.keys)

    def reset(self, keys: Iterable[str]) -> None:
        """Put the jobs a session changed back as parsed."""
        for key in keys:
            job, parsed = self.jobs.get(key), self.parsed.get(key)
            if job is None or parsed is None:
                continue
            job.phase = parsed.phase
            for task, status in zip(job.tasks, parsed.statuses, strict=True):
                job.set_status(task, status)

    def drop(self, key: str) -> None:
        self.left_out.pop(key, None)
        job = self.jobs.pop(key, None)
        if job is None:
            return
        parsed = self.parsed.pop(key)
        del self.keys[bisect_left(self.keys, key)]
        self.index.remove(job)
        self._add_demand(job.queue, parsed.demand, -1)
        self._count(key, job.queue, None)
        self.settled.pop(key, None)
        self.orders.pop(key, None)

    def put(self, job: Job, demand: Callable[[Job], QueueDemand]) -> None:
        """Keep ``job`` as parsed (in place of any job of its key); ``demand``: its queue demand, a function
        of what ``demand_inputs`` reads under the kept context (its resource index gives the width)."""
        self.drop(job.key)
        inputs = demand_inputs(job)
        rows = self.rows.get(inputs)
        if rows is None:
            found = demand(job)
            rows = np.array((found.allocated, found.request, found.inqueue, found.elastic))
            if len(self.rows) >= _ROWS_HELD:
                self.rows = {}
            self.rows[inputs] = rows
        parsed = _Parsed(job.phase, tuple(t.status for t in job.tasks), rows)
        self.jobs[job.key], self.parsed[job.key] = job, parsed
        insort(self.keys, job.key)
        self.index.add(job)
        self._add_demand(job.queue, parsed.demand, 1)
        self.visit.add(job.key)

    def order(self, job: Job, compute: Callable[[Job], OrderKey]) -> OrderKey:
        """``compute(job)`` for a job as parsed, kept until the job is parsed again or the total changes
        (its DRF share reads the total; ``forget_orders``)."""
        found = self.orders.get(job.key)
        if found is None:
            found = self.orders[job.key] = compute(job)
        return found

    def forget_orders(self) -> None:
        self.orders = {}

    def note_phase(self, key: str, queue: str, phase: str) -> None:
        """Count the job under ``phase`` as last closed; a phase noted already leaves the counts as they are
        (most jobs a close visits keep theirs)."""
        if self.phases.get(key) != phase:
            self._count(key, queue, phase)

    def demands(self) -> dict[str, QueueDemand]:
        """Per queue with jobs, the sum of its jobs' demands. Not copies: a sum is replaced, never changed in
        place, when a job comes or goes (and the book replaces what it moves too)."""
        return {q: read for q, (_, n, read) in self.sums.items() if n}

    def _add_demand(self, queue: str, demand: Vec, sign: int) -> None:
        """Add (``sign`` 1) or take away (-1) a job's demand rows: one vector operation, not one per part
        (``a - b`` is ``a + (-b)`` to the bit, as the sums were formed before)."""
        found = self.sums.get(queue)
        base = np.zeros_like(demand) if found is None else found[0]
        sums = base + demand if sign > 0 else base - demand
        count = (0 if found is None else found[1]) + sign
        if count:
            self.sums[queue] = (sums, count, QueueDemand(sums[0], sums[1], sums[2], sums[3]))
        else:
            del self.sums[queue]

    def _count(self, key: str, queue: str, phase: str | None) -> None:
        old = self.phases.pop(key, None)
        if old is not None:
            self.counts[(queue, old)] -= 1
        if phase is not None:
            self.phases[key] = phase
            self.counts[(queue, phase)] += 1
        if old != phase:
            self.recounted.add(queue)


class _Table(Mapping[str, Job]):
    """The kept jobs as a session reads them: by key, and walked in key order as a fresh session's are."""

    def __init__(self, jobs: dict[str, Job], keys: list[str]) -> None:
        self._jobs, self._keys = jobs, keys

    def __getitem__(self, key: str) -> Job:
        return self._jobs[key]

    def __contains__(self, key: object) -> bool:
        return key in self._jobs

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


def lowest_holders(index: Indexes) -> dict[str, int]:
    """Per queue, the lowest priority of a job holding an evictable task, as parsed."""
    return {queue: min(counts) for queue, counts in index.lowest.items() if counts}


__all__ = [
    "EVICTABLE",
    "PENDING_PHASES",
    "Indexes",
    "Inputs",
    "Kept",
    "LeastMinimum",
    "QueueSaid",
    "enqueue_shape",
    "lowest_holders",
    "static_order",
]
