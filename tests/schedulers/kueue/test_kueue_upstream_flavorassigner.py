"""Upstream's ``pkg/scheduler/flavorassigner/flavorassigner_test.go`` ``TestReclaimBeforePriorityPreemption``
and ``TestHierarchical``, case by case (case names are upstream's), against ``flavors.assign_flavors``.

As upstream, the preemption oracle is a stub: per flavor-resource a (possibility, borrowing after preemption)
pair, ``Preempt, 0`` for any other (upstream's ``testOracle``). ``TestAssignFlavors`` (~60 cases, most about
LeaderWorkerSet groups, TAS, reclaimable pods and workload slices, which the core does not model) is not
ported case by case; ``test_kueue_flavors.py`` covers its basic cases by behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from kueue_builders import cohort, cq, wl

from gangplane.api.scheduling.kueue import FlavorFungibilityPolicy as F
from gangplane.api.scheduling.kueue import PreemptionPolicy as P
from gangplane.schedulers.kueue.flavors import assign_flavors
from gangplane.schedulers.kueue.model import (
    AssignmentMode,
    ClusterQueueSpec,
    CohortSpec,
    FlavorMode,
    FlavorResource,
    FlavorSpec,
    Fungibility,
    FungibilityPreference,
)
from gangplane.schedulers.kueue.quota import QuotaTree

PREEMPT, RECLAIM, NO_CANDIDATES = FlavorMode.PREEMPT, FlavorMode.RECLAIM, FlavorMode.NO_CANDIDATES
Simulation = dict[FlavorResource, tuple[FlavorMode, int]]


@dataclass(frozen=True)
class Case:
    requests: dict[str, int]
    test_usage: dict[FlavorResource, int]
    other_usage: dict[FlavorResource, int] = field(default_factory=dict)
    simulation: Simulation = field(default_factory=dict)
    fungibility: Fungibility | None = None
    want_mode: AssignmentMode = AssignmentMode.FIT
    want: dict[str, str] = field(default_factory=dict)
    test_flavors: dict[str, dict[str, object]] | None = None


def _assign(
    case: Case, cqs: list[ClusterQueueSpec], cohorts: tuple[CohortSpec, ...], flavors: list[str]
) -> None:
    tree = QuotaTree(cqs, cohorts)
    tree.add_usage("test-clusterqueue", case.test_usage)
    tree.add_usage("other-clusterqueue", case.other_usage)

    def oracle(fr: FlavorResource, amount: int) -> tuple[FlavorMode, int]:
        return case.simulation.get(fr, (PREEMPT, 0))

    spec = cqs[0]
    result = assign_flavors(
        wl("w", spec.name, case.requests), spec, tree, {f: FlavorSpec(f) for f in flavors}, oracle
    )
    assert result.mode == case.want_mode
    assert result.pod_sets[0].flavors == case.want


# ---------------------------------------------------------------- TestReclaimBeforePriorityPreemption

_TRY_NEXT = Fungibility(when_can_preempt=F.TRY_NEXT_FLAVOR)
RECLAIM_CASES = {
    "Select first flavor which fits": Case(
        {"gpu": 10}, {("uno", "gpu"): 1}, {("due", "gpu"): 1}, want={"gpu": "tre"}),
    "Select first flavor where gpu reclamation is possible": Case(
        {"gpu": 10}, {("uno", "gpu"): 1}, {("due", "gpu"): 1, ("tre", "gpu"): 1},
        {("uno", "gpu"): (PREEMPT, 0), ("due", "gpu"): (RECLAIM, 0)},
        want_mode=AssignmentMode.PREEMPT, want={"gpu": "due"}),
    "Select first flavor when flavor fungibility is disabled": Case(
        {"gpu": 10}, {("uno", "gpu"): 1}, {("due", "gpu"): 1, ("tre", "gpu"): 1},
        fungibility=Fungibility(when_can_preempt=F.MAY_STOP_SEARCH), want_mode=AssignmentMode.PREEMPT,
        want={"gpu": "uno"}),
    "Select first flavor when flavor fungibility is disabled; using deprecated WhenCanPreempt=MayStopSearch": Case(
        {"gpu": 10}, {("uno", "gpu"): 1}, {("due", "gpu"): 1, ("tre", "gpu"): 1},
        fungibility=Fungibility(when_can_preempt=F.MAY_STOP_SEARCH), want_mode=AssignmentMode.PREEMPT,
        want={"gpu": "uno"}),
    "Select first flavor where priority based preemption is possible": Case(
        {"gpu": 10}, {("uno", "gpu"): 1, ("due", "gpu"): 1, ("tre", "gpu"): 1},
        want_mode=AssignmentMode.PREEMPT, want={"gpu": "uno"}),
    "Select second flavor where gpu reclamation is possible, as compute Fits": Case(
        {"gpu": 10, "compute": 10}, {("uno", "gpu"): 1, ("uno", "compute"): 1, ("due", "compute"): 1},
        {("due", "gpu"): 1, ("tre", "gpu"): 1},
        {("uno", "gpu"): (PREEMPT, 0), ("due", "gpu"): (RECLAIM, 0), ("tre", "gpu"): (RECLAIM, 0)},
        want_mode=AssignmentMode.PREEMPT, want={"gpu": "tre", "compute": "tre"}),
}  # fmt: skip


@pytest.mark.parametrize("name", list(RECLAIM_CASES))
def test_reclaim_before_priority_preemption(name: str) -> None:
    case = RECLAIM_CASES[name]
    flavors = ["uno", "due", "tre"]
    test = cq("test-clusterqueue", {f: {"compute": 10, "gpu": 10} for f in flavors}, cohort="cohort",
              within=P.LOWER_PRIORITY, reclaim=P.LOWER_PRIORITY, fungibility=case.fungibility or _TRY_NEXT)  # fmt: skip
    other = cq("other-clusterqueue", {f: {"compute": 0, "gpu": 0} for f in flavors}, cohort="cohort")
    _assign(case, [test, other], (), flavors)


# ---------------------------------------------------------------- TestHierarchical

CPU = "cpu"
HIERARCHICAL_CASES = {
    "Select the top flavor": Case(
        {CPU: 4000}, {("one", CPU): 4000}, {("two", CPU): 4000}, want={CPU: "three"}),
    "Select the first flavor which fits": Case({CPU: 4000}, {("one", CPU): 4000}, want={CPU: "two"}),
    "Select deeper-borrowing flavor that fits when shallower-borrowing flavor has no preemption candidates": Case(
        {CPU: 4000}, {("one", CPU): 4000}, simulation={("one", CPU): (NO_CANDIDATES, 1)},
        fungibility=Fungibility(F.TRY_NEXT_FLAVOR, F.TRY_NEXT_FLAVOR, FungibilityPreference.PREEMPTION_OVER_BORROWING),
        want={CPU: "two"}, test_flavors={"one": {CPU: (4000, 0, None)}, "two": {CPU: 0}, "three": {CPU: 0}}),
}  # fmt: skip


@pytest.mark.parametrize("name", list(HIERARCHICAL_CASES))
def test_hierarchical(name: str) -> None:
    """Cohorts three <- two <- one, each lending 4 cpu of its own flavor; the test ClusterQueue sits in one,
    the other in two, both with no quota of their own (unless the case says)."""
    case = HIERARCHICAL_CASES[name]
    flavors = ["one", "two", "three"]
    cohorts = (cohort("three", {"three": {CPU: 4000}}), cohort("two", {"two": {CPU: 4000}}, "three"),
               cohort("one", {"one": {CPU: 4000}}, "two"))  # fmt: skip
    own = case.test_flavors or {f: {CPU: 0} for f in flavors}
    test = cq("test-clusterqueue", own, cohort="one", within=P.LOWER_PRIORITY,  # type: ignore[arg-type]
              reclaim=P.LOWER_PRIORITY, fungibility=case.fungibility or _TRY_NEXT)  # fmt: skip
    other = cq("other-clusterqueue", {f: {CPU: 0} for f in flavors}, cohort="two")
    _assign(case, [test, other], cohorts, flavors)
