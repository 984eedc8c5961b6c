"""Upstream's ``pkg/scheduler/preemption/preemption_hierarchical_test.go`` ``TestHierarchicalPreemptions``,
case by case (case names are upstream's), against ``preemption.find_targets`` (classical preemption in
cohort trees).

As upstream, the incoming workload asks for cpu (and memory where said) on flavor ``default`` in Preempt
mode; every ClusterQueue preempts ``withinClusterQueue: LowerPriority``, and ``reclaimWithinCohort: Any``
unless the case says; the preemptor ``q`` of some cases also has ``borrowWithinCohort`` LowerPriority with
``maxPriorityThreshold: 0``. A ClusterQueue upstream declares with an empty flavor here has quota 0.

Ported: 14 of 15 cases. Not ported: "prefer to preempt evicted workloads": the core releases a workload's
quota when it is evicted, so an evicted workload still holding quota (upstream's candidate) never exists here.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from kueue_builders import cohort, cq, state, wl

from gangplane.api.scheduling.kueue import PreemptionPolicy as P
from gangplane.schedulers.kueue.flavors import Assignment, PodSetAssignment
from gangplane.schedulers.kueue.model import ClusterQueueSpec, CohortSpec
from gangplane.schedulers.kueue.preemption import Preemptor, find_targets

CPU, MEM, GI = "cpu", "memory", 2**30
CQ_R, RECLAIM, WHILE_BORROWING = "InClusterQueue", "InCohortReclamation", "InCohortReclaimWhileBorrowing"


def q(name: str, parent: str, cpu: float = 0, *, reclaim: P = P.ANY, borrow_within: bool = False,
      lending: float | None = None, memory: int = 0) -> ClusterQueueSpec:  # fmt: skip
    quotas: dict[str, object] = {
        CPU: (int(cpu * 1000), None, None if lending is None else int(lending * 1000))
    }
    if memory:
        quotas[MEM] = memory
    extra = {"borrow_within": P.LOWER_PRIORITY, "threshold": 0} if borrow_within else {}
    return cq(name, {"default": quotas}, cohort=parent, within=P.LOWER_PRIORITY, reclaim=reclaim, **extra)  # type: ignore[arg-type]


def co(name: str, parent: str | None = None, cpu: float = 0, memory: int = 0) -> CohortSpec:
    quotas = {**({CPU: int(cpu * 1000)} if cpu else {}), **({MEM: memory} if memory else {})}
    return cohort(name, {"default": quotas} if quotas else None, parent)


@dataclass(frozen=True)
class Case:
    cohorts: tuple[CohortSpec, ...]
    cqs: tuple[ClusterQueueSpec, ...]
    admitted: list[tuple[str, str, int, float, int]]  # name, ClusterQueue, priority, cpu, memory bytes
    incoming: tuple[int, float, int]  # priority, cpu, memory
    want: set[tuple[str, str]]
    target: str = "q"


R_C2 = (co("r"), co("c", "r", 2))
R1_C4 = (co("r", None, 1), co("c", "r", 4))
CASES = {
    "preempt with hierarchical advantage": Case(
        R_C2, (q("q", "c"), q("q_borrowing", "r")), [("admitted2", "q_borrowing", 0, 2, 0)], (0, 2, 0),
        {("admitted2", RECLAIM)}),
    "avoid queues within nominal quota": Case(
        R_C2, (q("q_nominal", "r", 2), q("q", "c"), q("q_borrowing", "r")),
        [("admitted1", "q_nominal", -10, 2, 0), ("admitted2", "q_borrowing", 0, 2, 0)], (0, 2, 0),
        {("admitted2", RECLAIM)}),
    "preempt multiple with hierarchical advantage": Case(
        R_C2, (q("q", "c"), q("q_borrowing", "r")),
        [("admitted1", "q_borrowing", 1, 1, 0), ("admitted2", "q_borrowing", 2, 1, 0)], (0, 2, 0),
        {("admitted1", RECLAIM), ("admitted2", RECLAIM)}),
    "preempt in cohort and own CQ": Case(
        (co("r"), co("c", "r", 3)), (q("q", "c", borrow_within=True), q("q_same_cohort", "c")),
        [("admitted_not_preemptible", "q_same_cohort", 1, 1, 0), ("admitted_preemptible", "q_same_cohort", 0, 2, 0),
         ("admitted_own_queue", "q", -1, 1, 0)], (1, 2, 0),
        {("admitted_own_queue", CQ_R), ("admitted_preemptible", WHILE_BORROWING)}),
    "prefer to preempt hierarchical candidate": Case(
        R_C2, (q("q", "c"), q("q_borrowing", "r")),
        [("admitted_borrowing", "q_borrowing", 1, 1, 0), ("admitted_same_queue", "q", -2, 1, 0)], (0, 1, 0),
        {("admitted_borrowing", RECLAIM)}),
    "forced to preempt priority candidate": Case(
        R_C2, (q("q", "c", borrow_within=True), q("q_nominal", "r", 2), q("q_same_cohort", "c")),
        [("admitted_nominal", "q_nominal", -10, 2, 0), ("admitted_same_cohort", "q_same_cohort", -1, 2, 0)],
        (0, 2, 0), {("admitted_same_cohort", WHILE_BORROWING)}),
    "incoming workload fits in CQ nominal quota": Case(
        R_C2, (q("q", "c", 4), q("q_borrowing", "r"), q("q_same_cohort", "c")),
        [("admitted_borrowing", "q_borrowing", 10, 3, 0), ("admitted_same_cohort", "q_same_cohort", 10, 3, 0)],
        (0, 4, 0), {("admitted_borrowing", RECLAIM), ("admitted_same_cohort", RECLAIM)}),
    "preempt hierarchical and priority candidates": Case(
        R1_C4, (q("q", "c", reclaim=P.LOWER_PRIORITY, borrow_within=True), q("q_borrowing", "r"),
                q("q_same_cohort", "c")),
        [("admitted_borrowing", "q_borrowing", -1, 2, 0),
         ("admitted_same_cohort_preemptible", "q_same_cohort", -1, 1, 0),
         ("admitted_borrowing_not_preemptible", "q_borrowing", 1, 2, 0)], (0, 3, 0),
        {("admitted_borrowing", RECLAIM), ("admitted_same_cohort_preemptible", WHILE_BORROWING)}),
    "preempt hierarchical candidates and inside CQ": Case(
        R1_C4, (q("q", "c", reclaim=P.LOWER_PRIORITY, borrow_within=True), q("q_borrowing", "r"),
                q("q_same_cohort", "c")),
        [("admitted_borrowing", "q_borrowing", -1, 2, 0), ("admitted_same_queue_preemptible", "q", -1, 1, 0),
         ("admitted_borrowing_not_preemptible", "q_borrowing", 1, 2, 0)], (0, 3, 0),
        {("admitted_borrowing", RECLAIM), ("admitted_same_queue_preemptible", CQ_R)}),
    "reclaim nominal quota from lowest priority workload, excluding non-borrowing": Case(
        (co("r"), co("c", "r", 3)), (q("q", "c"), q("q_borrowing", "r"), q("q_nominal", "r", 2)),
        [("admitted_borrowing_prio_8", "q_borrowing", 8, 1, 0), ("admitted_borrowing_prio_9", "q_borrowing", 9, 1, 0),
         ("admitted_borrowing_prio_10", "q_borrowing", 9, 1, 0), ("admitted_nominal", "q_nominal", -2, 2, 0)],
        (0, 1, 0), {("admitted_borrowing_prio_8", RECLAIM)}),
    "infeasible preemption all available workloads in pruned subtrees": Case(
        (co("r"), co("c", "r", 2), co("c_other", "r", 2)),
        (q("q_other", "c_other"), q("q", "c"), q("q_same_cohort", "c")),
        [("admitted_other_1", "q_other", -10, 1, 0), ("admitted_other_2", "q_other", -10, 1, 0),
         ("admitted_same_cohort", "q_same_cohort", 0, 2, 0)], (0, 2, 0), set()),
    "hiearchical preemption with multiple resources": Case(
        (co("r", None, 3), co("c", "r", 4, 4 * GI)), (q("q", "c"), q("q_borrowing", "r"), q("q_same_cohort", "c")),
        [("admitted_borrowing", "q_borrowing", 0, 3, GI), ("admitted_same_cohort", "q_same_cohort", -2, 1, 3 * GI)],
        (-2, 2, GI), {("admitted_borrowing", RECLAIM)}),
    "respect lending limits": Case(
        R_C2, (q("q", "c", 3, lending=2), q("q_borrowing", "r")), [("admitted_borrowing", "q_borrowing", 0, 4, 0)],
        (-2, 5, 0), {("admitted_borrowing", RECLAIM)}),
    "reclaim in complex hierarchy": Case(
        (co("r"), co("c11", "r", 4), co("c12", "r", 4), co("c21", "c11", 4), co("c22", "c11", 4), co("c23", "c11", 4),
         co("c31", "c21", 4), co("c32", "c21", 4)),
        (q("q1", "c12"), q("q2", "c23"), q("q3", "c22"), q("q4", "c32"), q("q5", "c31")),
        [("admitted_borrowing_1", "q1", -6, 4, 0), ("admitted_borrowing_2", "q1", -5, 4, 0),
         ("admitted_borrowing_3", "q2", -9, 4, 0), ("admitted_borrowing_4", "q2", -10, 4, 0),
         ("admitted_borrowing_5", "q3", -4, 4, 0), ("admitted_borrowing_6", "q3", -3, 3, 0),
         ("admitted_borrowing_7", "q4", 4, 2, 0), ("admitted_borrowing_8", "q4", 2, 3, 0)],
        (-2, 7, 0), {("admitted_borrowing_1", RECLAIM), ("admitted_borrowing_4", RECLAIM)}, target="q5"),
}  # fmt: skip


def _usage(cpu: float, memory: int) -> dict[tuple[str, str], int]:
    return {("default", CPU): int(cpu * 1000), **({("default", MEM): memory} if memory else {})}


@pytest.mark.parametrize("name", list(CASES))
def test_hierarchical_preemptions(name: str) -> None:
    case = CASES[name]
    s = state(*case.cqs, cohorts=case.cohorts)
    for wl_name, cq_name, priority, cpu, memory in case.admitted:
        usage = _usage(cpu, memory)
        flavors = {r: f for f, r in usage}
        request = wl(wl_name, cq_name, {r: a for (_, r), a in usage.items()}, priority=priority)
        s.restore_admitted(request, Assignment([PodSetAssignment("main", 1, flavors, usage)]), 0.0, True)
    priority, cpu, memory = case.incoming
    requests = _usage(cpu, memory)
    targets = find_targets(Preemptor("ns/in", case.target, priority, 0.0), s.cluster_queues[case.target],
                           s.tree.clone(), requests, set(requests), s.admitted)  # fmt: skip
    assert {(t.workload.key.split("/", 1)[1], str(t.reason)) for t in targets} == case.want
