"""The store-shaped shell shared by the policies that run a whole embedded scheduler (Volcano, KAI).

Such a scheduler reads PodGroups, Queues and pods as wire dicts every cycle and answers with bindings,
evictions and status writes (``schedulers/base.py``). This shell keeps those objects as a store would: one
PodGroup and its member pods per job, the queues, every status write applied back; it runs the scheduler
loop's own pass (``schedulers.loop.run_pass``: views, checkpoints, binding validation) over the policy's
snapshot (running jobs counted, bound pods with ``nodeName``), rolls the snapshot back and then binds the
returned bindings as the policy's jobs. An eviction stops the victim's whole
rigid job, which returns as a new PodGroup with fresh pods. While a cycle moved some PodGroup to a new phase
or evicted victims, the shell asks for another cycle one schedule period later, so multi-cycle progress
(enqueue then allocate; evict then bind the preemptor) needs no outside event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from gangplane.schedulers.base import CycleResult, Scheduler
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.loop import run_pass
from gangplane.simulator.cluster import ClusterSpec
from gangplane.simulator.explain import ExplainLog, note_pass
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.placement import GangPlacer
from gangplane.simulator.policies.base import Decision, PolicyOptions, Preempt, Start
from gangplane.store.base import ResourceType
from gangplane.store.catalog import PODS

Obj = dict[str, Any]
SCHEDULE_PERIOD = 1.0


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
        self._jobs: dict[int, JobSpec] = {}
        self._pending: dict[int, tuple[PodInfo, ...]] = {}  # waiting jobs' members as the core sees them
        self._waiting: set[int] = set()
        self._moved = False
        self.explain_log = None if options.explain is None else ExplainLog(options.explain)

    def submit(self, job: JobSpec, now: float) -> None:
        self._jobs[job.id] = job
        self._groups[job.id] = self._stamp(self.integration.pod_group(job))
        self._pods[job.id] = [self._stamp(self.integration.pod(job, i)) for i in range(job.members)]
        self._pending[job.id] = self.placer.pods(job)
        self._waiting.add(job.id)

    def release(self, job_id: int, now: float) -> None:
        self.placer.release(job_id)
        for table in (self._groups, self._pods, self._jobs):
            del table[job_id]
        self._pending.pop(job_id, None)

    def schedule(self, now: float) -> Sequence[Decision]:
        if not self._waiting:
            self._moved = False
            return []
        result = one_pass(self.placer, self.integration.scheduler, now, *self._view())
        note_pass(self.explain_log, now, result.pending)
        decisions: list[Decision] = []
        for job_id in sorted({job_of(e.pod_key) for e in result.evictions}):
            self._evict(job_id, now, decisions)
        self._bind(result, decisions)
        self._moved = self._apply_status(result) or bool(result.evictions)  # victims gone: try again
        return decisions

    def next_cycle(self, now: float) -> float | None:
        return now + self.period if self._moved and self._waiting else None

    def _view(self) -> tuple[list[PodInfo], Objects]:
        pending = [pod for job_id in sorted(self._waiting) for pod in self._pending[job_id]]
        objects: Objects = {
            **self.integration.static_objects(),
            PODS: [pod for job_id in sorted(self._pods) for pod in self._pods[job_id]],
            self.integration.group_type: [self._groups[job_id] for job_id in sorted(self._groups)],
            self.integration.queue_type: [self._queues[name] for name in sorted(self._queues)],
        }
        return pending, objects

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
            self._waiting.discard(job_id)
            del self._pending[job_id]
            decisions.append(Start(job_id, placed))

    def _evict(self, job_id: int, now: float, decisions: list[Decision]) -> None:
        job = self._jobs[job_id]
        if job_id not in self._waiting and self.placer.is_placed(job_id):
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
                moved |= old.get("phase") != write.status.get("phase")
                self._groups[job_id] = self._updated(self._groups[job_id], write.status)
        return moved

    def _stamp(self, obj: Obj) -> Obj:
        """A new ``resourceVersion`` on a new object, as a store sets one on every write (schedulers keep
        what they parsed by it)."""
        self._revision += 1
        obj["metadata"] = {**obj["metadata"], "resourceVersion": str(self._revision)}
        return obj

    def _updated(self, obj: Obj, status: Mapping[str, Any]) -> Obj:
        return self._stamp({**obj, "status": dict(status)})


Objects = dict[ResourceType, Sequence[Mapping[str, Any]]]


def one_pass(
    placer: GangPlacer, scheduler: Scheduler, now: float, pending: Sequence[PodInfo], objects: Objects
) -> CycleResult:
    """One pass of the scheduler loop (``run_pass``) over ``placer``'s snapshot with ``scheduler`` alone,
    its ``pending`` pods and the ``objects`` it watches; the snapshot is left as it was (the caller applies
    the result to its own jobs). ``ValueError`` if the cycle bound something that was not pending."""
    snapshot = placer.snapshot
    token = snapshot.checkpoint()
    try:
        passed = run_pass(now, snapshot, {scheduler.name: pending}, objects, {scheduler.name: scheduler})
    finally:
        snapshot.rollback(token)
    return passed.results[0][1]


def job_of(pod_key: str) -> int:
    """``sim/j<id>-<member>`` -> ``<id>``."""
    return int(pod_key.rsplit("/j", 1)[1].rsplit("-", 1)[0])


__all__ = ["SCHEDULE_PERIOD", "GroupShell", "Integration", "Objects", "job_of", "one_pass"]
