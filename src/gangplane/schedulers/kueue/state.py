"""The Kueue core's state and its events: queues and quota configured, workloads added, finished, ready,
timed out, deleted. Admission cycles live in ``cycle``.

A ``KueueState`` is a state machine in the sense of style rule 6: every method takes the current time and
returns what the shell must do (``Eviction`` values); nothing here reads a clock or touches a store. Quota
released by a finished, deleted or evicted workload requeues the inadmissible workloads of its whole cohort
tree after Kueue's one-second batching delay.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gangplane.api.scheduling.kueue import StopPolicy
from gangplane.api.scheduling.kueue_workload import EvictionReason, PreemptionReason
from gangplane.api.scheduling.kueue_workload import WorkloadConditionType as C
from gangplane.schedulers.kueue.admitted import AdmittedIndex
from gangplane.schedulers.kueue.fairsharing import PreemptionStrategy
from gangplane.schedulers.kueue.flavors import Assignment
from gangplane.schedulers.kueue.model import (
    ClusterQueueSpec,
    CohortSpec,
    FlavorSpec,
    LocalQueueKey,
    PendingReason,
    WorkloadRequest,
)
from gangplane.schedulers.kueue.podsready import (
    ReadinessDeadlines,
    RequeuingTimestamp,
    WaitForPodsReady,
    backoff_seconds,
    exceeds_backoff_limit,
    pods_ready_deadline,
)
from gangplane.schedulers.kueue.queues import QueueManager
from gangplane.schedulers.kueue.quota import KeptView, QuotaTree
from gangplane.schedulers.kueue.workloads import (
    BACKOFF_FINISHED,
    BACKOFF_FINISHED_MESSAGE,
    CQ_RESTARTED,
    CQ_RESTARTED_MESSAGE,
    REQUEUING_LIMIT_DETAIL,
    REQUEUING_LIMIT_EXCEEDED,
    WAIT_FOR_RECOVERY,
    WAIT_FOR_START,
    History,
    Phase,
    WorkloadState,
    mark_admitted,
    mark_deactivated,
    mark_evicted,
    mark_finished,
    mark_pending,
    mark_pods_ready,
    mark_reactivated,
    recall,
)


@dataclass(frozen=True)
class KueueConfig:
    """``fair_sharing`` None = classical preemption and ordering; a tuple of strategies enables fair sharing."""

    wait_for_pods_ready: WaitForPodsReady = field(default_factory=WaitForPodsReady)
    fair_sharing: tuple[PreemptionStrategy, ...] | None = None


@dataclass(frozen=True)
class Eviction:
    """An instruction for the shell: stop this workload's job (suspend it) — its quota is already released."""

    key: str
    reason: EvictionReason
    message: str
    preemption_reason: PreemptionReason | None = None
    preempting_cluster_queue: str | None = None
    cause: str = ""
    """Upstream's underlying cause: ``WaitForStart`` / ``WaitForRecovery`` for a PodsReady timeout,
    ``RequeuingLimitExceeded`` when Kueue itself deactivated the workload."""

    @property
    def set_inactive(self) -> bool:
        """Kueue deactivated it: the shell persists ``spec.active: false``, before the status."""
        return self.reason == EvictionReason.DEACTIVATED and bool(self.cause)


@dataclass
class KueueState:
    config: KueueConfig = field(default_factory=KueueConfig)
    cluster_queues: dict[str, ClusterQueueSpec] = field(default_factory=dict)
    cohorts: dict[str, CohortSpec] = field(default_factory=dict)
    flavors: dict[str, FlavorSpec] = field(default_factory=dict)
    tree: QuotaTree = field(default_factory=lambda: QuotaTree([]))
    workloads: dict[str, WorkloadState] = field(default_factory=dict)
    admitted: AdmittedIndex = field(default_factory=AdmittedIndex)
    queues: QueueManager = field(default_factory=QueueManager)
    recovering_since: dict[str, float] = field(default_factory=dict)
    readiness: ReadinessDeadlines = field(default_factory=ReadinessDeadlines)
    """waitForPodsReady deadlines of the admitted workloads not yet ready (empty when it is off)."""
    view: KeptView = field(default_factory=KeptView)
    """The admission cycles' copy of ``tree``."""
    explain: bool = True
    """Write why a workload is pending: its conditions and the flavor assigner's messages. The simulator
    turns it off unless asked to explain; the pending reason is kept either way."""
    stopped_local_queues: dict[LocalQueueKey, StopPolicy] = field(default_factory=dict)
    """LocalQueues whose ``stopPolicy`` is not None (``localqueues``): their pending workloads wait outside
    the ClusterQueues' heaps, as upstream's queue manager drops a stopped LocalQueue."""

    # ------------------------------------------------------------ configuration

    def configure(
        self, cluster_queues: Iterable[ClusterQueueSpec], cohorts: Iterable[CohortSpec],
        flavors: Iterable[FlavorSpec], now: float,
    ) -> list[Eviction]:  # fmt: skip
        """Replace queues, cohorts and flavors; usage is carried over. HoldAndDrain evicts admitted work."""
        self.cluster_queues = {cq.name: cq for cq in cluster_queues}
        self.cohorts = {c.name: c for c in cohorts}
        self.flavors = {f.name: f for f in flavors}
        self.tree = QuotaTree(self.cluster_queues.values(), self.cohorts.values())
        for name, spec in self.cluster_queues.items():
            self.queues.set_strategy(name, spec.queueing_strategy)
            for state in self.admitted.get(name, {}).values():
                self.tree.add_usage(name, state.usage)
        self.queues.schedule_requeue(self.cluster_queues, now)
        return self.drain_stopped(now)

    def drain_stopped(self, now: float) -> list[Eviction]:
        """Evict the admitted workloads of every ``HoldAndDrain`` ClusterQueue: at reconfiguration, and once a
        restart has read the admitted workloads back (the spec may have changed while nothing ran)."""
        evictions = []
        for name, spec in self.cluster_queues.items():
            if spec.stop_policy == StopPolicy.HOLD_AND_DRAIN:
                for key in sorted(self.admitted.get(name, {})):
                    message = "The ClusterQueue is stopped"  # as upstream, without its name
                    evictions.append(self.evict(key, EvictionReason.CLUSTER_QUEUE_STOPPED, message, now))
        return evictions

    def mark_restarted(self, now: float) -> list[str]:
        """After a reconfiguration: the workloads a stopped ClusterQueue evicted, now that it runs again, get
        ``Requeued=True`` ``ClusterQueueRestarted`` (upstream's workload controller). Returns their keys."""
        running = {name for name, spec in self.cluster_queues.items() if spec.stop_policy == StopPolicy.NONE}
        found = []
        for key, state in self.workloads.items():
            requeued = state.conditions.get(C.REQUEUED)
            if state.cluster_queue not in running or requeued is None or requeued.status != "False":
                continue
            if requeued.reason == EvictionReason.CLUSTER_QUEUE_STOPPED:
                state.set_condition(C.REQUEUED, True, CQ_RESTARTED, CQ_RESTARTED_MESSAGE, now)
                found.append(key)
        return found

    def is_active(self, cq: str) -> bool:
        spec = self.cluster_queues.get(cq)
        return (
            spec is not None
            and cq not in self.tree.inactive
            and spec.stop_policy == StopPolicy.NONE
            and not self.missing_flavors(cq)
        )

    def missing_flavors(self, cq: str) -> list[str]:
        """ResourceFlavors the ClusterQueue names that do not exist: it admits nothing (``FlavorNotFound``)."""
        spec = self.cluster_queues[cq]
        named = dict.fromkeys(f.name for g in spec.resource_groups for f in g.flavors)
        return [name for name in named if name not in self.flavors]

    def tree_members(self, cq: str) -> list[str]:
        """Every ClusterQueue sharing ``cq``'s root cohort (just ``cq`` without a cohort)."""
        node = self.tree.cqs.get(cq)
        if node is None:
            return [cq]
        root = node.root()
        return [name for name, other in self.tree.cqs.items() if other.root() is root]

    # ------------------------------------------------------------ workload events

    def add_workload(
        self, request: WorkloadRequest, now: float, history: History | None = None
    ) -> WorkloadState:
        """Queue a workload; ``history`` is what its status remembered (a restart): a backoff still running
        waits it out, and a PodsReady timeout keeps its place in the queue (requeuing timestamp Eviction)."""
        state = WorkloadState(request, queue_time=request.created)
        if history is not None:
            recall(state, history)
            eviction_time = self.config.wait_for_pods_ready.timestamp == RequeuingTimestamp.EVICTION
            if eviction_time and history.timed_out_at is not None:
                state.queue_time = history.timed_out_at
        self.workloads[request.key] = state
        self.enqueue(state, now)
        return state

    def enqueue(self, state: WorkloadState, now: float) -> None:
        """Queue a pending workload afresh (added, reactivated, its LocalQueue restarted)."""
        if not state.cluster_queue:  # upstream's getQueueBlocker, as the stopped LocalQueue's below
            message = f"LocalQueue {state.request.local_queue} doesn't exist"
            mark_pending(state, PendingReason.MISCONFIGURED, message, now, conditions=self.explain)
            return
        if not self.held(state):
            mark_pending(state, PendingReason.PENDING, "", now, conditions=self.explain)
        self.push_or_hold(state, now)

    def held(self, state: WorkloadState) -> bool:
        """Whether ``state``'s LocalQueue is stopped (then it is in no ClusterQueue's heap)."""
        stopped = self.stopped_local_queues
        return bool(stopped) and (state.request.namespace, state.request.local_queue) in stopped

    def push_or_hold(self, state: WorkloadState, now: float) -> None:
        """Queue a pending workload, or, its LocalQueue stopped, say why it waits (upstream's workload
        controller: ``Suspended``, "LocalQueue NAME is inactive", after "doesn't exist")."""
        if not self.held(state):
            self.queues.push(state, now)
            return
        message = f"LocalQueue {state.request.local_queue} is inactive"
        mark_pending(state, PendingReason.SUSPENDED, message, now, conditions=self.explain)

    def restore_admitted(self, request: WorkloadRequest, assignment: Assignment, reserved_at: float,
                         pods_ready: bool, history: History | None = None) -> WorkloadState:  # fmt: skip
        """Take back a workload admitted before a restart: its quota is held again, nothing is re-decided; one
        waiting for recovery keeps its recoveryTimeout deadline."""
        state = WorkloadState(request, queue_time=request.created)
        mark_admitted(state, assignment, reserved_at)
        if history is not None:
            recall(state, history)
            if history.recovering_since is not None and not pods_ready:
                self.recovering_since[request.key] = history.recovering_since
        state.pods_ready = pods_ready
        self.workloads[request.key] = state
        self.admitted.add(state)
        self.track_readiness(state)
        if request.cluster_queue in self.tree.cqs:
            self.tree.add_usage(request.cluster_queue, state.usage)
        return state

    def delete_workload(self, key: str, now: float) -> None:
        state = self.workloads.pop(key, None)
        if state is None:
            return
        self.queues.forget(key, state.cluster_queue)
        self.recovering_since.pop(key, None)
        if state.phase == Phase.ADMITTED:
            self._release(state, now)

    def finish_workload(self, key: str, succeeded: bool, message: str, now: float, reason: str = "") -> None:
        """Release the quota for good; ``reason`` defaults to ``Succeeded`` / ``Failed``."""
        state = self.workloads.get(key)
        if state is None or state.phase == Phase.FINISHED:
            return
        self.queues.forget(key, state.cluster_queue)
        if state.phase == Phase.ADMITTED:
            self._release(state, now)
        mark_finished(state, reason or ("Succeeded" if succeeded else "Failed"), message, now)

    def set_pods_ready(self, key: str, ready: bool, now: float) -> None:
        """Report whether all pods are ready or succeeded; a loss after readiness starts recovery."""
        state = self.workloads.get(key)
        if state is None or state.phase != Phase.ADMITTED:
            return
        if ready and not state.pods_ready:
            mark_pods_ready(state, now)
            self.recovering_since.pop(key, None)
        elif not ready and state.pods_ready:
            state.pods_ready = False
            self.recovering_since[key] = now
            state.set_condition(C.PODS_READY, False, WAIT_FOR_RECOVERY, "At least one pod has failed", now)
        self.track_readiness(state)

    def _release(self, state: WorkloadState, now: float, *, in_cycle: bool = False) -> None:
        if state.cluster_queue in self.tree.cqs:  # the ClusterQueue may be gone
            self.tree.remove_usage(state.cluster_queue, state.usage)
        self.admitted.remove(state.cluster_queue, state.key)
        self.readiness.set(state.key, None)
        self.queues.schedule_requeue(
            self.tree_members(state.cluster_queue), now, popped_heads_too=not in_cycle
        )

    # ------------------------------------------------------------ eviction and waitForPodsReady

    def evict(
        self, key: str, reason: EvictionReason, message: str, now: float, *,
        preemption: PreemptionReason | None = None, preempting_cq: str | None = None, in_cycle: bool = False,
        cause: str = "",
    ) -> Eviction:  # fmt: skip
        """Release ``key``'s quota and queue it again (after a backoff for ``PodsReadyTimeout``). ``in_cycle``:
        a preemption by the running cycle, whose heads still park as upstream's would (there the victim's quota
        is released later, when its pods are gone, and only that requeues the cohort)."""
        state = self.workloads[key]
        self._release(state, now, in_cycle=in_cycle)
        self.recovering_since.pop(key, None)
        mark_evicted(state, reason, message, now, cause)
        if preemption is not None:
            state.set_condition(C.PREEMPTED, True, preemption, message, now)
        if reason == EvictionReason.PODS_READY_TIMEOUT:
            self._back_off(state, message, now)
        else:  # upstream's job reconciler: Requeued is True only after a preemption or node failures
            requeued = reason in (EvictionReason.PREEMPTED, EvictionReason.NODE_FAILURES)
            state.set_condition(C.REQUEUED, requeued, reason, message, now)
        self.push_or_hold(state, now)
        return Eviction(key, reason, message, preemption, preempting_cq, cause)

    def _back_off(self, state: WorkloadState, message: str, now: float) -> None:
        """``Requeued=False`` with the eviction's reason and message until the backoff ends (upstream's job
        reconciler copies them from ``Evicted``)."""
        config = self.config.wait_for_pods_ready
        state.requeue_count += 1
        state.requeue_at = now + backoff_seconds(config, state.requeue_count)
        if config.timestamp == RequeuingTimestamp.EVICTION:
            state.queue_time = now
        state.set_condition(C.REQUEUED, False, EvictionReason.PODS_READY_TIMEOUT, message, now)

    def pods_ready_deadline(self, state: WorkloadState) -> float | None:
        if not self.config.wait_for_pods_ready.enabled or state.phase != Phase.ADMITTED or state.pods_ready:
            return None
        admitted_at = state.reserved_at if state.reserved_at is not None else 0.0
        recovering = self.recovering_since.get(state.key)
        return pods_ready_deadline(self.config.wait_for_pods_ready, admitted_at, recovering)

    def track_readiness(self, state: WorkloadState) -> None:
        """Record ``state``'s waitForPodsReady deadline after it was admitted or its readiness changed."""
        self.readiness.set(state.key, self.pods_ready_deadline(state))

    def check_pods_ready(self, now: float) -> list[Eviction]:
        """Evict every admitted workload whose pods did not become ready in time; only the due ones are read.
        One whose next requeue would pass ``backoff_limit_count`` is deactivated instead (upstream's
        triggerDeactivation: ``count + 1 > limit``), without a PodsReadyTimeout eviction. The underlying cause
        is ``WaitForRecovery`` after a pod failed, else ``WaitForStart`` (``admittedNotReadyWorkload``)."""
        config, evictions = self.config.wait_for_pods_ready, []
        for key in self.readiness.due(now):
            if exceeds_backoff_limit(config, self.workloads[key].requeue_count + 1):
                found = self.deactivate(key, now, REQUEUING_LIMIT_EXCEEDED, REQUEUING_LIMIT_DETAIL)
            else:
                recovering = key in self.recovering_since and config.recovery_timeout is not None
                cause = WAIT_FOR_RECOVERY if recovering else WAIT_FOR_START
                message = f"Exceeded the PodsReady timeout {key}"
                found = self.evict(key, EvictionReason.PODS_READY_TIMEOUT, message, now, cause=cause)
            if found is not None:
                evictions.append(found)
        return evictions

    # ------------------------------------------------------------ spec.active

    def set_active(self, key: str, active: bool, now: float) -> tuple[bool, Eviction | None]:
        """Follow a Workload's ``spec.active``: (whether that changed the workload, the job to stop)."""
        state = self.workloads.get(key)
        if state is None or state.phase == Phase.FINISHED or active == (state.phase != Phase.INACTIVE):
            return False, None
        if active:
            self.reactivate(key, now)
            return True, None
        return True, self.deactivate(key, now)

    def deactivate(self, key: str, now: float, cause: str = "", detail: str = "") -> Eviction | None:
        """``spec.active: false``: release the quota, leave the queues until reactivated. ``cause`` is the
        underlying cause when Kueue itself deactivates. Returns the job to stop when it held quota."""
        state = self.workloads.get(key)
        if state is None or state.phase in (Phase.FINISHED, Phase.INACTIVE):
            return None
        admitted = state.phase == Phase.ADMITTED
        self.queues.forget(key, state.cluster_queue)
        self.recovering_since.pop(key, None)
        if admitted:
            self._release(state, now)
        mark_deactivated(state, cause, detail, now)
        if not admitted:
            return None
        message = state.conditions[C.EVICTED].message
        return Eviction(key, EvictionReason.DEACTIVATED, message, cause=cause)

    def reactivate(self, key: str, now: float) -> None:
        """``spec.active`` true again: queued afresh (its requeue count was cleared on deactivation)."""
        state = self.workloads.get(key)
        if state is None or state.phase != Phase.INACTIVE:
            return
        mark_reactivated(state, now)
        self.enqueue(state, now)

    def wake_backoffs(self, now: float) -> None:
        for state in self.queues.flush(now):
            state.requeue_at = None
            state.set_condition(C.REQUEUED, True, BACKOFF_FINISHED, BACKOFF_FINISHED_MESSAGE, now)

    def next_wakeup(self) -> float | None:
        """The earliest time something happens without an outside event (requeue, backoff, timeout)."""
        times = [t for t in (self.queues.next_wakeup(), self.earliest_pods_ready_deadline()) if t is not None]
        return min(times, default=None)

    def earliest_pods_ready_deadline(self) -> float | None:
        return self.readiness.earliest()
