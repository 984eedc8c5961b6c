"""Per-workload state the Kueue core keeps, and the Workload conditions it implies (kueue.md §1, §8).

Conditions are ``metav1.Condition`` values with upstream types and reasons; the transition time moves only
when the status changes. The shell copies them, with ``status.admission``, onto the Workload object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from gangplane.api.meta import Condition
from gangplane.api.scheduling.kueue_workload import WorkloadConditionType as C
from gangplane.clock import rfc3339
from gangplane.schedulers.kueue.flavors import Assignment
from gangplane.schedulers.kueue.model import Usage, WorkloadRequest

NO_RESERVATION, NO_RESERVATION_MESSAGE = "NoReservation", "The workload has no reservation"


class Phase(StrEnum):
    PENDING = "Pending"
    ADMITTED = "Admitted"
    FINISHED = "Finished"
    INACTIVE = "Inactive"


@dataclass(frozen=True)
class History:
    """What a Workload's status remembers that the core needs back after a restart: its waitForPodsReady
    requeues (``requeueState``), its evictions by reason and cause (``schedulingStats``) and when a PodsReady
    timeout last evicted it."""

    requeue_count: int = 0
    requeue_at: float | None = None
    evictions: tuple[tuple[str, str, int], ...] = ()
    timed_out_at: float | None = None


@dataclass
class WorkloadState:
    """One workload as the core sees it. ``queue_time`` orders it in its ClusterQueue (kueue.md §3 (4))."""

    request: WorkloadRequest
    queue_time: float
    phase: Phase = Phase.PENDING
    assignment: Assignment | None = None
    reserved_at: float | None = None
    pods_ready: bool = False
    requeue_count: int = 0
    requeue_at: float | None = None
    pending_reason: str = ""
    pending_message: str = ""
    conditions: dict[str, Condition] = field(default_factory=dict)
    usage: Usage = field(default_factory=dict)
    """Quota held while admitted (the assignment's total), empty otherwise."""
    shape: tuple[object, ...] | None = None
    """Equivalence key cache (``queues.equivalence_key``)."""
    evictions: dict[tuple[str, str], int] = field(default_factory=dict)
    """``status.schedulingStats.evictions``: (reason, underlying cause) -> count, in order of first eviction."""

    @property
    def key(self) -> str:
        return self.request.key

    @property
    def cluster_queue(self) -> str:
        return self.request.cluster_queue

    @property
    def priority(self) -> int:
        return self.request.priority

    def set_condition(self, type_: str, status: bool, reason: str, message: str, now: float) -> None:
        value = "True" if status else "False"
        old = self.conditions.get(type_)
        if old is not None and (old.status, old.reason, old.message) == (value, reason, message):
            return
        when = old.last_transition_time if old is not None and old.status == value else rfc3339(now)
        # Values are known valid; skipping validation keeps admission cycles cheap.
        self.conditions[type_] = Condition.model_construct(
            type=type_, status=value, reason=reason, message=message, last_transition_time=when
        )

    def drop_condition(self, type_: str) -> None:
        self.conditions.pop(type_, None)


def mark_pending(state: WorkloadState, reason: str, message: str, now: float) -> None:
    """``QuotaReserved=False`` with why, and ``Admitted=False`` beside it (upstream's SyncAdmittedCondition
    under UnadmittedWorkloadsObservability, on by default)."""
    state.pending_reason, state.pending_message = reason, message
    state.set_condition(C.QUOTA_RESERVED, False, reason, message, now)
    state.set_condition(C.ADMITTED, False, NO_RESERVATION, NO_RESERVATION_MESSAGE, now)


def mark_admitted(state: WorkloadState, assignment: Assignment, now: float) -> None:
    """QuotaReserved and Admitted in one step: the embedded Kueue has no admission checks."""
    state.phase = Phase.ADMITTED
    state.assignment = assignment
    state.usage = assignment.usage
    state.reserved_at = now
    state.pods_ready = False
    state.pending_reason = state.pending_message = ""
    message = f"Quota reserved in ClusterQueue {state.cluster_queue}"
    state.set_condition(C.QUOTA_RESERVED, True, "QuotaReserved", message, now)
    state.set_condition(C.ADMITTED, True, "Admitted", "The workload is admitted", now)
    state.set_condition(C.PODS_READY, False, "WaitForStart", "Not all pods are ready or succeeded", now)
    state.drop_condition(C.EVICTED)
    state.drop_condition(C.PREEMPTED)


def mark_evicted(state: WorkloadState, reason: str, message: str, now: float) -> None:
    """Release the reservation; the job is stopped by the shell and the workload requeued."""
    state.phase = Phase.PENDING
    state.assignment = None
    state.usage = {}
    state.reserved_at = None
    state.pods_ready = False
    state.evictions[(reason, "")] = (
        state.evictions.get((reason, ""), 0) + 1
    )  # upstream workloadEvictionStateInc
    state.set_condition(C.EVICTED, True, reason, message, now)
    state.set_condition(C.QUOTA_RESERVED, False, "Pending", message, now)
    state.set_condition(C.ADMITTED, False, NO_RESERVATION, NO_RESERVATION_MESSAGE, now)
    state.drop_condition(C.PODS_READY)


def mark_finished(state: WorkloadState, reason: str, message: str, now: float) -> None:
    state.phase = Phase.FINISHED
    state.set_condition(C.FINISHED, True, reason, message, now)


def mark_pods_ready(state: WorkloadState, now: float) -> None:
    recovered = state.conditions.get(C.PODS_READY)
    reason = "Recovered" if recovered is not None and recovered.reason == "WaitForRecovery" else "Started"
    state.pods_ready = True
    state.set_condition(
        C.PODS_READY, True, reason, "All pods reached readiness and the workload is running", now
    )


def recall(state: WorkloadState, history: History) -> None:
    """Take back what the status remembered (``History``)."""
    state.requeue_count, state.requeue_at = history.requeue_count, history.requeue_at
    state.evictions = {(reason, cause): count for reason, cause, count in history.evictions}
