"""Upstream's ``pkg/scheduler/preemption/preemption_test.go`` ``TestPreemption`` (classical preemption), case
by case (case names are upstream's), against ``preemption.find_targets``.

As upstream: the ClusterQueues of ``defaultClusterQueues``; the incoming workload's flavors and modes are
given (``assignment``), the flavor-resources in ``Preempt`` mode are the contested ones; workloads reserved
quota at the same time, so candidate order ties go by UID (the name).

Ported: all 36 cases.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest
from kueue_builders import cohort, cq, state, wl

from gangplane.api.scheduling.kueue import PreemptionPolicy as P
from gangplane.schedulers.kueue.flavors import Assignment, PodSetAssignment
from gangplane.schedulers.kueue.preemption import Preemptor, find_targets

CPU, MEM, GI = "cpu", "memory", 2**30
CQ_R, RECLAIM = "InClusterQueue", "InCohortReclamation"


def _cohort_cq(name: str, cohort: str, borrow: float | None, mem_borrow: int | None, within: P, reclaim: P):  # type: ignore[no-untyped-def]
    quotas = {
        CPU: (6000, None if borrow is None else int(borrow * 1000), None),
        MEM: (3 * GI, mem_borrow, None),
    }
    return cq(name, {"default": quotas}, cohort=cohort, within=within, reclaim=reclaim)


def _standalone():  # type: ignore[no-untyped-def]
    """6 cpu; a second resource group: memory on alpha (3Gi), then beta (3Gi)."""
    spec = cq("standalone", {"default": {CPU: 6000}}, within=P.LOWER_PRIORITY)
    memory = cq("memory", {"alpha": {MEM: 3 * GI}, "beta": {MEM: 3 * GI}}).resource_groups[0]
    return dataclasses.replace(spec, resource_groups=(*spec.resource_groups, memory))


def _shared(name: str, nominal: float, within: P, reclaim: P):  # type: ignore[no-untyped-def]
    """A ``with_shared_cq`` member: borrowWithinCohort LowerPriority with maxPriorityThreshold 0."""
    quotas = {CPU: (int(nominal * 1000), (13 if nominal == 0 else 12) * 1000, None)}
    return cq(name, {"default": quotas}, cohort="with_shared_cq", within=within, reclaim=reclaim,
              borrow_within=P.LOWER_PRIORITY, threshold=0)  # fmt: skip


def _lend(name: str, lending: int):  # type: ignore[no-untyped-def]
    return cq(name, {"default": {CPU: (6000, None, lending * 1000)}}, cohort="cohort-lend", within=P.LOWER_PRIORITY,
              reclaim=P.LOWER_PRIORITY)  # fmt: skip


CQS = [
    _standalone(),
    _cohort_cq("c1", "cohort", 6, 3 * GI, P.LOWER_PRIORITY, P.LOWER_PRIORITY),
    _cohort_cq("c2", "cohort", 6, 3 * GI, P.NEVER, P.ANY),
    _cohort_cq("d1", "cohort-no-limits", None, None, P.LOWER_PRIORITY, P.LOWER_PRIORITY),
    _cohort_cq("d2", "cohort-no-limits", None, None, P.NEVER, P.ANY),
    _cohort_cq("l1", "legion", 12, 6 * GI, P.LOWER_PRIORITY, P.LOWER_PRIORITY),
    cq("preventStarvation", {"default": {CPU: 6000}}, within=P.LOWER_OR_NEWER_EQUAL_PRIORITY),
    _shared("a_standard", 1, P.NEVER, P.LOWER_PRIORITY),
    _shared("b_standard", 1, P.LOWER_PRIORITY, P.ANY),
    _shared("a_best_effort", 1, P.NEVER, P.LOWER_PRIORITY),
    _shared("b_best_effort", 0, P.NEVER, P.LOWER_PRIORITY),
    cq("shared", {"default": {CPU: 10_000}}, cohort="with_shared_cq"),
    _lend("lend1", 4),
    _lend("lend2", 2),
    cq("a", {"default": {CPU: 2000, MEM: 2}}, cohort="cohort-three", within=P.LOWER_PRIORITY, reclaim=P.ANY),
    cq("b", {"default": {CPU: 2000, MEM: 2}}, cohort="cohort-three"),
    cq("c", {"default": {CPU: 2000, MEM: 2}}, cohort="cohort-three"),
]
LONG_RANGE_COHORTS = (cohort("cohort-left", None, "root"), cohort("cohort-right", None, "root"))
LONG_RANGE = [
    cq("cq-left", {"default": {CPU: 10_000}}, cohort="cohort-left", reclaim=P.ANY),
    cq("cq-right", {"default": {CPU: 0}}, cohort="cohort-right"),
]

Use = dict[str, tuple[str, int]]  # resource -> (flavor, amount)


@dataclass(frozen=True)
class Case:
    target: str
    admitted: list[tuple[str, str, int, Use]]  # name, ClusterQueue, priority, usage
    incoming: tuple[int, Use | dict[tuple[str, str], int], set[str]]
    """Priority, usage (per resource, or per flavor-resource), resources in Preempt mode."""
    want: set[tuple[str, str]]
    created: dict[str, float] | None = None
    long_range: bool = False


def cpu(cores: float) -> Use:
    return {CPU: ("default", int(cores * 1000))}


def mem(flavor: str, gib: int) -> Use:
    return {MEM: (flavor, gib * GI)}


CASES = {
    "preempt lowest priority": Case(
        "standalone", [("low", "standalone", -1, cpu(2)), ("mid", "standalone", 0, cpu(2)),
                       ("high", "standalone", 1, cpu(2))], (1, cpu(2), {CPU}), {("low", CQ_R)}),
    "preempt multiple": Case(
        "standalone", [("low", "standalone", -1, cpu(2)), ("mid", "standalone", 0, cpu(2)),
                       ("high", "standalone", 1, cpu(2))], (1, cpu(3), {CPU}), {("low", CQ_R), ("mid", CQ_R)}),
    "no preemption for low priority": Case(
        "standalone", [("low", "standalone", -1, cpu(3)), ("mid", "standalone", 0, cpu(3))], (-1, cpu(1), {CPU}),
        set()),
    "not enough low priority workloads": Case(
        "standalone", [("low", "standalone", -1, cpu(3)), ("mid", "standalone", 0, cpu(3))], (0, cpu(4), {CPU}),
        set()),
    "some free quota, preempt low priority": Case(
        "standalone", [("low", "standalone", -1, cpu(1)), ("mid", "standalone", 0, cpu(1)),
                       ("high", "standalone", 1, cpu(3))], (1, cpu(2), {CPU}), {("low", CQ_R)}),
    "minimal set excludes low priority": Case(
        "standalone", [("low", "standalone", -1, cpu(1)), ("mid", "standalone", 0, cpu(2)),
                       ("high", "standalone", 1, cpu(3))], (1, cpu(2), {CPU}), {("mid", CQ_R)}),
    "only preempt workloads using the chosen flavor": Case(
        "standalone", [("low", "standalone", -1, mem("alpha", 2)), ("mid", "standalone", 0, mem("beta", 1)),
                       ("high", "standalone", 1, mem("beta", 1))], (1, {**cpu(1), **mem("beta", 2)}, {MEM}),
        {("mid", CQ_R)}),
    "reclaim quota from borrower": Case(
        "c1", [("c1-low", "c1", -1, cpu(3)), ("c2-mid", "c2", 0, cpu(3)), ("c2-high", "c2", 1, cpu(6))],
        (1, cpu(3), {CPU}), {("c2-mid", RECLAIM)}),
    "no workloads borrowing": Case(
        "c1", [("c1-high", "c1", 1, cpu(4)), ("c2-low-1", "c2", -1, cpu(4))], (1, cpu(4), {CPU}), set()),
    "not enough workloads borrowing": Case(
        "c1", [("c1-high", "c1", 1, cpu(4)), ("c2-low-1", "c2", -1, cpu(4)), ("c2-low-2", "c2", -1, cpu(4))],
        (1, cpu(4), {CPU}), set()),
    "preempting locally and borrowing other resources in cohort, without cohort candidates": Case(
        "c1", [("c1-low", "c1", -1, cpu(4)), ("c2-low-1", "c2", -1, cpu(4)), ("c2-high-2", "c2", 1, cpu(4))],
        (1, {**cpu(4), **mem("default", 5)}, {CPU, MEM}), {("c1-low", CQ_R)}),
    "preempting locally and borrowing same resource in cohort": Case(
        "c1", [("c1-med", "c1", 0, cpu(4)), ("c1-low", "c1", -1, cpu(4)), ("c2-low-1", "c2", -1, cpu(4))],
        (1, cpu(4), {CPU}), {("c1-low", CQ_R)}),
    "preempting locally and borrowing same resource in cohort; no borrowing limit in the cohort": Case(
        "d1", [("d1-med", "d1", 0, cpu(4)), ("d1-low", "d1", -1, cpu(4)), ("d2-low-1", "d2", -1, cpu(4))],
        (1, cpu(4), {CPU}), {("d1-low", CQ_R)}),
    "preempting locally and borrowing other resources in cohort, with cohort candidates": Case(
        "c1", [("c1-med", "c1", 0, cpu(4)), ("c2-low-1", "c2", -1, cpu(5)), ("c2-low-2", "c2", -1, cpu(1)),
               ("c2-low-3", "c2", -1, cpu(1))], (1, {**cpu(2), **mem("default", 5)}, {CPU, MEM}),
        {("c1-med", CQ_R)}),
    "preempting locally and not borrowing same resource in 1-queue cohort": Case(
        "l1", [("l1-med", "l1", 0, cpu(4)), ("l1-low", "l1", -1, cpu(2))], (1, cpu(4), {CPU}), {("l1-med", CQ_R)}),
    "do not reclaim borrowed quota from same priority for withinCohort=ReclaimFromLowerPriority": Case(
        "c1", [("c1", "c1", 0, cpu(2)), ("c2-1", "c2", 0, cpu(4)), ("c2-2", "c2", 0, cpu(4))], (0, cpu(4), {CPU}),
        set()),
    "reclaim borrowed quota from same priority for withinCohort=ReclaimFromAny": Case(
        "c2", [("c1-1", "c1", 0, cpu(4)), ("c1-2", "c1", 1, cpu(4)), ("c2", "c2", 0, cpu(2))], (0, cpu(4), {CPU}),
        {("c1-1", RECLAIM)}),
    "preempt from all ClusterQueues in cohort": Case(
        "c1", [("c1-low", "c1", -1, cpu(3)), ("c1-mid", "c1", 0, cpu(2)), ("c2-low", "c2", -1, cpu(3)),
               ("c2-mid", "c2", 0, cpu(4))], (0, cpu(4), {CPU}), {("c1-low", CQ_R), ("c2-low", RECLAIM)}),
    "can't preempt workloads in ClusterQueue for withinClusterQueue=Never": Case(
        "c2", [("c2-low", "c2", -1, cpu(3))], (1, cpu(4), {CPU}), set()),
    "preempt newer workloads with the same priority": Case(
        "preventStarvation", [("wl1", "preventStarvation", 2, cpu(2)), ("wl2", "preventStarvation", 1, cpu(2)),
                              ("wl3", "preventStarvation", 1, cpu(2))], (1, cpu(2), {CPU}), {("wl2", CQ_R)},
        created={"in": -15.0}),
    "use BorrowWithinCohort; allow preempting a lower-priority workload from another ClusterQueue while "
    "borrowing": Case(
        "a_standard", [("a_best_effort_low", "a_best_effort", -1, cpu(10)),
                       ("b_best_effort_low", "b_best_effort", -1, cpu(1))],
        (0, cpu(10), {CPU}), {("a_best_effort_low", "InCohortReclaimWhileBorrowing")}),
    "use BorrowWithinCohort; don't allow preempting a lower-priority workload with priority above "
    "MaxPriorityThreshold, if borrowing is required even after the preemption": Case(
        "a_standard", [("b_standard", "b_standard", 1, cpu(10))], (2, cpu(10), {CPU}), set()),
    "use BorrowWithinCohort; allow preempting a lower-priority workload with priority above MaxPriorityThreshold, "
    "if borrowing is not required after the preemption": Case(
        "a_standard", [("b_standard", "b_standard", 1, cpu(13))], (2, cpu(1), {CPU}), {("b_standard", RECLAIM)}),
    "use BorrowWithinCohort; don't allow for preemption of lower-priority workload from the same ClusterQueue": Case(
        "a_standard", [("a_standard", "a_standard", 1, cpu(13))], (2, cpu(1), {CPU}), set()),
    "use BorrowWithinCohort; only preempt from CQ if no workloads below threshold and already above nominal": Case(
        "b_standard", [("a_standard_1", "a_standard", 1, cpu(10)), ("a_standard_2", "a_standard", 1, cpu(1)),
                       ("b_standard_1", "b_standard", 1, cpu(1)), ("b_standard_2", "b_standard", 2, cpu(1))],
        (3, cpu(1), {CPU}), {("b_standard_1", CQ_R)}),
    "use BorrowWithinCohort; preempt from CQ and from other CQs with workloads below threshold": Case(
        "b_standard", [("b_standard_high", "b_standard", 2, cpu(10)), ("b_standard_mid", "b_standard", 1, cpu(1)),
                       ("a_best_effort_low", "a_best_effort", -1, cpu(1)),
                       ("a_best_effort_lower", "a_best_effort", -2, cpu(1))],
        (2, cpu(2), {CPU}), {("a_best_effort_lower", "InCohortReclaimWhileBorrowing"), ("b_standard_mid", CQ_R)}),
    "reclaim quota from lender": Case(
        "lend1", [("lend1-low", "lend1", -1, cpu(3)), ("lend2-mid", "lend2", 0, cpu(3)),
                  ("lend2-high", "lend2", 1, cpu(4))], (1, cpu(3), {CPU}), {("lend2-mid", RECLAIM)}),
    "preempt from all ClusterQueues in cohort-lend": Case(
        "lend1", [("lend1-low", "lend1", -1, cpu(3)), ("lend1-mid", "lend1", 0, cpu(2)),
                  ("lend2-low", "lend2", -1, cpu(3)), ("lend2-mid", "lend2", 0, cpu(4))],
        (0, cpu(4), {CPU}), {("lend1-low", CQ_R), ("lend2-low", RECLAIM)}),
    "cannot preempt from other ClusterQueues if exceeds requestable quota including lending limit": Case(
        "lend1", [("lend2-low", "lend2", -1, cpu(10))], (0, cpu(9), {CPU}), set()),
    "preemptions from cq when target queue is exhausted for the single requested resource": Case(
        "a", [("a1", "a", -2, cpu(1)), ("a2", "a", -2, cpu(1)), ("a3", "a", -1, cpu(1)), ("b1", "b", 0, cpu(1)),
              ("b2", "b", 0, cpu(1)), ("b3", "b", 0, cpu(1))], (0, cpu(2), {CPU}), {("a1", CQ_R), ("a2", CQ_R)}),
    "preemptions from cq when target queue is exhausted for two requested resources": Case(
        "a", [(n, q, p, {**cpu(1), MEM: ("default", 1)}) for n, q, p in (
            ("a1", "a", -2), ("a2", "a", -2), ("a3", "a", -1), ("b1", "b", 0), ("b2", "b", 0), ("b3", "b", 0))],
        (0, {**cpu(2), MEM: ("default", 2)}, {CPU, MEM}), {("a1", CQ_R), ("a2", CQ_R)}),
    "preemptions from cq when target queue is exhausted for one requested resource, but not the other": Case(
        "a", [("a1", "a", -2, cpu(1)), ("a2", "a", -2, cpu(1)), ("a3", "a", -1, cpu(1)), ("b1", "b", 0, cpu(1)),
              ("b2", "b", 0, cpu(1)), ("b3", "b", 0, cpu(1))], (0, {**cpu(2), MEM: ("default", 2)}, {CPU, MEM}),
        {("a1", CQ_R), ("a2", CQ_R)}),
    "allow preemption from other cluster queues if target cq is not exhausted for the requested resource": Case(
        "a", [("a1", "a", -1, cpu(1)), ("b1", "b", 0, cpu(1)), ("b2", "b", 0, cpu(1)), ("b3", "b", 0, cpu(1)),
              ("b4", "b", 0, cpu(1)), ("b5", "b", -1, cpu(1))], (0, cpu(2), {CPU}), {("a1", CQ_R), ("b5", RECLAIM)}),
    "reclaim quota if workload requests 0 resources for a resource at nominal quota": Case(
        "c1", [("c1-low", "c1", -1, {**cpu(3), **mem("default", 3)}), ("c2-mid", "c2", 0, cpu(3)),
               ("c2-high", "c2", 1, cpu(6))], (1, {**cpu(3), MEM: ("default", 0)}, {CPU}), {("c2-mid", RECLAIM)}),
    # Two pod sets asking memory of two flavors: the incoming usage is given per flavor-resource.
    "each podset preempts a different flavor": Case(
        "standalone",
        [("low-alpha", "standalone", -1, mem("alpha", 2)), ("low-beta", "standalone", -1, mem("beta", 2))],
        (0, {("alpha", MEM): 2 * GI, ("beta", MEM): 2 * GI}, {MEM}), {("low-alpha", CQ_R), ("low-beta", CQ_R)}),
    "long range preemption": Case(
        "cq-left", [("to-be-preempted", "cq-right", 0, cpu(5))], (0, cpu(8), {CPU}), {("to-be-preempted", RECLAIM)},
        long_range=True),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_preemption(name: str) -> None:
    case = CASES[name]
    s = state(*LONG_RANGE, cohorts=LONG_RANGE_COHORTS) if case.long_range else state(*CQS)
    for wl_name, cq_name, priority, use in case.admitted:
        usage = {(flavor, r): amount for r, (flavor, amount) in use.items()}
        flavors = {r: flavor for r, (flavor, _) in use.items()}
        request = wl(wl_name, cq_name, {r: a for r, (_, a) in use.items()}, priority=priority)
        s.restore_admitted(request, Assignment([PodSetAssignment("main", 1, flavors, usage)]), 0.0, True)
    priority, use, contested = case.incoming
    requests = (
        {(v[0], k): v[1] for k, v in use.items()} if isinstance(next(iter(use.values())), tuple) else use
    )
    frs = {fr for fr in requests if fr[1] in contested}
    preemptor = Preemptor("ns/in", case.target, priority, (case.created or {}).get("in", 0.0))
    view = s.tree.clone()
    targets = find_targets(preemptor, s.cluster_queues[case.target], view, requests, frs, s.admitted)
    assert {(t.workload.key.split("/", 1)[1], str(t.reason)) for t in targets} == case.want
