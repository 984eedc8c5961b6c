"""Upstream's ``pkg/scheduler/preemption/fairsharing/ordering_test.go`` ``TestMakeClusterQueueOrdering`` (which
ClusterQueue fair preemption takes its next candidate from), case by case (keys are upstream's case names), against
``fairpreemption._Ordering``: admitted workloads make their ClusterQueues borrow and are the candidates of the
ClusterQueues named; each yielded ClusterQueue either gives up a candidate ("pop") or is dropped ("drop").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from kueue_builders import cohort, cq

from gangplane.schedulers.kueue.fairpreemption import _Ordering
from gangplane.schedulers.kueue.flavors import Assignment, PodSetAssignment
from gangplane.schedulers.kueue.model import ClusterQueueSpec, CohortSpec, WorkloadRequest
from gangplane.schedulers.kueue.quota import QuotaTree
from gangplane.schedulers.kueue.workloads import WorkloadState, mark_admitted

CPU = ("default", "cpu")


@dataclass(frozen=True)
class Case:
    cqs: dict[str, tuple[int, str | None]]
    """ClusterQueue -> (nominal cpu, its cohort)."""
    admitted: list[tuple[str, str, int]]
    """(workload, ClusterQueue, cpu)."""
    candidate_cqs: tuple[str, ...]
    want: list[str]
    preemptor: str = "preemptor"
    actions: tuple[str, ...] = ()
    cohorts: tuple[CohortSpec, ...] = field(default_factory=tuple)


def _admitted(name: str, cq_name: str, cpu: int) -> WorkloadState:
    state = WorkloadState(WorkloadRequest(f"ns/{name}", "ns", "lq", cq_name, (), uid=name), 0.0)
    usage = {CPU: cpu * 1000}
    mark_admitted(state, Assignment([PodSetAssignment("main", 1, {"cpu": "default"}, usage)]), 0.0)
    return state


def _specs(cqs: dict[str, tuple[int, str | None]]) -> list[ClusterQueueSpec]:
    return [cq(name, {"default": {"cpu": cpu * 1000}}, cohort=parent) for name, (cpu, parent) in cqs.items()]


_THREE = {"preemptor": (4, "all"), "high": (2, "all"), "low": (2, "all")}
_TWO_IN_HIGH = [("h1", "high", 3), ("h2", "high", 2), ("l1", "low", 3)]
CASES = {
    "no cohort: preemptor CQ yielded for in-CQ preemption; repro for nil pointer panic issue": Case(
        {"preemptor": (4, None)}, [("wl1", "preemptor", 1)], ("preemptor",), ["preemptor"]),
    "no cohort: DropQueue ends the iteration with candidates remaining": Case(
        {"preemptor": (4, None)}, [("wl1", "preemptor", 1), ("wl2", "preemptor", 1)], ("preemptor",),
        ["preemptor"], actions=("drop",)),
    "non-borrowing CQ is pruned even with candidates": Case(
        {"preemptor": (4, "all"), "target": (5, "all")}, [("t1", "target", 2)], ("target",), []),
    "higher DRS CQ returned before lower DRS CQ": Case(
        _THREE, [("h1", "high", 5), ("l1", "low", 3)], ("high", "low"), ["high", "low"]),
    "CQ with highest DRS returned again while it still has candidates": Case(
        _THREE, _TWO_IN_HIGH, ("high", "low"), ["high", "high", "low"]),
    "drop queue prevents CQ from being returned again": Case(
        _THREE, _TWO_IN_HIGH, ("high", "low"), ["high", "low"], actions=("drop", "pop")),
    "hierarchical cohorts: higher-DRS subtree visited first": Case(
        {"preemptor-cq": (4, "root"), "left-cq": (2, "left-cohort"), "right-cq": (2, "right-cohort")},
        [("lc1", "left-cq", 5), ("rc1", "right-cq", 3)], ("left-cq", "right-cq"), ["left-cq", "right-cq"],
        preemptor="preemptor-cq",
        cohorts=(cohort("root"), cohort("left-cohort", None, "root"), cohort("right-cohort", None, "root"))),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_make_cluster_queue_ordering(name: str) -> None:
    case = CASES[name]
    tree = QuotaTree(_specs(case.cqs), case.cohorts)
    admitted = [_admitted(*a) for a in case.admitted]
    for state in admitted:
        tree.add_usage(state.cluster_queue, state.usage)
    candidates = [s for s in admitted if s.cluster_queue in case.candidate_cqs]
    ordering = _Ordering(tree.cqs[case.preemptor], candidates)
    got = []
    for step, target in enumerate(ordering):
        got.append(target.name)
        if step < len(case.actions) and case.actions[step] == "drop":
            ordering.drop(target)
        else:
            ordering.pop(target)
        assert len(got) <= 50, "an endless iteration"
    assert got == case.want
