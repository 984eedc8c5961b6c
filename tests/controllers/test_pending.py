"""``controllers/pending.py``: the waiting reason from each source and their precedence; the condition and the
event ``trainjob_status`` makes of it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gangplane.api import trainer as t
from gangplane.api.meta import Condition
from gangplane.controllers.pending import WAITING_CONDITION, PendingReason, WaitingReason, pending_reason
from gangplane.controllers.trainjob_status import RUNNING_EVENT, WaitingEvent, set_waiting, waiting_event

GANG_MESSAGE = "gang needs 2 × cpu=4; largest placement found 0 (2 nodes have cpu=2 free)"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def trainjob(*, suspend: bool = False, queue: str | None = None, done: str | None = None) -> dict[str, Any]:
    labels = {QUEUE_LABEL: queue} if queue else {}
    status = {"conditions": [{"type": done, "status": "True", "reason": "x"}]} if done else {}
    return {"metadata": {"name": "mnist", "namespace": "default", "labels": labels},
            "spec": {"suspend": suspend}, "status": status}  # fmt: skip


def pod(
    name: str,
    phase: str = "Pending",
    *,
    node: str | None = None,
    unschedulable: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    scheduler: str | None = None,
    gates: tuple[str, ...] = (),
    waiting: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "node"}]}
    spec |= {"nodeName": node} if node else {}
    spec |= {"schedulerName": scheduler} if scheduler else {}
    spec |= {"schedulingGates": [{"name": g} for g in gates]} if gates else {}
    status: dict[str, Any] = {"phase": phase}
    if unschedulable is not None:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                 "message": unschedulable}]  # fmt: skip
    if waiting is not None:
        status["containerStatuses"] = [{"name": "node", "state": {"waiting": {"reason": waiting}}}]
    meta = {"name": name, "namespace": "default", "labels": labels or {}, "annotations": annotations or {}}
    return {"metadata": meta, "spec": spec, "status": status}


def volcano_group(phase: str = "Pending", message: str | None = None, min_member: int = 2) -> dict[str, Any]:
    conditions = [{"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
                   "message": message}] if message else []  # fmt: skip
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "mnist"},
            "spec": {"minMember": min_member}, "status": {"phase": phase, "conditions": conditions}}  # fmt: skip


def kai_group(*reasons: tuple[str, str]) -> dict[str, Any]:
    condition = {"type": "UnschedulableOnNodePool", "status": "True", "nodePool": "default",
                 "reasons": [{"reason": r, "message": m} for r, m in reasons]}  # fmt: skip
    return {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "metadata": {"name": "pg-mnist-u"},
            "spec": {}, "status": {"schedulingConditions": [condition] if reasons else []}}  # fmt: skip


def coscheduling_group(min_member: int, phase: str = "Pending") -> dict[str, Any]:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "mnist"},
            "spec": {"minMember": min_member}, "status": {"phase": phase}}  # fmt: skip


def workload(
    *conditions: dict[str, Any], active: bool | None = None, queue: str = "team-a"
) -> dict[str, Any]:
    spec: dict[str, Any] = {"queueName": queue} | ({"active": active} if active is not None else {})
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "trainjob-mnist-1a2b3"}, "spec": spec,
            "status": {"conditions": list(conditions), "admission": {"clusterQueue": "cq"}}}  # fmt: skip


def cond(type_: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


NO_FLAVOR = "couldn't assign flavors to pod set node: insufficient unused quota for cpu in flavor default"
COSCHED = {"scheduling.x-k8s.io/pod-group": "mnist"}


def case(
    id_: str, job: dict[str, Any], pods: list[Any], groups: list[Any], wl: Any, want: Any, **kw: Any
) -> Any:
    return pytest.param(job, pods, groups, wl, kw, want, id=id_)


CASES = [
    case("finished-complete", trainjob(done="Complete"), [pod("a")], [], None, None),
    case("finished-failed", trainjob(done="Failed", suspend=True), [], [], None, None),
    case("kueue-no-workload-yet", trainjob(suspend=True, queue="team-a"), [], [], None,
         (WaitingReason.QUEUED_BY_KUEUE, 'waiting for Kueue to create the Workload for LocalQueue "team-a"')),
    case("kueue-quota-not-reserved", trainjob(suspend=True, queue="team-a"), [], [],
         workload(cond("QuotaReserved", "False", "Pending", NO_FLAVOR)),
         (WaitingReason.QUEUED_BY_KUEUE, f'Workload trainjob-mnist-1a2b3 queued in LocalQueue "team-a": {NO_FLAVOR}')),
    case("kueue-with-position", trainjob(suspend=True, queue="team-a"), [], [],
         workload(cond("QuotaReserved", "False", "Pending", NO_FLAVOR)),
         (WaitingReason.QUEUED_BY_KUEUE,
          f'Workload trainjob-mnist-1a2b3 queued in LocalQueue "team-a" (2 workloads ahead): {NO_FLAVOR}'),
         position=2),
    case("kueue-one-ahead", trainjob(suspend=True, queue="team-a"), [], [], workload(),
         (WaitingReason.QUEUED_BY_KUEUE,
          'Workload trainjob-mnist-1a2b3 queued in LocalQueue "team-a" (1 workload ahead): '
          "waiting for Kueue to evaluate it"), position=1),
    case("kueue-evicted", trainjob(suspend=True, queue="team-a"), [], [],
         workload(cond("Evicted", "True", "Preempted", "Preempted to accommodate a higher priority Workload"),
                  cond("QuotaReserved", "False", "Pending", NO_FLAVOR)),
         (WaitingReason.QUEUED_BY_KUEUE,
          'Workload trainjob-mnist-1a2b3 queued in LocalQueue "team-a": evicted (Preempted: Preempted to '
          f"accommodate a higher priority Workload); {NO_FLAVOR}")),
    case("kueue-reserved-not-admitted", trainjob(suspend=True, queue="team-a"), [], [],
         workload(cond("QuotaReserved", "True", "QuotaReserved"),
                  cond("Admitted", "False", "NoChecks", "The workload has 1 pending admission check")),
         (WaitingReason.QUEUED_BY_KUEUE,
          'quota reserved in ClusterQueue "cq"; not admitted yet: The workload has 1 pending admission check')),
    case("kueue-admitted-not-resumed", trainjob(suspend=True, queue="team-a"), [], [],
         workload(cond("QuotaReserved", "True"), cond("Admitted", "True")),
         (WaitingReason.QUEUED_BY_KUEUE,
          'admitted by Kueue in ClusterQueue "cq"; waiting for Kueue to resume the TrainJob')),
    case("kueue-deactivated", trainjob(suspend=True, queue="team-a"), [], [], workload(active=False),
         (WaitingReason.QUEUED_BY_KUEUE,
          "Workload trainjob-mnist-1a2b3 is deactivated (spec.active: false); Kueue will not admit it")),
    case("kueue-admitted-and-running", trainjob(queue="team-a"), [pod("a", "Running", node="n")], [],
         workload(cond("Admitted", "True")), None),
    case("user-suspended", trainjob(suspend=True), [], [], None,
         (WaitingReason.SUSPENDED, "the TrainJob is suspended (spec.suspend: true); set it to false to run")),
    case("volcano-unschedulable", trainjob(), [pod("a"), pod("b")],
         [volcano_group(message="2/2 tasks in gang unschedulable: 0/3 nodes are available")], None,
         (WaitingReason.GANG_UNSCHEDULABLE,
          "volcano PodGroup mnist: 2/2 tasks in gang unschedulable: 0/3 nodes are available")),
    case("volcano-running-ignores-stale-condition", trainjob(),
         [pod("a", "Running", node="n"), pod("b", unschedulable=GANG_MESSAGE)],
         [volcano_group("Running", message="stale", min_member=3)], None,
         (WaitingReason.PODS_UNSCHEDULABLE, f"1 of 2 pods unschedulable: {GANG_MESSAGE}")),
    case("kai-scheduling-conditions", trainjob(), [pod("a")],
         [kai_group(("OverLimit", "queue team-a would exceed its limit of 8 GPUs by 4"))], None,
         (WaitingReason.GANG_UNSCHEDULABLE,
          "kai PodGroup pg-mnist-u: node pool default: OverLimit: queue team-a would exceed its limit of 8 GPUs by 4")),
    case("kai-without-conditions-falls-through", trainjob(), [pod("a", unschedulable=GANG_MESSAGE)],
         [kai_group()], None, (WaitingReason.PODS_UNSCHEDULABLE, f"1 of 1 pods unschedulable: {GANG_MESSAGE}")),
    case("pods-unschedulable-aggregated", trainjob(),
         [pod("a", unschedulable=GANG_MESSAGE, labels=COSCHED), pod("b", unschedulable=GANG_MESSAGE, labels=COSCHED)],
         [coscheduling_group(2)], None,
         (WaitingReason.PODS_UNSCHEDULABLE, f"2 of 2 pods unschedulable: {GANG_MESSAGE}")),
    case("pods-unschedulable-distinct-most-first", trainjob(),
         [pod("a", unschedulable="z: too big"), pod("b", unschedulable="y: taint"),
          pod("c", unschedulable="y: taint"), pod("d", node="n")], [], None,
         (WaitingReason.PODS_UNSCHEDULABLE,
          "2 of 4 pods unschedulable: y: taint; 1 of 4 pods unschedulable: z: too big")),
    case("pods-unschedulable-capped", trainjob(),
         [pod(f"p{i}", unschedulable=f"m{i}") for i in range(5)], [], None,
         (WaitingReason.PODS_UNSCHEDULABLE,
          "1 of 5 pods unschedulable: m0; 1 of 5 pods unschedulable: m1; 1 of 5 pods unschedulable: m2; "
          "and 2 more distinct messages")),
    case("gang-incomplete-coscheduling", trainjob(), [pod("a", labels=COSCHED)], [coscheduling_group(3)], None,
         (WaitingReason.GANG_INCOMPLETE,
          "gang incomplete: 1 of 3 pods of coscheduling PodGroup mnist exist (minMember 3)")),
    case("gang-incomplete-volcano-by-annotation", trainjob(),
         [pod("a", annotations={"scheduling.k8s.io/group-name": "mnist"}), pod("x")], [volcano_group()], None,
         (WaitingReason.GANG_INCOMPLETE, "gang incomplete: 1 of 2 pods of volcano PodGroup mnist exist (minMember 2)")),
    case("no-pods-yet", trainjob(), [], [], None,
         (WaitingReason.GANG_INCOMPLETE, "no pods yet: waiting for the JobSet's Jobs to create them")),
    case("no-pods-yet-with-gang", trainjob(), [], [coscheduling_group(2)], None,
         (WaitingReason.GANG_INCOMPLETE,
          "gang incomplete: 0 of 2 pods of coscheduling PodGroup mnist exist (minMember 2)")),
    case("awaiting-scheduler", trainjob(), [pod("a", scheduler="volcano"), pod("b", scheduler="volcano")], [], None,
         (WaitingReason.AWAITING_SCHEDULER, '2 of 2 pods waiting for: scheduler "volcano"')),
    case("awaiting-default-scheduler-and-gates", trainjob(), [pod("a"), pod("b", gates=("kueue.x-k8s.io/topology",))],
         [], None,
         (WaitingReason.AWAITING_SCHEDULER,
          "1 of 2 pods waiting for: held by scheduling gates kueue.x-k8s.io/topology; "
          '1 of 2 pods waiting for: scheduler "default-scheduler"')),
    case("starting-containers", trainjob(), [pod("a", node="n1"), pod("b", node="n2")], [], None,
         (WaitingReason.STARTING_CONTAINERS, "2/2 pods bound, 0 running; waiting for containers to start")),
    case("starting-containers-with-reasons", trainjob(),
         [pod("a", "Running", node="n1"), pod("b", node="n2", waiting="ContainerCreating"),
          pod("c", node="n2", waiting="ImagePullBackOff")], [], None,
         (WaitingReason.STARTING_CONTAINERS,
          "3/3 pods bound, 1 running; waiting for containers to start (ContainerCreating: 1, ImagePullBackOff: 1)")),
    case("all-running", trainjob(), [pod("a", "Running", node="n"), pod("b", "Running", node="n")], [], None, None),
    case("running-and-finished", trainjob(), [pod("a", "Running", node="n"), pod("b", "Succeeded", node="n")], [],
         None, None),
    case("all-finished", trainjob(), [pod("a", "Succeeded", node="n"), pod("b", "Failed", node="n")], [], None, None),
    case("running-gang-ignores-min-member", trainjob(), [pod("a", "Running", node="n", labels=COSCHED)],
         [coscheduling_group(3, "Running")], None, None),
]  # fmt: skip


@pytest.mark.parametrize(("job", "pods", "groups", "wl", "kw", "want"), CASES)
def test_pending_reason(
    job: dict[str, Any], pods: list[Any], groups: list[Any], wl: Any, kw: dict[str, Any], want: Any
) -> None:
    found = pending_reason(job, pods, groups, wl, **kw)
    assert (found if found is None else (found.reason, found.message)) == want


def test_kueue_precedes_everything_and_suspension_precedes_pods() -> None:
    pods = [pod("a", unschedulable=GANG_MESSAGE)]
    queued = pending_reason(trainjob(suspend=True, queue="q"), pods, [volcano_group(message="m")], None)
    assert queued is not None and queued.reason == WaitingReason.QUEUED_BY_KUEUE
    suspended = pending_reason(trainjob(suspend=True), pods, [volcano_group(message="m")], None)
    assert suspended is not None and suspended.reason == WaitingReason.SUSPENDED


def test_gang_message_precedes_pod_messages() -> None:
    found = pending_reason(
        trainjob(), [pod("a", unschedulable=GANG_MESSAGE)], [volcano_group(message="m")], None
    )
    assert found == PendingReason(WaitingReason.GANG_UNSCHEDULABLE, "volcano PodGroup mnist: m")


def test_unschedulable_pods_precede_an_incomplete_gang() -> None:
    pods = [pod("a", unschedulable=GANG_MESSAGE, labels=COSCHED)]
    found = pending_reason(trainjob(), pods, [coscheduling_group(2)], None)
    assert found is not None and found.reason == WaitingReason.PODS_UNSCHEDULABLE


@pytest.mark.parametrize(
    ("reason", "event_type"),
    [(WaitingReason.PODS_UNSCHEDULABLE, "Warning"), (WaitingReason.GANG_UNSCHEDULABLE, "Warning"),
     (WaitingReason.QUEUED_BY_KUEUE, "Normal"), (WaitingReason.STARTING_CONTAINERS, "Normal")],
)  # fmt: skip
def test_event_type(reason: WaitingReason, event_type: str) -> None:
    assert PendingReason(reason, "m").event_type == event_type


_phases = st.sampled_from(["Pending", "Running", "Succeeded", "Failed"])


@given(st.lists(st.tuples(_phases, st.booleans(), st.booleans()), min_size=1, max_size=8))
def test_waiting_exactly_until_every_live_pod_runs(shapes: list[tuple[str, bool, bool]]) -> None:
    pods = [
        pod(f"p{i}", phase, node="n" if bound else None, unschedulable=None if bound or not said else "full")
        for i, (phase, bound, said) in enumerate(shapes)
    ]
    live = [phase for phase, _, _ in shapes if phase in ("Pending", "Running")]
    found = pending_reason(trainjob(), pods, [], None)
    assert (found is None) == all(phase == "Running" for phase in live)


# ---------------------------------------------------------------- the condition


def status_with(*conditions: Condition) -> t.TrainJobStatus:
    return t.TrainJobStatus(conditions=list(conditions) or None)


SUSPENDED = Condition(type="Suspended", status="True", reason="Suspended", message="TrainJob is suspended")


def test_set_waiting_puts_the_condition_first() -> None:
    status = status_with(SUSPENDED)
    set_waiting(status, PendingReason(WaitingReason.QUEUED_BY_KUEUE, "queued"), "2025-01-01T00:00:00Z")
    assert [c.type for c in status.conditions or []] == [WAITING_CONDITION, "Suspended"]
    first = (status.conditions or [])[0]
    assert (first.status, first.reason, first.message) == ("True", "QueuedByKueue", "queued")
    assert first.last_transition_time == "2025-01-01T00:00:00Z"


def test_set_waiting_keeps_the_transition_time_while_waiting() -> None:
    status = t.TrainJobStatus()
    set_waiting(status, PendingReason(WaitingReason.GANG_INCOMPLETE, "no pods"), "2025-01-01T00:00:00Z")
    set_waiting(status, PendingReason(WaitingReason.PODS_UNSCHEDULABLE, "full"), "2025-01-01T00:05:00Z")
    [only] = status.conditions or []
    assert (only.reason, only.message, only.last_transition_time) == (
        "PodsUnschedulable",
        "full",
        "2025-01-01T00:00:00Z",
    )


def test_set_waiting_removes_the_condition_and_leaves_no_empty_list() -> None:
    status = t.TrainJobStatus()
    set_waiting(status, PendingReason(WaitingReason.GANG_INCOMPLETE, "no pods"), "2025-01-01T00:00:00Z")
    set_waiting(status, None, "2025-01-01T00:01:00Z")
    assert status.conditions is None
    assert "conditions" not in status.to_dict()
    kept = status_with(SUSPENDED)
    set_waiting(kept, None, "2025-01-01T00:01:00Z")
    assert kept.conditions == [SUSPENDED]


def _waiting_condition(reason: str, message: str = "m") -> Condition:
    return Condition(type=WAITING_CONDITION, status="True", reason=reason, message=message)


def test_waiting_event_per_distinct_reason_and_message() -> None:
    new = PendingReason(WaitingReason.PODS_UNSCHEDULABLE, "2 of 2 pods unschedulable: full")
    assert waiting_event(None, new, []) == WaitingEvent("Warning", "PodsUnschedulable", new.message)
    assert waiting_event(_waiting_condition("GangIncomplete"), new, []) == WaitingEvent(
        "Warning", "PodsUnschedulable", new.message
    )
    # Same reason, new words: the transient first message must not be the last thing Events say.
    transient = _waiting_condition(
        "PodsUnschedulable", "1 of 2 pods unschedulable: cannot find enough sibling pods"
    )
    assert waiting_event(transient, new, []) == WaitingEvent("Warning", "PodsUnschedulable", new.message)
    assert waiting_event(_waiting_condition("PodsUnschedulable", new.message), new, []) is None


def test_a_moving_queue_position_posts_no_event() -> None:
    queued = PendingReason(
        WaitingReason.QUEUED_BY_KUEUE, 'Workload w queued in LocalQueue "q" (1 workload ahead): full'
    )
    before = _waiting_condition(
        "QueuedByKueue", 'Workload w queued in LocalQueue "q" (7 workloads ahead): full'
    )
    assert waiting_event(before, queued, []) is None
    other = _waiting_condition(
        "QueuedByKueue", 'Workload w queued in LocalQueue "q" (7 workloads ahead): evicted'
    )
    assert waiting_event(other, queued, []) is not None


def test_waiting_event_when_the_pods_run() -> None:
    running = [pod("a", "Running", node="n"), pod("b", "Running", node="n")]
    old = _waiting_condition("StartingContainers")
    assert waiting_event(old, None, running) == WaitingEvent("Normal", RUNNING_EVENT, "all 2 pods running")
    assert waiting_event(None, None, running) is None
    assert waiting_event(old, None, [pod("a", "Succeeded", node="n")]) is None
