"""``spec.active`` and the requeuing limit, ported from upstream's own tables (kubernetes-sigs/kueue):

- ``pkg/controller/core/workload_controller_eviction_test.go`` ``TestReconcileEviction`` (the deactivation cases),
- ``pkg/controller/core/workload_controller_requeue_test.go`` ``TestReconcileRequeue`` (re-activation),
- ``pkg/controller/core/workload_controller_test.go`` ``TestReconcile`` (QuotaReserved while deactivated),
- ``pkg/workload/workload_test.go`` ``TestSetQuotaReservation`` (older Evicted/Preempted kept as "Previously").

Upstream spreads a deactivation over several reconciles and controllers (the workload controller evicts, the job
reconciler stops the job and clears the reservation); the embedded core does it in one step, so each case checks
the condition types upstream's case sets, in the state where upstream's chain settles. Cases about admission
checks, AFS penalties and the fake client's merge-patch quirks do not apply (the embedded Kueue has none).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest
from kueue_builders import cq, state, wl

from gangplane.api.meta import Condition
from gangplane.api.scheduling.kueue import StopPolicy
from gangplane.clock import rfc3339
from gangplane.schedulers.kueue.cycle import run_cycle
from gangplane.schedulers.kueue.flavors import Assignment, PodSetAssignment
from gangplane.schedulers.kueue.podsready import WaitForPodsReady
from gangplane.schedulers.kueue.state import KueueConfig, KueueState
from gangplane.schedulers.kueue.workloads import History, Phase, mark_admitted, recall

NOW = 1_800_000_000.0
LIMIT_CAUSE, LIMIT_DETAIL = "RequeuingLimitExceeded", "exceeding the maximum number of re-queuing retries"
DEACTIVATED = ("True", "Deactivated", "The workload is deactivated")
BY_LIMIT = ("True", "DeactivatedDueToRequeuingLimitExceeded",
            "The workload is deactivated due to exceeding the maximum number of re-queuing retries")  # fmt: skip


def cond(type_: str, status: str, reason: str, message: str = "", at: float = NOW - 300) -> Condition:
    return Condition(
        type=type_, status=status, reason=reason, message=message, last_transition_time=rfc3339(at)
    )


def _core(limit: int | None = None) -> KueueState:
    s = state(cq("q1", {"default": {"cpu": 8}}))
    s.config = KueueConfig(WaitForPodsReady(timeout=3, backoff_limit_count=limit, backoff_base_seconds=10))
    return s


def _admit(s: KueueState, history: History) -> None:
    assignment = Assignment([PodSetAssignment("main", 1, {"cpu": "default"}, {("default", "cpu"): 2})])
    s.restore_admitted(wl("wl", "q1", {"cpu": 2}), assignment, NOW - 300, False, history)


def _seen(s: KueueState, *types: str) -> dict[str, tuple[str, str, str]]:
    found = s.workloads["ns/wl"].conditions
    return {t: (found[t].status, found[t].reason, found[t].message) for t in types if t in found}


@dataclass(frozen=True)
class Deactivation:
    admitted: bool
    history: History = field(default_factory=History)
    cause: str = ""
    want_evicted: tuple[str, str, str] = DEACTIVATED
    want_evictions: dict[tuple[str, str], int] = field(default_factory=lambda: {("Deactivated", ""): 1})


_WAIT_FOR_START = History(
    conditions=(cond("Evicted", "False", "PodsReadyTimeout", "Exceeded the PodsReady timeout ns"),),
    evictions=(("PodsReadyTimeout", "WaitForStart", 1),),
)
_LIMIT = {("Deactivated", LIMIT_CAUSE): 1}

# TestReconcileEviction, each case by its upstream name
DEACTIVATIONS = {
    "should set the Evicted condition with Deactivated reason when the .spec.active=False": Deactivation(
        False
    ),
    "should set the Evicted condition with Deactivated reason when the .spec.active=False and Admitted": (
        Deactivation(True)
    ),
    "should set the Evicted condition with Deactivated reason when the .spec.active is False, Admitted, and the "
    "Workload has Evicted=False condition": Deactivation(
        True,
        _WAIT_FOR_START,
        want_evictions={("PodsReadyTimeout", "WaitForStart"): 1, ("Deactivated", ""): 1},
    ),
    "with reason PodsReady; should set the Evicted condition with Deactivated reason, exceeded the maximum number "
    "of requeue retries": Deactivation(
        True, History(conditions=(cond("PodsReady", "False", "PodsReady"),)), LIMIT_CAUSE, BY_LIMIT, _LIMIT
    ),
    "with reason WaitForPodsStart; should set the Evicted condition with Deactivated reason, exceeded the maximum "
    "number of requeue retries": Deactivation(
        True, History(conditions=(cond("PodsReady", "False", "WaitForStart"),)), LIMIT_CAUSE, BY_LIMIT, _LIMIT
    ),
    "with reason PodsReady; [backoffLimitCount: 100] should set the Evicted condition with Deactivated reason, "
    "exceeded the maximum number of requeue retries": Deactivation(
        True,
        History(requeue_count=100, conditions=(cond("PodsReady", "False", "PodsReady"),)),
        LIMIT_CAUSE,
        BY_LIMIT,
        _LIMIT,
    ),
    "with reason WaitForPodsStart; [backoffLimitCount: 100] should set the Evicted condition with Deactivated "
    "reason, exceeded the maximum number of requeue retries": Deactivation(
        True,
        History(requeue_count=100, conditions=(cond("PodsReady", "False", "WaitForStart"),)),
        LIMIT_CAUSE,
        BY_LIMIT,
        _LIMIT,
    ),
    "should keep the previous eviction reason when the Workload is already evicted by other reason even though the "
    "Workload is deactivated.": Deactivation(
        True,
        History(
            conditions=(cond("Evicted", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout ns"),)
        ),
        want_evicted=("True", "PodsReadyTimeout", "Exceeded the PodsReady timeout ns"),
        want_evictions={},
    ),
}


@pytest.mark.parametrize("case", DEACTIVATIONS.values(), ids=DEACTIVATIONS.keys())
def test_reconcile_eviction_deactivation(case: Deactivation) -> None:
    s = _core()
    if case.admitted:
        _admit(s, case.history)
    else:
        s.add_workload(wl("wl", "q1", {"cpu": 2}), NOW, case.history)
    detail = LIMIT_DETAIL if case.cause else ""
    eviction = s.deactivate("ns/wl", NOW, case.cause, detail)
    state_ = s.workloads["ns/wl"]
    assert _seen(s, "Evicted") == {"Evicted": case.want_evicted}
    assert state_.evictions == case.want_evictions
    assert (state_.phase, state_.requeue_count, state_.requeue_at) == (Phase.INACTIVE, 0, None)
    assert not any(s.tree.cqs["q1"].usage.values())  # the quota is released
    assert not s.queues.queue("q1").pending()  # out of the queue until re-activated
    # an admitted workload's job is stopped (upstream's "EvictedDueTo..." event); a pending one has none running
    assert (eviction is not None) == case.admitted
    if eviction is not None:
        assert (eviction.reason, eviction.message) == ("Deactivated", case.want_evicted[2])
        assert eviction.set_inactive == bool(case.cause)  # Kueue's own deactivation persists spec.active


NOT_PORTED = {
    "unadmitted workload with rejected checks gets deactivated": "admission checks are not modelled",
    "admitted workload with rejected checks gets deactivated": "admission checks are not modelled",
    "admitted workload with rejected checks gets deactivated, with message": "admission checks are not modelled",
    "workload with deactivation target condition should be deactivated and admission checks reset": (
        "admission checks are not modelled, and the core never writes DeactivationTarget"
    ),
    "workload with retry checks should be evicted and checks should be pending": "admission checks are not modelled",
    "workload with retry checks and unhealthy nodes should be evicted and checks should be pending": (
        "admission checks are not modelled"
    ),
    "workload with retry checks should be evicted and checks should be pending, with message": (
        "admission checks are not modelled"
    ),
}
PORTED_ELSEWHERE_HERE = (
    "trigger deactivation of workload when reaching backoffLimitCount",
    "should set the Evicted condition with ClusterQueueStopped reason when the StopPolicy is HoldAndDrain",
)
PORTED_IN_LOCALQUEUE_STOP = (  # test_kueue_localqueue_stop.py
    "should set the Evicted condition with LocalQueueStopped reason when the StopPolicy is HoldAndDrain",
)


def test_reconcile_eviction_is_ported_or_said_why_not() -> None:
    ported = len(DEACTIVATIONS) + len(PORTED_ELSEWHERE_HERE) + len(PORTED_IN_LOCALQUEUE_STOP)
    assert ported + len(NOT_PORTED) == 18


def test_cluster_queue_stopped_hold_and_drain() -> None:
    """TestReconcileEviction "should set the Evicted condition with ClusterQueueStopped reason when the StopPolicy
    is HoldAndDrain"."""
    s = _core()
    _admit(s, History())
    q1 = s.cluster_queues["q1"]
    evictions = s.configure(
        [dataclasses.replace(q1, stop_policy=StopPolicy.HOLD_AND_DRAIN)], [], s.flavors.values(), NOW
    )
    assert [(e.reason, e.message) for e in evictions] == [
        ("ClusterQueueStopped", "The ClusterQueue is stopped")
    ]
    assert _seen(s, "Evicted") == {"Evicted": ("True", "ClusterQueueStopped", "The ClusterQueue is stopped")}
    assert s.workloads["ns/wl"].evictions == {("ClusterQueueStopped", ""): 1}


def test_trigger_deactivation_of_workload_when_reaching_backoff_limit_count() -> None:
    """TestReconcileEviction "trigger deactivation of workload when reaching backoffLimitCount": requeue count 1,
    limit 1, the PodsReady timeout passed. Upstream first marks it (DeactivationTarget), then sets
    ``spec.active: false``, then evicts it; the core does the three at once and counts no PodsReadyTimeout."""
    s = _core(limit=1)
    _admit(s, History(requeue_count=1))
    evictions = s.check_pods_ready(NOW)
    found = [(e.key, e.reason, e.message, e.set_inactive) for e in evictions]
    assert found == [("ns/wl", "Deactivated", BY_LIMIT[2], True)]
    assert _seen(s, "Evicted") == {"Evicted": BY_LIMIT}
    assert s.workloads["ns/wl"].evictions == _LIMIT


def test_the_limit_is_not_reached_one_requeue_earlier() -> None:
    """``count + 1 > limit``: with limit 1 the first timeout still requeues with a backoff."""
    s = _core(limit=1)
    _admit(s, History())
    assert [e.reason for e in s.check_pods_ready(NOW)] == ["PodsReadyTimeout"]
    assert s.workloads["ns/wl"].phase == Phase.PENDING


# TestReconcile (workload_controller_test.go), observability enabled as by default
def test_workload_that_is_deactivated_should_set_quota_reserved_condition_to_deactivated() -> None:
    s = _core()
    stored = History(conditions=(cond("Evicted", *DEACTIVATED),), evictions=(("Deactivated", "", 1),))
    s.add_workload(wl("wl", "q1", {"cpu": 2}), NOW, stored)
    s.deactivate("ns/wl", NOW)
    assert _seen(s, "Evicted", "QuotaReserved", "Admitted") == {
        "Evicted": DEACTIVATED,
        "QuotaReserved": ("False", "Deactivated", "The workload is deactivated"),
        "Admitted": ("False", "NoReservation", "The workload has no reservation"),
    }
    assert s.workloads["ns/wl"].evictions == {("Deactivated", ""): 1}  # already evicted: not counted again


def test_workload_that_is_reactivated_should_clear_deactivated_condition() -> None:
    """Upstream's granular reason is PendingEvaluation; the embedded core's pending reason before its first
    cycle is the legacy ``Pending``, which that cycle replaces with the scheduler's own reason."""
    s = _core()
    s.add_workload(wl("wl", "q1", {"cpu": 2}), NOW)
    s.deactivate("ns/wl", NOW)
    s.reactivate("ns/wl", NOW + 1)
    assert _seen(s, "QuotaReserved")["QuotaReserved"][:2] == ("False", "Pending")
    assert [w.key for w in s.queues.queue("q1").pending()] == ["ns/wl"]
    assert [w.key for w in run_cycle(s, NOW + 2).admitted] == ["ns/wl"]


# TestReconcileRequeue (workload_controller_requeue_test.go)
REQUEUED = {
    "should set the WorkloadRequeued condition to true on re-activated": (
        ("False", "Deactivated", "The workload is deactivated"),
        ("True", "Reactivated", "The workload was reactivated"),
    ),
    # gangplane: deactivated during a backoff, which the deactivation cleared; upstream's next reconcile after the
    # reactivation finishes it as in "should set the WorkloadRequeued condition when the WaitForPodsReady backoff
    # expires" (ported below)
    "gangplane: a backoff cut short by a deactivation is finished on reactivation": (
        ("False", "PodsReadyTimeout", "Exceeded the PodsReady timeout ns"),
        ("True", "BackoffFinished", "The workload backoff was finished"),
    ),
    # gangplane: upstream matches the reason "Deactivated" exactly and leaves this one False (docs/kueue.md)
    "gangplane: a workload deactivated by the requeuing limit is Reactivated too": (
        ("False", BY_LIMIT[1], BY_LIMIT[2]),
        ("True", "Reactivated", "The workload was reactivated"),
    ),
}


@pytest.mark.parametrize(("before", "after"), REQUEUED.values(), ids=REQUEUED.keys())
def test_reconcile_requeue_on_reactivation(before: tuple[str, str, str], after: tuple[str, str, str]) -> None:
    s = _core()
    stored = History(conditions=(cond("Evicted", *DEACTIVATED), cond("Requeued", *before)))
    s.add_workload(wl("wl", "q1", {"cpu": 2}), NOW, stored)
    s.deactivate("ns/wl", NOW)
    assert _seen(s, "Requeued") == {"Requeued": before}
    s.reactivate("ns/wl", NOW + 1)
    assert _seen(s, "Requeued") == {"Requeued": after}


# TestSetQuotaReservation (pkg/workload/workload_test.go)
RESERVED = "Quota reserved in ClusterQueue q1"
SET_QUOTA_RESERVATION = {
    "WorkloadWithoutConditions": ((), {"QuotaReserved": ("True", "QuotaReserved", RESERVED, NOW)}),
    "WorkloadWithActiveConditions": (
        (
            cond("Evicted", "True", "TestEvictedReason", "test evicted message"),
            cond("Preempted", "True", "TestPreemptedReason", "test preempted message"),
            cond("QuotaReserved", "False", "TestReason", "test message"),
        ),
        {
            "Evicted": ("False", "QuotaReserved", "Previously: test evicted message", NOW),
            "Preempted": ("False", "QuotaReserved", "Previously: test preempted message", NOW),
            "QuotaReserved": ("True", "QuotaReserved", RESERVED, NOW),
        },
    ),
    "WorkloadWithInactiveConditions": (
        (
            cond("Evicted", "False", "QuotaReserved", "Previously: test evicted message"),
            cond("Preempted", "False", "QuotaReserved", "Previously: test preempted message"),
            cond("QuotaReserved", "False", "QuotaReserved", RESERVED),
        ),
        {
            "Evicted": ("False", "QuotaReserved", "Previously: test evicted message", NOW - 300),
            "Preempted": ("False", "QuotaReserved", "Previously: test preempted message", NOW - 300),
            "QuotaReserved": ("True", "QuotaReserved", RESERVED, NOW),
        },
    ),
}


@pytest.mark.parametrize(("stored", "want"), SET_QUOTA_RESERVATION.values(), ids=SET_QUOTA_RESERVATION.keys())
def test_set_quota_reservation(
    stored: tuple[Condition, ...], want: dict[str, tuple[str, str, str, float]]
) -> None:
    s = _core()
    s.add_workload(wl("wl", "q1", {"cpu": 2}), NOW - 300)
    recall(s.workloads["ns/wl"], History(conditions=stored))
    assignment = Assignment([PodSetAssignment("main", 1, {"cpu": "default"}, {("default", "cpu"): 2})])
    mark_admitted(s.workloads["ns/wl"], assignment, NOW)
    found = s.workloads["ns/wl"].conditions
    got = {t: (c.status, c.reason, c.message, c.last_transition_time) for t, c in found.items() if t in want}
    assert got == {t: (*w[:3], rfc3339(w[3])) for t, w in want.items()}
    assert list(got) == [t for t in found if t in want]  # upstream's order: existing types keep their place


# TestReconcileRequeue (workload_controller_requeue_test.go): a PodsReady timeout's eviction and backoff. Config
# of those cases: timeout 3 s (5 min with recovery 3 s), backoff base 10 s, limit 100, max as given, no jitter.
@dataclass(frozen=True)
class Requeue:
    history: History
    backoff_max: float = 3600
    recovery: float | None = None
    want_requeue: tuple[int, float] = (1, NOW + 10)
    want_evictions: dict[tuple[str, str], int] = field(default_factory=dict)


REQUEUES = {
    "increment re-queue count": Requeue(
        History(
            requeue_count=3,
            evictions=(("PodsReadyTimeout", "WaitForRecovery", 1), ("PodsReadyTimeout", "WaitForStart", 1)),
        ),
        want_requeue=(4, NOW + 80),  # 10 s * 2^(4-1)
        want_evictions={("PodsReadyTimeout", "WaitForRecovery"): 1, ("PodsReadyTimeout", "WaitForStart"): 2},
    ),
    "wait time should be limited to backoffMaxSeconds": Requeue(
        History(requeue_count=10),
        backoff_max=7200,
        want_requeue=(11, NOW + 7200),  # 10 s * 2^10 = 10240 s, capped
        want_evictions={("PodsReadyTimeout", "WaitForStart"): 1},
    ),
    # Upstream's case expects requeueAt at the 7200 s maximum for this first requeue; its comment is the previous
    # case's, and the backoff formula it shares with them gives 10 s, which is what is checked here.
    "recovery time should be limited to recoveryTimeout": Requeue(
        History(
            conditions=(
                cond("PodsReady", "False", "WaitForRecovery", "At least one pod has failed", NOW - 180),
            ),
            recovering_since=NOW - 180,
        ),
        backoff_max=7200,
        recovery=3,
        want_evictions={("PodsReadyTimeout", "WaitForRecovery"): 1},
    ),
}


@pytest.mark.parametrize("case", REQUEUES.values(), ids=REQUEUES.keys())
def test_reconcile_requeue_pods_ready_timeout(case: Requeue) -> None:
    s = _core()
    timeout = 300.0 if case.recovery is not None else 3.0
    s.config = KueueConfig(WaitForPodsReady(timeout=timeout, recovery_timeout=case.recovery, backoff_limit_count=100,
                                            backoff_base_seconds=10, backoff_max_seconds=case.backoff_max))  # fmt: skip
    _admit(s, case.history)  # admitted 5 minutes ago
    evictions = s.check_pods_ready(NOW)
    message = "Exceeded the PodsReady timeout ns/wl"
    assert [(e.reason, e.message) for e in evictions] == [("PodsReadyTimeout", message)]
    assert _seen(s, "Evicted") == {"Evicted": ("True", "PodsReadyTimeout", message)}
    found = s.workloads["ns/wl"]
    assert (found.requeue_count, found.requeue_at) == case.want_requeue
    assert found.evictions == case.want_evictions
    assert list(found.evictions) == list(case.want_evictions)  # upstream's merge keeps each entry's place


def _timed_out(s: KueueState) -> None:
    s.config = KueueConfig(WaitForPodsReady(timeout=3, backoff_limit_count=100, backoff_base_seconds=60))
    _admit(s, History())
    s.check_pods_ready(NOW)  # requeueAt = NOW + 60


TIMED_OUT = ("False", "PodsReadyTimeout", "Exceeded the PodsReady timeout ns/wl")


def test_should_keep_the_workload_requeued_condition_until_the_wait_for_pods_ready_backoff_expires() -> None:
    s = _core()
    _timed_out(s)
    s.wake_backoffs(NOW + 59)
    assert _seen(s, "Requeued") == {"Requeued": TIMED_OUT}
    assert s.next_wakeup() == NOW + 60  # upstream: RequeueAfter the rest of the backoff


def test_should_set_the_workload_requeued_condition_when_the_wait_for_pods_ready_backoff_expires() -> None:
    s = _core()
    _timed_out(s)
    s.wake_backoffs(NOW + 60)
    assert _seen(s, "Requeued") == {
        "Requeued": ("True", "BackoffFinished", "The workload backoff was finished")
    }


def test_should_not_set_the_workload_requeued_condition_when_backoff_expires_and_workload_finished() -> None:
    s = _core()
    _timed_out(s)
    s.finish_workload("ns/wl", True, "done", NOW + 30)
    s.wake_backoffs(NOW + 60)
    assert _seen(s, "Requeued") == {"Requeued": TIMED_OUT}


def test_should_set_the_workload_requeued_condition_to_true_on_cluster_queue_started() -> None:
    s = _core()
    _admit(s, History())
    q1 = s.cluster_queues["q1"]
    s.configure([dataclasses.replace(q1, stop_policy=StopPolicy.HOLD_AND_DRAIN)], [], s.flavors.values(), NOW)
    assert _seen(s, "Requeued") == {
        "Requeued": ("False", "ClusterQueueStopped", "The ClusterQueue is stopped")
    }
    assert s.mark_restarted(NOW) == []  # still stopped
    s.configure([q1], [], s.flavors.values(), NOW + 1)
    assert s.mark_restarted(NOW + 1) == ["ns/wl"]
    restarted = ("True", "ClusterQueueRestarted", "The ClusterQueue was restarted after being stopped")
    assert _seen(s, "Requeued") == {"Requeued": restarted}


REQUEUE_NOT_PORTED = {
    "recovery time with unhealthy nodes should still be limited to recoveryTimeout": "node health is not modelled",
    "should keep the WorkloadRequeued condition until the AdmissionCheck backoff expires": "no admission checks",
    "should set the WorkloadRequeued condition when the AdmissionCheck backoff expires": "no admission checks",
    "scale-to-zero released workload should not be requeued while transitioning back to pending": (
        "elastic workload slices are not modelled"
    ),
    "should update requeueState.requeueAt when admission check sets a delay": "no admission checks",
    "should not update requeueState.requeueAt when admission check delay is smaller": "no admission checks",
    "should always use the biggest admission check delay": "no admission checks",
    "should use the biggest total time not the biggest RequeueAfterSeconds": "no admission checks",
}


def test_reconcile_requeue_is_ported_or_said_why_not() -> None:
    ported = [*REQUEUES, "should set the WorkloadRequeued condition to true on re-activated"]
    ported += [
        "should keep the WorkloadRequeued condition until the WaitForPodsReady backoff expires",
        "should set the WorkloadRequeued condition when the WaitForPodsReady backoff expires",
        "shouldn't set the WorkloadRequeued condition when backoff expires and workload finished",
        "should set the WorkloadRequeued condition to true on ClusterQueue started",
        "should set the WorkloadRequeued condition to true on LocalQueue started",  # test_kueue_localqueue_stop.py
    ]
    assert len(ported) + len(REQUEUE_NOT_PORTED) == 17
