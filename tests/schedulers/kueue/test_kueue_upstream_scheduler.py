"""Cases of upstream's ``pkg/scheduler/scheduler_test.go`` ``TestSchedule`` (case names are upstream's), run as
one admission cycle over the core. Quantities are cpu in milli-units; ``(nominal, borrowingLimit)`` tuples
as upstream's ``Resource(cpu, nominal, borrowingLimit)``.

Ported here: the flavor-fungibility cases whose outcome depends on the borrowing level the preemption oracle
reports after its victims are gone (``PreemptionOverBorrowing`` / ``BorrowingOverPreemption``), and five
cases of ``scheduler_fs_test.go`` ``TestScheduleForFairSharing``. Upstream's expected events and
``schedulingStats`` are not modelled by the core and are not compared.
"""

from __future__ import annotations

from kueue_builders import cohort, cq, state, wl

from gangplane.api.scheduling.kueue import FlavorFungibilityPolicy as F
from gangplane.api.scheduling.kueue import PreemptionPolicy as P
from gangplane.schedulers.kueue.cycle import run_cycle
from gangplane.schedulers.kueue.fairsharing import DEFAULT_STRATEGIES
from gangplane.schedulers.kueue.flavors import Assignment, PodSetAssignment
from gangplane.schedulers.kueue.model import ClusterQueueSpec, CohortSpec, Fungibility, FungibilityPreference
from gangplane.schedulers.kueue.state import KueueState

CPU = "cpu"
TRY_NEXT = {"when_can_borrow": F.TRY_NEXT_FLAVOR, "when_can_preempt": F.TRY_NEXT_FLAVOR}


def _admit(s: KueueState, name: str, cq_name: str, flavor: str, cpu: int, priority: int) -> None:
    usage = {(flavor, CPU): cpu}
    assignment = Assignment([PodSetAssignment("main", 1, {CPU: flavor}, usage)])
    s.restore_admitted(wl(name, cq_name, {CPU: cpu}, priority=priority), assignment, 0.0, True)


def _one_cycle(
    s: KueueState, name: str, cq_name: str, cpu: int, priority: int
) -> tuple[list[str], list[str]]:
    """Queue ``name``, run one cycle past configure's batched requeue: (admitted with flavor, evicted)."""
    s.add_workload(wl(name, cq_name, {CPU: cpu}, priority=priority, created=1), 1)
    result = run_cycle(s, 2)
    admitted = [
        f"{w.key.split('/')[1]}@{w.assignment.pod_sets[0].flavors[CPU]}"
        for w in result.admitted
        if w.assignment
    ]
    return admitted, [e.key.split("/")[1] for e in result.evictions]


def _lender_pair(prefix: str, preference: FungibilityPreference) -> KueueState:
    """``<prefix>-cq`` (on-demand 5 no borrowing, spot 0 borrowing up to 5) running ``low-<prefix>`` (5 cpu,
    priority -1) on on-demand, and ``<prefix>-lender`` with 5 spot, in one cohort."""
    fungibility = Fungibility(**TRY_NEXT, preference=preference)
    s = state(
        cq(f"{prefix}-cq", {"on-demand": {CPU: (5000, 0, None)}, "spot": {CPU: (0, 5000, None)}},
           cohort=f"{prefix}-cohort", within=P.LOWER_PRIORITY, fungibility=fungibility),
        cq(f"{prefix}-lender", {"on-demand": {CPU: 0}, "spot": {CPU: 5000}}, cohort=f"{prefix}-cohort"),
    )  # fmt: skip
    _admit(s, f"low-{prefix}", f"{prefix}-cq", "on-demand", 5000, -1)
    return s


def test_preemption_over_borrowing_preempt_in_first_flavor_instead_of_borrowing_in_second() -> None:
    """``PreemptionOverBorrowing preference: preempt in first flavor instead of borrowing in second``."""
    s = _lender_pair("pob", FungibilityPreference.PREEMPTION_OVER_BORROWING)
    admitted, evicted = _one_cycle(s, "high-pob", "pob-cq", 5000, 0)
    assert (admitted, evicted) == ([], ["low-pob"])
    high = s.workloads["ns/high-pob"]
    assert high.conditions["QuotaReserved"].message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor on-demand, 5 more "
        "needed. Pending the preemption of 1 workload(s)"
    )


def test_preemption_over_borrowing_select_fitting_second_flavor_over_first_with_no_candidates() -> None:
    """``PreemptionOverBorrowing preference: select fitting second flavor over first flavor with no preemption
    candidates``: the idle sibling keeps on-demand sourceable one level higher than spot, which must not let
    the unschedulable on-demand flavor outrank spot."""
    pob = Fungibility(**TRY_NEXT, preference=FungibilityPreference.PREEMPTION_OVER_BORROWING)
    s = state(
        cq("nopc-cq", {"on-demand": {CPU: (5000, 0, None)}, "spot": {CPU: 0}}, cohort="nopc-mid",
           within=P.LOWER_PRIORITY, fungibility=pob),
        cq("nopc-sibling", {"on-demand": {CPU: 5000}, "spot": {CPU: 0}}, cohort="nopc-mid"),
        cohorts=(cohort("nopc-root", {"on-demand": {CPU: 0}, "spot": {CPU: 5000}}),
                 cohort("nopc-mid", None, "nopc-root")),
    )  # fmt: skip
    _admit(s, "admitted-nopc", "nopc-cq", "on-demand", 5000, 0)
    assert _one_cycle(s, "pending-nopc", "nopc-cq", 5000, 0) == (["pending-nopc@spot"], [])


def test_borrowing_over_preemption_borrow_in_second_flavor_instead_of_preempting_in_first() -> None:
    """``BorrowingOverPreemption preference: borrow in second flavor instead of preempting in first``."""
    s = _lender_pair("bop", FungibilityPreference.BORROWING_OVER_PREEMPTION)
    assert _one_cycle(s, "high-bop", "bop-cq", 5000, 0) == (["high-bop@spot"], [])


# ---------------------------------------------------------------- scheduler_fs_test.go TestScheduleForFairSharing

NO_LONGER_FITS = ("WaitingForQuota", "Workload no longer fits after processing another workload")


def _fair(*cqs: ClusterQueueSpec, cohorts: tuple[CohortSpec, ...] = ()) -> KueueState:
    return state(*cqs, cohorts=cohorts, fair=DEFAULT_STRATEGIES)


def _queued(s: KueueState, name: str, cq_name: str, cpu: int, *, count: int = 1, priority: int = 0,
            created: float = 1.0) -> None:  # fmt: skip
    s.add_workload(wl(name, cq_name, {CPU: cpu}, count=count, priority=priority, created=created), 1)


def _reason(s: KueueState, name: str) -> tuple[str, str]:
    condition = s.workloads[f"ns/{name}"].conditions["QuotaReserved"]
    return condition.reason, condition.message


def _admitted_now(s: KueueState) -> list[str]:
    result = run_cycle(s, 2)  # past configure's batched requeue
    return sorted(w.key.split("/")[1] for w in result.admitted)


def _eng(third: str, on_demand: int) -> KueueState:
    """Upstream's eng-alpha and eng-beta (cohort eng) and a third ClusterQueue with ``on_demand`` cpu, no
    borrowing; fair sharing on."""
    return _fair(
        cq("eng-alpha", {"on-demand": {CPU: (50_000, 50_000, None)}, "spot": {CPU: (100_000, 0, None)}},
           cohort="eng"),
        cq("eng-beta", {"on-demand": {CPU: (50_000, 10_000, None)}, "spot": {CPU: (0, 100_000, None)}},
           cohort="eng", reclaim=P.ANY, within=P.LOWER_PRIORITY),
        cq(third, {"on-demand": {CPU: (on_demand, 0, None)}}, cohort="eng"),
    )  # fmt: skip


def test_with_fair_sharing_schedule_workload_with_lowest_share_first() -> None:
    """``with fair sharing: schedule workload with lowest share first``: eng-alpha (at nominal) and eng-beta
    (borrowing half the shared quota) both have a head; eng-alpha's has the lower share after admission."""
    on_demand = "on-demand"
    s = _eng("eng-shared", 10_000)
    for name, cq_name, count in (("all_nominal", "eng-alpha", 50), ("borrowing", "eng-beta", 55)):
        usage = {(on_demand, CPU): count * 1000}
        assignment = Assignment([PodSetAssignment("one", count, {CPU: on_demand}, usage)])
        s.restore_admitted(wl(name, cq_name, {CPU: 1000}, count=count), assignment, 0.0, True)
    _queued(s, "older_new", "eng-beta", 1000, created=0.0)
    _queued(s, "new", "eng-alpha", 1000, count=5, created=60.0)
    assert _admitted_now(s) == ["new"]
    assert s.workloads["ns/new"].assignment.pod_sets[0].flavors == {CPU: on_demand}  # type: ignore[union-attr]
    assert _reason(s, "older_new") == NO_LONGER_FITS


def _b_and_c() -> KueueState:
    """Cohort A lends 10 cpu on-demand to ClusterQueues b and c, which have none of their own."""
    return _fair(cq("b", {"on-demand": {CPU: 0}}, cohort="A"), cq("c", {"on-demand": {CPU: 0}}, cohort="A"),
                 cohorts=(cohort("A", {"on-demand": {CPU: 10_000}}), cohort("B")))  # fmt: skip


def test_fair_sharing_schedule_highest_priority_first() -> None:
    """``fair sharing schedule highest priority first``."""
    s = _b_and_c()
    _queued(s, "b1", "b", 10_000, priority=99)
    _queued(s, "c1", "c", 10_000, priority=101)
    assert _admitted_now(s) == ["c1"]
    assert _reason(s, "b1") == NO_LONGER_FITS


def test_fair_sharing_schedule_earliest_timestamp_first() -> None:
    """``fair sharing schedule earliest timestamp first``."""
    s = _b_and_c()
    _queued(s, "b1", "b", 10_000, priority=101, created=2.0)
    _queued(s, "c1", "c", 10_000, priority=101, created=1.0)
    assert _admitted_now(s) == ["c1"]
    assert _reason(s, "b1") == NO_LONGER_FITS


def test_hierarchical_fair_sharing_schedule_workload_which_wins_tournament() -> None:
    """``hierarchical fair sharing schedule workload which wins tournament``: cohort A (200 cpu) over B (d, e)
    and C (f, g); d uses 10, e 20, g 100. B's subtree shares less than C's, and within B d less than e: d1
    (70) wins and takes what is left; e1, f1 and g1 no longer fit."""
    zero = {"on-demand": {CPU: 0}}
    tree = (cohort("A", {"on-demand": {CPU: 200_000}}), cohort("B", None, "A"), cohort("C", None, "A"))
    s = _fair(
        *(cq(name, zero, cohort=parent) for name, parent in zip("defg", "BBCC", strict=True)), cohorts=tree
    )
    for name, cq_name, cpu in (("d0", "d", 10_000), ("e0", "e", 20_000), ("g0", "g", 100_000)):
        _admit(s, name, cq_name, "on-demand", cpu, 0)
    for name, cq_name, cpu in (
        ("d1", "d", 70_000),
        ("e1", "e", 61_000),
        ("f1", "f", 1_000),
        ("g1", "g", 1_000),
    ):
        _queued(s, name, cq_name, cpu)
    assert _admitted_now(s) == ["d1"]
    assert [_reason(s, n) for n in ("e1", "f1", "g1")] == [NO_LONGER_FITS] * 3


def test_with_fair_sharing_preempt_workload_from_cq_with_the_highest_share() -> None:
    """``with fair sharing: preempt workload from CQ with the highest share``: on-demand is full (alpha 80 of
    its 50 + 50, gamma 70 of 50 with no borrowing), spot is full; eng-beta's 30-cpu preemptor, within its
    nominal quota, reclaims one workload from each of the two ClusterQueues over their nominal quota."""
    on_demand, spot = "on-demand", "spot"
    s = _eng("eng-gamma", 50_000)
    _admit(s, "all_spot", "eng-alpha", spot, 100_000, 0)
    for name, cq_name, cpu in (("alpha1", "eng-alpha", 20), ("alpha2", "eng-alpha", 20), ("alpha3", "eng-alpha", 20),
                               ("alpha4", "eng-alpha", 20), ("gamma1", "eng-gamma", 10), ("gamma2", "eng-gamma", 20),
                               ("gamma3", "eng-gamma", 20), ("gamma4", "eng-gamma", 20)):  # fmt: skip
        _admit(s, name, cq_name, on_demand, cpu * 1000, 0)
    _queued(s, "preemptor", "eng-beta", 30_000)
    result = run_cycle(s, 2)
    victims = {(e.key.split("/")[1], str(e.preemption_reason)) for e in result.evictions}
    assert victims == {("alpha1", "InCohortReclamation"), ("gamma1", "InCohortReclamation")}
    assert _reason(s, "preemptor") == (
        "WaitingForPreemptedWorkloads",
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor on-demand, 30 more "
        "needed, insufficient unused quota for cpu in flavor spot, 30 more needed. Pending the preemption of 2 "
        "workload(s)",
    )
