"""Upstream's ``pkg/scheduler/preemption/preemption_test.go`` ``TestPreemption`` (classical preemption), case
by case (case names are upstream's), against ``preemption.find_targets``.

As upstream: the ClusterQueues of ``defaultClusterQueues``; the incoming workload's flavors and modes are
given (``assignment``), the flavor-resources in ``Preempt`` mode are the contested ones; workloads reserved
quota at the same time, so candidate order ties go by UID (the name).

Ported: the cases on the standalone, ``cohort`` (c1, c2), ``cohort-no-limits`` (d1, d2), ``legion`` (l1) and
``preventStarvation`` ClusterQueues. Not ported: "reclaim quota if workload requests 0 resources for a resource
at nominal quota" and "each podset preempts a different flavor" (multi-pod-set assignments the table builds
by hand), and the ``BorrowWithinCohort``, lending-limit and exhausted-queue cases after them (their own
ClusterQueue sets); ``test_kueue_scenarios.py`` covers those behaviours.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest
from kueue_builders import cq, state, wl

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


CQS = [
    _standalone(),
    _cohort_cq("c1", "cohort", 6, 3 * GI, P.LOWER_PRIORITY, P.LOWER_PRIORITY),
    _cohort_cq("c2", "cohort", 6, 3 * GI, P.NEVER, P.ANY),
    _cohort_cq("d1", "cohort-no-limits", None, None, P.LOWER_PRIORITY, P.LOWER_PRIORITY),
    _cohort_cq("d2", "cohort-no-limits", None, None, P.NEVER, P.ANY),
    _cohort_cq("l1", "legion", 12, 6 * GI, P.LOWER_PRIORITY, P.LOWER_PRIORITY),
    cq("preventStarvation", {"default": {CPU: 6000}}, within=P.LOWER_OR_NEWER_EQUAL_PRIORITY),
]

Use = dict[str, tuple[str, int]]  # resource -> (flavor, amount)


@dataclass(frozen=True)
class Case:
    target: str
    admitted: list[tuple[str, str, int, Use]]  # name, ClusterQueue, priority, usage
    incoming: tuple[int, Use, set[str]]  # priority, usage, resources in Preempt mode
    want: set[tuple[str, str]]
    created: dict[str, float] | None = None


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
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_preemption(name: str) -> None:
    case = CASES[name]
    s = state(*CQS)
    for wl_name, cq_name, priority, use in case.admitted:
        usage = {(flavor, r): amount for r, (flavor, amount) in use.items()}
        flavors = {r: flavor for r, (flavor, _) in use.items()}
        request = wl(wl_name, cq_name, {r: a for r, (_, a) in use.items()}, priority=priority)
        s.restore_admitted(request, Assignment([PodSetAssignment("main", 1, flavors, usage)]), 0.0, True)
    priority, use, contested = case.incoming
    requests = {(flavor, r): amount for r, (flavor, amount) in use.items()}
    frs = {(flavor, r) for r, (flavor, _) in use.items() if r in contested}
    preemptor = Preemptor("ns/in", case.target, priority, (case.created or {}).get("in", 0.0))
    view = s.tree.clone()
    targets = find_targets(preemptor, s.cluster_queues[case.target], view, requests, frs, s.admitted)
    assert {(t.workload.key.split("/", 1)[1], str(t.reason)) for t in targets} == case.want
