"""Upstream's ``pkg/scheduler/preemption/preemption_test.go`` ``TestCandidatesOrdering``, case by case (keys are
upstream's case names), against ``preemption.candidate_order``; its ``TestPreemptionMessage`` (all 4, unnamed
upstream) against ``preemption.preemption_message``; and ``preemption/common/preemption_policy_test.go``
``TestSatisfiesPreemptionPolicy`` (all 12) against ``preemption.satisfies_policy``. Workloads go through
``convert.workload_request`` as the controller's do, so the ``kueue.x-k8s.io/priority-boost`` annotation counts as
upstream's effective priority (feature PriorityBoost).

Not ported (``NOT_PORTED``): "evicted workload first" (an evicted workload releases its quota at eviction here,
so it is never a candidate, docs/kueue.md) and the two Admission Fair Sharing cases (not modelled).
"""

from __future__ import annotations

from typing import Any

import pytest

from gangplane.api.scheduling import kueue_workload as kw
from gangplane.api.scheduling.kueue import PreemptionPolicy as P
from gangplane.schedulers.kueue.convert import workload_request
from gangplane.schedulers.kueue.flavors import Assignment
from gangplane.schedulers.kueue.preemption import (
    Preemptor,
    candidate_order,
    preemption_message,
    satisfies_policy,
)
from gangplane.schedulers.kueue.workloads import WorkloadState, mark_admitted

PREEMPTOR_CQ = "preemptor"
NOW = 1000.0
Candidate = tuple[str, str, int, dict[str, str], float]
"""(name, ClusterQueue it reserved quota in, priority, annotations, reservation time)."""


def _workload(name: str, priority: int, annotations: dict[str, str]) -> kw.Workload:
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "ns", "uid": name, "annotations": annotations},
        "spec": {"priority": priority, "podSets": [{"name": "main", "count": 1, "template": {"spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]},
    }  # fmt: skip
    return kw.Workload.model_validate(body)


def _state(candidate: Candidate) -> WorkloadState:
    name, cq, priority, annotations, reserved_at = candidate
    state = WorkloadState(workload_request(_workload(name, priority, annotations), cq, {}), queue_time=0.0)
    mark_admitted(state, Assignment([]), reserved_at)
    return state


def c(
    name: str, priority: int = 0, cq: str = PREEMPTOR_CQ, boost: str | None = None, at: float = NOW
) -> Candidate:
    annotations = {"kueue.x-k8s.io/priority-boost": boost} if boost is not None else {}
    return name, cq, priority, annotations, at


CASES: dict[str, tuple[list[Candidate], list[str]]] = {
    "workloads sorted by priority": ([c("high", 10), c("low", -10)], ["low", "high"]),
    "workloads sorted by effective priority with boost": (
        [c("high-boost", 10, boost="100"), c("low-boost", 10, boost="5")], ["low-boost", "high-boost"]),
    "workload missing priority boost defaults to zero": (
        [c("missing-boost", 10), c("has-boost", 10, boost="5")], ["missing-boost", "has-boost"]),
    "invalid priority boost defaults to zero": (
        [c("invalid-boost", 10, boost="invalid"), c("valid-boost", 10, boost="5")], ["invalid-boost", "valid-boost"]),
    "workload from different CQ first": ([c("preemptorCq", 10), c("other", 10, cq="other")], ["other", "preemptorCq"]),
    "old workloads last": (
        [c("older", at=NOW - 1), c("younger", at=NOW + 1), c("current")], ["younger", "current", "older"]),
}  # fmt: skip

NOT_PORTED = {
    "evicted workload first": "an evicted workload holds no quota here, so it is never a candidate",
    "workloads with higher LQ usage first": "Admission Fair Sharing is not modelled",
    "workloads from different CQ are sorted based on priority and timestamp": "Admission Fair Sharing is not modelled",
}


@pytest.mark.parametrize("name", list(CASES))
def test_candidates_ordering(name: str) -> None:
    candidates, want = CASES[name]
    states = sorted((_state(x) for x in candidates), key=lambda s: candidate_order(s, PREEMPTOR_CQ))
    assert [s.key.split("/")[1] for s in states] == want


def test_every_upstream_case_is_accounted_for() -> None:
    assert len(CASES) + len(NOT_PORTED) == 9


UNKNOWN = "Preempted to accommodate a workload (UID: {}, JobUID: {}) due to {}; preemptor path: {}; preemptee path: {}"
MESSAGES = [
    (("", "", "", "", ""), UNKNOWN.format(*["UNKNOWN"] * 5)),
    (("uid", "", "", "", ""), UNKNOWN.format("uid", *["UNKNOWN"] * 4)),
    (("uid", "juid", "", "", ""), UNKNOWN.format("uid", "juid", *["UNKNOWN"] * 3)),
    (("uid", "juid", "InClusterQueue", "/a", "/b"),
     UNKNOWN.format("uid", "juid", "prioritization in the ClusterQueue", "/a", "/b")),
]  # fmt: skip


@pytest.mark.parametrize(("given", "want"), MESSAGES)
def test_preemption_message(given: tuple[str, str, str, str, str], want: str) -> None:
    assert preemption_message(*given) == want


# ---------------------------------------------------------------- TestSatisfiesPreemptionPolicy

Side = tuple[int, str | None, float]
"""(priority, priority-boost annotation, creation time)."""


def _side(name: str, side: Side) -> WorkloadState:
    priority, boost, created = side
    workload = _workload(name, priority, {"kueue.x-k8s.io/priority-boost": boost} if boost else {})
    request = workload_request(workload, PREEMPTOR_CQ, {})
    return WorkloadState(request, queue_time=NOW + created)


MINUTE = 60.0
POLICY_CASES: dict[str, tuple[Side, Side, P, bool]] = {
    "LowerPriority: preemptor has higher priority": ((10, None, 0), (5, None, 0), P.LOWER_PRIORITY, True),
    "LowerPriority: preemptor has same priority": ((10, None, 0), (10, None, 0), P.LOWER_PRIORITY, False),
    "LowerOrNewerEqualPriority: preemptor has same priority, same timestamp": (
        (10, None, 0), (10, None, 0), P.LOWER_OR_NEWER_EQUAL_PRIORITY, False),
    "LowerOrNewerEqualPriority: preemptor has same priority, newer timestamp (within 5min buffer)": (
        (10, None, MINUTE), (10, None, 0), P.LOWER_OR_NEWER_EQUAL_PRIORITY, False),
    "LowerOrNewerEqualPriority: preemptor has same priority, older timestamp (within 5min buffer)": (
        (10, None, 0), (10, None, MINUTE), P.LOWER_OR_NEWER_EQUAL_PRIORITY, True),
    "PreemptionPolicyAny": ((10, None, 0), (10, None, 6 * MINUTE), P.ANY, True),
    "PreemptionPolicyNever": ((10, None, 0), (10, None, 6 * MINUTE), P.NEVER, False),
    "LowerPriority: boost makes low-priority immune to medium-priority preemption": (
        (200, None, 0), (100, "150", 0), P.LOWER_PRIORITY, False),
    "LowerPriority: boost on preemptor enables preemption of higher raw priority": (
        (100, "200", 0), (200, None, 0), P.LOWER_PRIORITY, True),
    "LowerOrNewerEqualPriority: boost equalizes priorities, older preemptor can preempt newer candidate": (
        (100, "100", 0), (200, None, 1), P.LOWER_OR_NEWER_EQUAL_PRIORITY, True),
    "LowerOrNewerEqualPriority: equal effective priority, newer preemptor cannot preempt older candidate": (
        (100, "100", 1), (200, None, 0), P.LOWER_OR_NEWER_EQUAL_PRIORITY, False),
    "Any: always satisfies regardless of priority or boost": ((50, None, 0), (100, "200", 0), P.ANY, True),
}  # fmt: skip


@pytest.mark.parametrize("name", list(POLICY_CASES))
def test_satisfies_preemption_policy(name: str) -> None:
    preemptor_side, candidate_side, policy, want = POLICY_CASES[name]
    mine = _side("preemptor", preemptor_side)
    preemptor = Preemptor(mine.key, PREEMPTOR_CQ, mine.priority, mine.queue_time)
    assert satisfies_policy(policy, preemptor, _side("candidate", candidate_side)) is want
