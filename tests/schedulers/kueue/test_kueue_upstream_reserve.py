"""Upstream's ``pkg/scheduler/scheduler_test.go`` ``TestResourcesToReserve``, case by case: what a workload
that needs preemption but found no victims holds back in the cycle (``cycle.capped_reservation``)."""

from __future__ import annotations

import pytest
from kueue_builders import cq

from gangplane.schedulers.kueue.cycle import capped_reservation
from gangplane.schedulers.kueue.flavors import Assignment, PodSetAssignment
from gangplane.schedulers.kueue.model import FlavorMode
from gangplane.schedulers.kueue.quota import QuotaTree

MEM, GPU = "memory", "gpu"
# flavor: {resource: (nominal, borrowingLimit, lendingLimit)}, two resource groups, cohort "eng"
CQ = cq("cq", {"on-demand": {MEM: (100, None, None)}, "spot": {MEM: (0, 100, None)},
               "model-a": {GPU: (10, 0, None)}, "model-b": {GPU: (10, 5, None)}}, cohort="eng")  # fmt: skip

CASES = {
    "Reserved memory and gpu less than assignment usage, assignment preempts": (
        FlavorMode.PREEMPT, 0, {("on-demand", MEM): 50, ("model-a", GPU): 6},
        {("on-demand", MEM): 60, ("spot", MEM): 50, ("model-a", GPU): 6, ("model-b", GPU): 2},
        {("on-demand", MEM): 40, ("model-a", GPU): 4},
    ),
    "Reserved memory equal assignment usage, assignment preempts": (
        FlavorMode.PREEMPT, 0, {("on-demand", MEM): 30, ("model-a", GPU): 2},
        {("on-demand", MEM): 60, ("spot", MEM): 50, ("model-a", GPU): 2, ("model-b", GPU): 2},
        {("on-demand", MEM): 30, ("model-a", GPU): 2},
    ),
    "Reserved memory equal assignment usage, assignment fits": (
        FlavorMode.FIT, 0, {("on-demand", MEM): 50, ("model-a", GPU): 2},
        {("on-demand", MEM): 60, ("spot", MEM): 50, ("model-a", GPU): 2, ("model-b", GPU): 2},
        {("on-demand", MEM): 50, ("model-a", GPU): 2},
    ),
    "Reserved memory is 0, CQ is borrowing, assignment preempts without borrowing": (
        FlavorMode.PREEMPT, 0, {("spot", MEM): 50, ("model-b", GPU): 2},
        {("on-demand", MEM): 60, ("spot", MEM): 60, ("model-a", GPU): 2, ("model-b", GPU): 10},
        {("spot", MEM): 0, ("model-b", GPU): 0},
    ),
    "Reserved memory cut by nominal+borrowing quota, assignment preempts and borrows": (
        FlavorMode.PREEMPT, 1, {("spot", MEM): 50, ("model-b", GPU): 2},
        {("on-demand", MEM): 60, ("spot", MEM): 60, ("model-a", GPU): 2, ("model-b", GPU): 10},
        {("spot", MEM): 40, ("model-b", GPU): 2},
    ),
    "Reserved memory equal assignment usage, CQ borrowing limit is nil": (
        FlavorMode.PREEMPT, 1, {("on-demand", MEM): 50, ("model-b", GPU): 2},
        {("on-demand", MEM): 60, ("spot", MEM): 60, ("model-a", GPU): 2, ("model-b", GPU): 10},
        {("on-demand", MEM): 50, ("model-b", GPU): 2},
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_resources_to_reserve(name: str) -> None:
    mode, borrowing, usage, cq_usage, want = CASES[name]
    # One pod set per resource, as upstream's table builds it ("memory" and "gpu").
    pod_sets = [
        PodSetAssignment(resource, 1, {resource: flavor}, {(flavor, resource): amount}, mode, borrowing)
        for (flavor, resource), amount in usage.items()
    ]
    tree = QuotaTree([CQ])
    tree.add_usage("cq", cq_usage)
    assert capped_reservation(Assignment(pod_sets), CQ, tree) == want
