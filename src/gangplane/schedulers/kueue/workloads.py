"""Per-workload state the Kueue core keeps, and the Workload conditions it implies (kueue.md §1, §8).

Conditions are ``metav1.Condition`` values with upstream types and reasons; the transition time moves only
when the status changes. The shell copies them, with ``status.admission``, onto the Workload object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from gangplane.api.meta import Condition
from gangplane.api.scheduling.kueue_workload import EvictionReason
from gangplane.api.scheduling.kueue_workload import WorkloadConditionType as C
from gangplane.clock import rfc3339
from gangplane.schedulers.kueue.flavors import Assignment
from gangplane.schedulers.kueue.model import PendingSource, Usage, WorkloadRequest

NO_RESERVATION, NO_RESERVATION_MESSAGE = "NoReservation", "The workload has no reservation"
# kueue workload_controller.go: the deactivation messages and the cause it records when Kueue deactivates
DEACTIVATED_MESSAGE = "The workload is deactivated"
REACTIVATED, REACTIVATED_MESSAGE = "Reactivated", "The workload was reactivated"
BACKOFF_FINISHED, BACKOFF_FINISHED_MESSAGE = "BackoffFinished", "The workload backoff was finished"
CQ_RESTARTED, CQ_RESTARTED_MESSAGE = (
    "ClusterQueueRestarted",
    "The ClusterQueue was restarted after being stopped",
)
REQUEUING_LIMIT_EXCEEDED = "RequeuingLimitExceeded"
REQUEUING_LIMIT_DETAIL = "exceeding the maximum number of re-queuing retries"
WAIT_FOR_START, WAIT_FOR_RECOVERY = (
    "WaitForStart",
    "WaitForRecovery",
)  # a PodsReady timeout's underlying cause


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
    recovering_since: float | None = None
    """When a pod of the admitted workload failed (``PodsReady=False WaitForRecovery``)."""
    conditions: tuple[Condition, ...] = ()
    """The stored conditions: the core only updates the types it sets, as upstream, so older history
    (an Evicted, Requeued or Preempted condition) survives a restart."""


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
    pending_source: PendingSource = PendingSource.WORKLOAD_CONTROLLER
    """Who set the ``QuotaReserved=False`` condition last: it decides whether a ``Pending`` Event is due."""
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


def mark_pending(
    state: WorkloadState, reason: str, message: str, now: float, *, conditions: bool = True,
    by: PendingSource = PendingSource.WORKLOAD_CONTROLLER,
) -> None:  # fmt: skip
    """``QuotaReserved=False`` with why, set ``by`` that component, and ``Admitted=False`` beside it
    (upstream's SyncAdmittedCondition under UnadmittedWorkloadsObservability, on by default). ``conditions``
    False: only the reason and message are kept (a simulation not asked to explain writes no Workload)."""
    state.pending_reason, state.pending_message, state.pending_source = reason, message, by
    if not conditions:
        return
    state.set_condition(C.QUOTA_RESERVED, False, reason, message, now)
    state.set_condition(C.ADMITTED, False, NO_RESERVATION, NO_RESERVATION_MESSAGE, now)


def mark_admitted(
    state: WorkloadState, assignment: Assignment, now: float, *, conditions: bool = True
) -> None:
    """QuotaReserved and Admitted in one step: the embedded Kueue has no admission checks. ``conditions``
    False: the reservation only, no conditions (as ``mark_pending``)."""
    state.phase = Phase.ADMITTED
    state.assignment = assignment
    state.usage = assignment.usage
    state.reserved_at = now
    state.pods_ready = False
    state.pending_reason = state.pending_message = ""
    if not conditions:
        return
    message = f"Quota reserved in ClusterQueue {state.cluster_queue}"
    state.set_condition(C.QUOTA_RESERVED, True, "QuotaReserved", message, now)
    state.set_condition(C.ADMITTED, True, "Admitted", "The workload is admitted", now)
    state.set_condition(C.PODS_READY, False, WAIT_FOR_START, "Not all pods are ready or succeeded", now)
    for type_ in (C.EVICTED, C.PREEMPTED):  # kueue SetQuotaReservation: resetActiveCondition
        old = state.conditions.get(type_)
        if old is not None and old.status == "True":
            state.set_condition(type_, False, "QuotaReserved", f"Previously: {old.message}", now)


def _unreserve(state: WorkloadState) -> None:
    state.assignment = None
    state.usage = {}
    state.reserved_at = None
    state.pods_ready = False


def _count_eviction(state: WorkloadState, reason: str, cause: str) -> None:
    """Upstream's workloadEvictionStateInc: ``schedulingStats.evictions`` per (reason, underlying cause)."""
    state.evictions[(reason, cause)] = state.evictions.get((reason, cause), 0) + 1


def mark_evicted(state: WorkloadState, reason: str, message: str, now: float, cause: str = "") -> None:
    """Release the reservation; the job is stopped by the shell and the workload requeued."""
    state.phase = Phase.PENDING
    _unreserve(state)
    _count_eviction(state, reason, cause)
    state.pending_source = PendingSource.JOB_RECONCILER  # the job reconciler unsets the reservation
    state.set_condition(C.EVICTED, True, reason, message, now)
    state.set_condition(C.QUOTA_RESERVED, False, "Pending", message, now)
    state.set_condition(C.ADMITTED, False, NO_RESERVATION, NO_RESERVATION_MESSAGE, now)
    state.drop_condition(C.PODS_READY)


def mark_finished(state: WorkloadState, reason: str, message: str, now: float) -> None:
    state.phase = Phase.FINISHED
    state.set_condition(C.FINISHED, True, reason, message, now)


def mark_pods_ready(state: WorkloadState, now: float) -> None:
    recovered = state.conditions.get(C.PODS_READY)
    reason = "Recovered" if recovered is not None and recovered.reason == WAIT_FOR_RECOVERY else "Started"
    state.pods_ready = True
    state.set_condition(
        C.PODS_READY, True, reason, "All pods reached readiness and the workload is running", now
    )


def recall(state: WorkloadState, history: History) -> None:
    """Take back what the status remembered (``History``); a stored condition wins over one the core has
    just set (a restored admitted workload keeps its PodsReady), the core's new types come after."""
    state.requeue_count, state.requeue_at = history.requeue_count, history.requeue_at
    state.evictions = {(reason, cause): count for reason, cause, count in history.evictions}
    stored = {c.type: c for c in history.conditions}
    state.conditions = stored | {t: c for t, c in state.conditions.items() if t not in stored}


def deactivation(cause: str, detail: str) -> tuple[str, str]:
    """The Evicted reason and message of a deactivation: kueue ``evict.Evict`` appends the underlying cause
    to the reason (``ReasonWithCause``: ``DeactivatedDueTo<cause>``), the controller the detail to the message."""
    if not cause:
        return EvictionReason.DEACTIVATED, DEACTIVATED_MESSAGE
    return f"{EvictionReason.DEACTIVATED}DueTo{cause}", f"{DEACTIVATED_MESSAGE} due to {detail}"


def mark_deactivated(state: WorkloadState, cause: str, detail: str, now: float) -> None:
    """``spec.active: false`` (kueue workload_controller.go, then the job reconciler's eviction step): Evicted
    unless already evicted (the earlier reason is kept), the reservation released with ``Requeued=False``,
    the requeue state cleared, and ``QuotaReserved=False Deactivated`` while it stays inactive."""
    evicted = state.conditions.get(C.EVICTED)
    if evicted is None or evicted.status != "True":
        reason, message = deactivation(cause, detail)
        _count_eviction(state, EvictionReason.DEACTIVATED, cause)
        state.set_condition(C.EVICTED, True, reason, message, now)
    else:
        reason, message = evicted.reason, evicted.message
    if state.phase == Phase.ADMITTED:
        _unreserve(state)
        state.set_condition(C.REQUEUED, False, reason, message, now)
        state.drop_condition(C.PODS_READY)
    state.phase = Phase.INACTIVE
    state.requeue_count, state.requeue_at = 0, None
    state.pending_source = PendingSource.WORKLOAD_CONTROLLER
    state.set_condition(C.QUOTA_RESERVED, False, EvictionReason.DEACTIVATED, DEACTIVATED_MESSAGE, now)
    state.set_condition(C.ADMITTED, False, NO_RESERVATION, NO_RESERVATION_MESSAGE, now)


def mark_reactivated(state: WorkloadState, now: float) -> None:
    """``spec.active`` true again: pending, and ``Requeued`` turned True when a deactivation (or a backoff the
    deactivation cleared) left it False. Upstream matches the reason ``Deactivated`` exactly; gangplane also
    takes ``DeactivatedDueTo...`` (docs/kueue.md)."""
    state.phase = Phase.PENDING
    requeued = state.conditions.get(C.REQUEUED)
    if requeued is None or requeued.status != "False":
        return
    if requeued.reason.startswith(EvictionReason.DEACTIVATED):
        state.set_condition(C.REQUEUED, True, REACTIVATED, REACTIVATED_MESSAGE, now)
    elif requeued.reason == EvictionReason.PODS_READY_TIMEOUT:
        state.set_condition(C.REQUEUED, True, BACKOFF_FINISHED, BACKOFF_FINISHED_MESSAGE, now)
