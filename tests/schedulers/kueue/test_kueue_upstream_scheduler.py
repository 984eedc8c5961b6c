"""Cases of upstream's ``pkg/scheduler/scheduler_test.go`` ``TestSchedule`` (case names are upstream's), run as
one admission cycle over the core. Quantities are cpu in milli-units; ``(nominal, borrowingLimit)`` tuples
as upstream's ``Resource(cpu, nominal, borrowingLimit)``.

Ported here: the flavor-fungibility cases whose outcome depends on the borrowing level the preemption oracle
reports after its victims are gone (``PreemptionOverBorrowing`` / ``BorrowingOverPreemption``). Upstream's
expected events and ``schedulingStats`` are not modelled by the core and are not compared.
"""

from __future__ import annotations

from kueue_builders import cohort, cq, state, wl

from gangplane.api.scheduling.kueue import FlavorFungibilityPolicy as F
from gangplane.api.scheduling.kueue import PreemptionPolicy as P
from gangplane.schedulers.kueue.cycle import run_cycle
from gangplane.schedulers.kueue.flavors import Assignment, PodSetAssignment
from gangplane.schedulers.kueue.model import Fungibility, FungibilityPreference
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
