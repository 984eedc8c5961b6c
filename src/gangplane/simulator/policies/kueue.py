"""Kueue with BestEffortFIFO ClusterQueues: the Kueue core admits (quota), the core places (nodes).

Each simulator queue becomes one ClusterQueue of the same name (its LocalQueue has that name too) with one
``default`` ResourceFlavor covering ``nvidia.com/gpu``: nominal quota ``QueueSpec.nominal_gpus`` (the whole
cluster when unset), ``borrowingLimit`` as given, in ``QueueSpec.cohort`` if set. Preemption as in Kueue's
performance baseline (performance-anchors.md §1.2): ``withinClusterQueue: LowerPriority``,
``reclaimWithinCohort: Any``.

Per instant the shell runs ``schedulers.kueue.cycle.run_cycle`` until a cycle changes nothing (Kueue pops
one head per ClusterQueue per cycle and runs cycles back to back), then places admitted workloads in
admission order with ``schedulers.core.place_gang``, all members at once — on a real cluster the pods of an
admitted workload wait in kube-scheduler until they fit, which this models as a gang. Kueue's one-second
requeue batching after quota is released shows up as ``next_cycle`` wake-ups.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator, Sequence

from gangplane.api.scheduling.kueue import PreemptionPolicy, QueueingStrategy
from gangplane.schedulers.core.resources import GPU
from gangplane.schedulers.kueue.cycle import run_cycle
from gangplane.schedulers.kueue.model import (
    ClusterQueueSpec,
    FlavorQuotas,
    FlavorSpec,
    PodSetRequest,
    Preemption,
    ResourceGroup,
    ResourceQuota,
    WorkloadRequest,
)
from gangplane.schedulers.kueue.state import KueueState
from gangplane.schedulers.kueue.workloads import Phase
from gangplane.simulator.cluster import ClusterSpec, QueueSpec
from gangplane.simulator.explain import ExplainLog
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.placement import GangPlacer
from gangplane.simulator.policies.base import Admit, Decision, PolicyOptions, Preempt, Start

FLAVOR = "default"
NAMESPACE = "sim"
MAX_CYCLES_PER_INSTANT = 100_000
Shape = tuple[int, int]  # (members, GPUs per member)
_Head = tuple[int, JobSpec, Iterator[JobSpec]]  # (admission number, job, the rest of its shape's queue)


def cluster_queue(queue: QueueSpec, total_gpus: int) -> ClusterQueueSpec:
    nominal = total_gpus if queue.nominal_gpus is None else queue.nominal_gpus
    quota = ResourceQuota(nominal, queue.borrowing_limit)
    group = ResourceGroup((GPU,), (FlavorQuotas(FLAVOR, {GPU: quota}),))
    preemption = Preemption(PreemptionPolicy.LOWER_PRIORITY, PreemptionPolicy.ANY)
    return ClusterQueueSpec(
        queue.name,
        (group,),
        queue.cohort or None,
        QueueingStrategy.BEST_EFFORT_FIFO,
        preemption,
        fair_weight=queue.weight,
    )


class KueueBestEffortFifo:
    name = "kueue"

    def __init__(self, cluster: ClusterSpec, options: PolicyOptions) -> None:
        self.placer = GangPlacer(cluster)
        self.state = KueueState(explain=options.explain is not None)
        queues = [cluster_queue(q, cluster.total_gpus) for q in cluster.queues]
        self.state.configure(queues, (), (FlavorSpec(FLAVOR),), 0.0)
        self._jobs: dict[str, JobSpec] = {}
        self._attempts: dict[int, int] = {}
        self._unplaced: dict[int, JobSpec] = {}  # admitted, waiting for nodes, in admission order
        self._by_shape: dict[Shape, dict[int, JobSpec]] = {}  # the same, per gang shape
        self._admission = itertools.count()
        self._order: dict[int, int] = {}  # job id -> admission sequence number
        self.explain_log = None if options.explain is None else ExplainLog(options.explain)

    def submit(self, job: JobSpec, now: float) -> None:
        attempt = self._attempts[job.id] = self._attempts.get(job.id, -1) + 1
        key = f"{NAMESPACE}/j{job.id}-{attempt}"
        self._jobs[key] = job
        pod_set = PodSetRequest(
            "main", job.members, {GPU: job.gpus_per_member} if job.gpus_per_member else {}
        )
        request = WorkloadRequest(key, NAMESPACE, job.queue, job.queue, (pod_set,), job.priority, created=now)
        self.state.add_workload(request, now)

    def release(self, job_id: int, now: float) -> None:
        self.placer.release(job_id)
        key = self._key(job_id)
        self.state.finish_workload(key, True, "", now)
        # gone, as its owner's garbage collection would delete it: a replay never reads it again
        self.state.delete_workload(key, now)
        del self._jobs[key]

    def schedule(self, now: float) -> Sequence[Decision]:
        decisions: list[Decision] = []
        for _ in range(MAX_CYCLES_PER_INSTANT):
            result = run_cycle(self.state, now)
            for eviction in result.evictions:
                self._evict(self._jobs[eviction.key], decisions)
            for workload in result.admitted:
                job = self._jobs[workload.key]
                self._hold(job)
                decisions.append(Admit(job.id))
            if not result.progressed:
                break
        self._place(decisions)
        self._explain(now)
        return decisions

    def next_cycle(self, now: float) -> float | None:
        return self.state.queues.next_wakeup()

    def _explain(self, now: float) -> None:
        """Why the explained job still waits: Kueue's pending message before admission, ``place_gang``'s
        explanation after it."""
        log = self.explain_log
        if log is None or log.job_id not in self._attempts:
            return
        if log.job_id in self._unplaced:
            log.note(now, "Admitted", self.placer.why_not(self._unplaced[log.job_id]))
            return
        workload = self.state.workloads.get(self._key(log.job_id))
        if workload is not None and workload.phase == Phase.PENDING:
            reason = str(workload.pending_reason or "Pending")
            log.note(now, reason, workload.pending_message or "waiting in its ClusterQueue")

    def _key(self, job_id: int) -> str:
        return f"{NAMESPACE}/j{job_id}-{self._attempts[job_id]}"

    def _hold(self, job: JobSpec) -> None:
        self._unplaced[job.id] = job
        self._by_shape.setdefault(_shape(job), {})[job.id] = job
        self._order[job.id] = next(self._admission)

    def _unhold(self, job: JobSpec) -> bool:
        if self._unplaced.pop(job.id, None) is None:
            return False
        shape = _shape(job)
        del self._by_shape[shape][job.id]
        if not self._by_shape[shape]:
            del self._by_shape[shape]
        del self._order[job.id]
        return True

    def _evict(self, job: JobSpec, decisions: list[Decision]) -> None:
        """Kueue released the quota and requeued the workload; stop its pods if they run."""
        if not self._unhold(job) and self.placer.is_placed(job.id):
            self.placer.release(job.id)
            decisions.append(Preempt(job.id, "evicted by Kueue"))

    def _place(self, decisions: list[Decision]) -> None:
        """Place admitted workloads in admission order. Free GPUs only shrink while placing, so a gang shape
        ruled out once stays ruled out for this pass: the pass reads the shapes' queues merged by admission
        order and stops reading a shape at its first ruled-out workload, so it costs the workloads tried,
        not every admitted workload still waiting for nodes."""
        free = self.placer.free_gpus()
        heads: list[_Head] = []
        for jobs in self._by_shape.values():
            self._push_next(heads, iter(jobs.values()))
        placed: list[JobSpec] = []
        while heads:
            _, job, rest = heapq.heappop(heads)
            if not self.placer.might_fit(job, free):
                continue  # its shape is ruled out for this pass
            nodes = self.placer.place(job)
            if nodes is not None:
                placed.append(job)
                decisions.append(Start(job.id, nodes))
                free = self.placer.free_gpus()
            self._push_next(heads, rest)
        for job in placed:
            self._unhold(job)

    def _push_next(self, heads: list[_Head], rest: Iterator[JobSpec]) -> None:
        job = next(rest, None)
        if job is not None:
            heapq.heappush(heads, (self._order[job.id], job, rest))


def _shape(job: JobSpec) -> Shape:
    return job.members, job.gpus_per_member


__all__ = ["KueueBestEffortFifo", "cluster_queue"]
