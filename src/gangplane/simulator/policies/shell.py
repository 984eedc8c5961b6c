"""The store-shaped shell shared by the policies that run a whole embedded scheduler (Volcano, KAI).

Such a scheduler reads PodGroups, Queues and pods as wire dicts every cycle and answers with bindings,
evictions and status writes (``schedulers/base.py``). This shell keeps those objects as a store would: one
PodGroup and its member pods per job, the queues, every status write applied back; it runs the scheduler
loop's own pass (``schedulers.loop.run_pass``: views, checkpoints, binding validation) over the policy's
snapshot (running jobs counted, bound pods with ``nodeName``), rolls the snapshot back and then binds the
returned bindings as the policy's jobs. An eviction stops the victim's whole
rigid job, which returns as a new PodGroup with fresh pods. While a cycle moved some PodGroup to a new phase
other than Running, or evicted victims, the shell asks for another cycle one schedule period later, so
multi-cycle progress (enqueue then allocate; evict then bind the preemptor) needs no outside event. A gang
moved to Running leaves no such progress: it was placed whole within the pass, and the next pass would meet
the state that pass ended with (its placements made, the same gangs failing on the same free room, no
victim found), so it would decide nothing; such passes were about 30 % of a Volcano replay of Philly.

A pass costs what changed, as a store's watch would make it: the shell keeps its jobs in id order as they
come and go (no sort per pass), builds an object list only when the scheduler reads it, and hands the
scheduler ``Changes``: the groups whose PodGroup or pods it wrote since the scheduler's last pass (its
own status writes included), with keyed reads, so a scheduler that keeps its own state reads only those.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain
from typing import Any, Protocol, TypeVar, overload

from gangplane.schedulers.base import Changes, CycleResult, Scheduler
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.loop import run_pass
from gangplane.simulator.cluster import ClusterSpec
from gangplane.simulator.explain import ExplainLog, note_pass
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.placement import NAMESPACE, GangPlacer
from gangplane.simulator.policies.base import Decision, PolicyOptions, Preempt, Start
from gangplane.store.base import ResourceType
from gangplane.store.catalog import PODS

Obj = dict[str, Any]
_T = TypeVar("_T")
SCHEDULE_PERIOD = 1.0
RUNNING = "Running"


class Integration(Protocol):
    """What differs between integrations: the scheduler, its object types and how a job looks as objects."""

    group_type: ResourceType
    queue_type: ResourceType

    @property
    def scheduler(self) -> Scheduler: ...

    def static_objects(self) -> Mapping[ResourceType, list[Obj]]:
        """Objects that never change (priority classes), by type."""
        ...

    def queue_objects(self) -> dict[str, Obj]: ...

    def pod_group(self, job: JobSpec) -> Obj: ...

    def pod(self, job: JobSpec, member: int, node: str = "") -> Obj: ...


class GroupShell:
    """A ``Policy`` over one ``Integration``."""

    name = "shell"

    def __init__(self, cluster: ClusterSpec, options: PolicyOptions, integration: Integration) -> None:
        self.placer = GangPlacer(cluster)
        self.integration = integration
        self.period = options.cycle_interval or SCHEDULE_PERIOD
        self._revision = 0
        self._queues = {name: self._stamp(q) for name, q in integration.queue_objects().items()}
        self._groups: dict[int, Obj] = {}
        self._pods: dict[int, list[Obj]] = {}
        self._sorted: dict[int, tuple[list[Obj], list[Obj]]] = {}  # ``_members``: a pod list, sorted by name
        self._jobs: dict[int, JobSpec] = {}
        self._pending: dict[int, tuple[PodInfo, ...]] = {}  # waiting jobs' members as the core sees them
        self._ids: list[int] = []  # job ids held, ascending (kept by bisection, never sorted whole)
        self._waiting: list[int] = []  # waiting job ids, ascending
        self._changed: set[int] = set()  # jobs whose PodGroup or pods were written since the last pass
        self._moved = False
        self.explain_log = None if options.explain is None else ExplainLog(options.explain)

    def submit(self, job: JobSpec, now: float) -> None:
        if job.id not in self._jobs:
            insort(self._ids, job.id)
        self._jobs[job.id] = job
        self._groups[job.id] = self._stamp(self.integration.pod_group(job))
        self._pods[job.id] = [self._stamp(self.integration.pod(job, i)) for i in range(job.members)]
        if job.id not in self._pending:
            insort(self._waiting, job.id)
        self._pending[job.id] = self.placer.pods(job)
        self._changed.add(job.id)

    def release(self, job_id: int, now: float) -> None:
        self.placer.release(job_id)
        for table in (self._groups, self._pods, self._jobs):
            del table[job_id]
        self._sorted.pop(job_id, None)
        _remove(self._ids, job_id)
        if self._pending.pop(job_id, None) is not None:
            _remove(self._waiting, job_id)
        self._changed.add(job_id)

    def schedule(self, now: float) -> Sequence[Decision]:
        if not self._waiting:
            self._moved = False
            return []
        pending, objects = self._view()
        changes, self._changed = self._changes(self._changed), set()
        result = one_pass(self.placer, self.integration.scheduler, now, pending, objects, changes)
        note_pass(self.explain_log, now, result.pending)
        decisions: list[Decision] = []
        for job_id in sorted({job_of(e.pod_key) for e in result.evictions}):
            self._evict(job_id, now, decisions)
        self._bind(result, decisions)
        self._moved = self._apply_status(result) or bool(result.evictions)  # victims gone: try again
        return decisions

    def next_cycle(self, now: float) -> float | None:
        return now + self.period if self._moved and self._waiting else None

    def _view(self) -> tuple[Sequence[PodInfo], Objects]:
        return _PendingPods(self._pending, self._waiting), _LazyLists(self)

    def lists(self, rt: ResourceType) -> Sequence[Mapping[str, Any]]:
        """Every object of one type the scheduler watches, in job id order (built when read)."""
        if rt == PODS:
            return list(chain.from_iterable(map(self._pods.__getitem__, self._ids)))
        if rt == self.integration.group_type:
            return list(map(self._groups.__getitem__, self._ids))
        if rt == self.integration.queue_type:
            return [self._queues[name] for name in sorted(self._queues)]
        return self.integration.static_objects().get(rt, [])

    def _changes(self, changed: set[int]) -> Changes:
        groups = frozenset(f"{NAMESPACE}/j{i}" for i in changed)
        return Changes(groups, self._members, self._get, self._pending_pod)

    def _pending_pod(self, pod_key: str) -> PodInfo | None:
        """The waiting pod of that key as the pass's pending pods hold it (``_view``), else ``None``."""
        return next((p for p in self._pending.get(job_of(pod_key), ()) if p.key == pod_key), None)

    def _members(self, group: str) -> Sequence[Mapping[str, Any]]:
        """A job's pods in key order, as the contract says (sorted once per pod list: a list is replaced
        whole, never changed in place, and is held with its sorted copy, so its identity says it stands)."""
        namespace, _, name = group.partition("/")
        if namespace != NAMESPACE or name[:1] != "j":
            return []
        job_id = int(name[1:])
        pods = self._pods.get(job_id)
        if pods is None:
            return []
        known = self._sorted.get(job_id)
        if known is None or known[0] is not pods:
            known = self._sorted[job_id] = (pods, sorted(pods, key=lambda pod: pod["metadata"]["name"]))
        return list(known[1])

    def _get(self, rt: ResourceType, key: str) -> Mapping[str, Any] | None:
        namespace, _, name = key.rpartition("/")  # a cluster-scoped key is its name alone
        if rt == self.integration.queue_type:
            return self._queues.get(name)
        if rt == self.integration.group_type and namespace == NAMESPACE and name[:1] == "j":
            return self._groups.get(int(name[1:]))
        return None

    def _bind(self, result: CycleResult, decisions: list[Decision]) -> None:
        bound: dict[int, dict[str, str]] = {}
        for binding in result.bindings:
            bound.setdefault(job_of(binding.pod_key), {})[binding.pod_key] = binding.node
        for job_id, nodes in sorted(bound.items()):
            job = self._jobs[job_id]
            if len(nodes) != job.members:
                raise RuntimeError(
                    f"{self.name} bound {len(nodes)} of {job.members} members of gang j{job_id}"
                )
            placed = self.placer.bind(job, nodes)
            self._pods[job_id] = [
                self._stamp(self.integration.pod(job, i, node)) for i, node in enumerate(placed)
            ]
            _remove(self._waiting, job_id)
            del self._pending[job_id]
            self._changed.add(job_id)
            decisions.append(Start(job_id, placed))

    def _evict(self, job_id: int, now: float, decisions: list[Decision]) -> None:
        job = self._jobs[job_id]
        if job_id not in self._pending and self.placer.is_placed(job_id):
            self.placer.release(job_id)
            self.submit(job, now)
            decisions.append(Preempt(job_id, f"evicted by {self.name}"))

    def _apply_status(self, result: CycleResult) -> bool:
        """Write the cycle's status updates back; whether any PodGroup changed phase."""
        moved = False
        for write in result.status_writes:
            if write.rt == self.integration.queue_type and write.name in self._queues:
                self._queues[write.name] = self._updated(self._queues[write.name], write.status)
            elif write.rt == self.integration.group_type and (job_id := int(write.name[1:])) in self._groups:
                old = self._groups[job_id].get("status") or {}
                moved |= old.get("phase") != write.status.get("phase") != RUNNING
                self._groups[job_id] = self._updated(self._groups[job_id], write.status)
                self._changed.add(job_id)
        return moved

    def _stamp(self, obj: Obj) -> Obj:
        """A new ``resourceVersion`` on a new object, as a store sets one on every write (schedulers keep
        what they parsed by it)."""
        self._revision += 1
        obj["metadata"] = {**obj["metadata"], "resourceVersion": str(self._revision)}
        return obj

    def _updated(self, obj: Obj, status: Mapping[str, Any]) -> Obj:
        return self._stamp({**obj, "status": dict(status)})


class _PendingPods(Sequence[PodInfo]):
    """The waiting jobs' pods in job id order, listed the first time a scheduler reads them in this pass (a
    scheduler keeping its jobs reads ``Changes.pending`` by key instead). Holds the shell's tables: valid
    for one pass only, as the view is."""

    def __init__(self, pending: Mapping[int, tuple[PodInfo, ...]], waiting: Sequence[int]) -> None:
        self._pending, self._waiting = pending, waiting
        self._listed: list[PodInfo] | None = None

    def _pods(self) -> list[PodInfo]:
        if self._listed is None:
            self._listed = list(chain.from_iterable(map(self._pending.__getitem__, self._waiting)))
        return self._listed

    @overload
    def __getitem__(self, at: int) -> PodInfo: ...

    @overload
    def __getitem__(self, at: slice) -> Sequence[PodInfo]: ...

    def __getitem__(self, at: int | slice) -> PodInfo | Sequence[PodInfo]:
        return self._pods()[at]

    def __iter__(self) -> Iterator[PodInfo]:
        return iter(self._pods())

    def __len__(self) -> int:
        return len(self._pods())


class _LazyLists(Mapping[ResourceType, Sequence[Mapping[str, Any]]]):
    """The shell's objects by type, each list built the first time a scheduler reads it in this pass (a
    scheduler reading ``Changes`` instead may never read the whole lists)."""

    def __init__(self, shell: GroupShell) -> None:
        self._shell = shell
        self._types = (PODS, shell.integration.group_type, shell.integration.queue_type,
                       *shell.integration.static_objects())  # fmt: skip
        self._known = frozenset(self._types)
        self._built: dict[ResourceType, Sequence[Mapping[str, Any]]] = {}

    def __getitem__(self, rt: ResourceType) -> Sequence[Mapping[str, Any]]:
        if rt not in self._known:
            raise KeyError(rt)
        if rt not in self._built:
            self._built[rt] = self._shell.lists(rt)
        return self._built[rt]

    @overload
    def get(self, rt: ResourceType, /) -> Sequence[Mapping[str, Any]] | None: ...

    @overload
    def get(
        self, rt: ResourceType, /, default: Sequence[Mapping[str, Any]] | _T
    ) -> Sequence[Mapping[str, Any]] | _T: ...

    def get(self, rt: ResourceType, /, default: object = None) -> object:
        """``Mapping.get`` without raising and catching ``KeyError`` for a type the shell does not hold
        (asked every pass: a scheduler reads the types it watches, HyperNodes among them)."""
        return self[rt] if rt in self._known else default

    def __contains__(self, rt: object) -> bool:
        return rt in self._known

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(self._types)

    def __len__(self) -> int:
        return len(self._types)


def _remove(ids: list[int], job_id: int) -> None:
    at = bisect_left(ids, job_id)
    if at < len(ids) and ids[at] == job_id:
        del ids[at]


Objects = Mapping[ResourceType, Sequence[Mapping[str, Any]]]


def one_pass(
    placer: GangPlacer,
    scheduler: Scheduler,
    now: float,
    pending: Sequence[PodInfo],
    objects: Objects,
    changes: Changes | None = None,
) -> CycleResult:
    """One pass of the scheduler loop (``run_pass``) over ``placer``'s snapshot with ``scheduler`` alone,
    its ``pending`` pods, the ``objects`` it watches and what changed since its last pass (``None``: not
    known); the snapshot is left as it was (the caller applies the result to its own jobs). ``ValueError``
    if the cycle bound something that was not pending."""
    snapshot = placer.snapshot
    token = snapshot.checkpoint()
    known = None if changes is None else {scheduler.name: changes}
    try:
        passed = run_pass(
            now, snapshot, {scheduler.name: pending}, objects, {scheduler.name: scheduler}, known
        )
    finally:
        snapshot.rollback(token)
    return passed.results[0][1]


def job_of(pod_key: str) -> int:
    """``sim/j<id>-<member>`` -> ``<id>``."""
    return int(pod_key.rsplit("/j", 1)[1].rsplit("-", 1)[0])


__all__ = ["SCHEDULE_PERIOD", "GroupShell", "Integration", "Objects", "job_of", "one_pass"]
