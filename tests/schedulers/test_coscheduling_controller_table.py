"""scheduler-plugins' PodGroup controller tables, ported onto ``coscheduling.pod_group_status``.

Source: kubernetes-sigs/scheduler-plugins ``pkg/controllers/podgroup_controller_test.go`` (``Test_Run`` and
``TestFillGroupStatusOccupied``). Upstream's ``setUp`` stores only the first two pods of each case, so the
members here are those two; upstream reconciles once per pod event, gangplane runs the same transitions to a
fixed point in one pass — the final phases agree for every case. All cases are ported.
"""

from __future__ import annotations

from typing import Any

import pytest

from gangplane.clock import rfc3339
from gangplane.schedulers.coscheduling import pod_group_status

NOW = 1_767_225_600.0
HOUR = 3600.0


def _pods(names: list[str], phase: str, owners: list[str] | None = None) -> list[dict[str, Any]]:
    refs = [{"name": name} for name in owners or []]
    return [
        {"metadata": {"name": n, "namespace": "default", "ownerReferences": refs}, "status": {"phase": phase}}
        for n in names[:2]  # upstream setUp: only ps[0] and ps[1] are created
    ]


def _group(min_member: int, phase: str, created: float = NOW) -> dict[str, Any]:
    return {
        "metadata": {"name": "pg", "namespace": "default", "creationTimestamp": rfc3339(created)},
        "spec": {"minMember": min_member},
        "status": {"occupiedBy": "test", "scheduleStartTime": rfc3339(NOW), "phase": phase},
    }


# (upstream case name, minMember, pod names, pod phase after the update, previous phase, desired, created)
TEST_RUN = [
    ("Group running", 2, ["pod1", "pod2"], "Running", "Scheduling", "Running", NOW),
    (
        "Group running, more than min member",
        2,
        ["pod11", "pod21", "pod31", "pod41"],
        "Running",
        "Scheduling",
        "Running",
        NOW,
    ),
    ("Group failed", 2, ["pod1", "pod2"], "Failed", "Scheduling", "Failed", NOW),
    ("Group finished", 2, ["pod1", "pod2"], "Succeeded", "Scheduling", "Finished", NOW),
    (
        "Group status convert from pending to prescheduling",
        2,
        ["pod1", "pod2"],
        "Pending",
        "Pending",
        "Scheduling",
        NOW,
    ),
    (
        "Group status convert from scheduling to finished",
        2,
        ["pod1", "pod2"],
        "Succeeded",
        "Scheduling",
        "Finished",
        NOW,
    ),
    ("Group status keeps pending", 3, ["pod1", "pod2"], "Running", "Pending", "Pending", NOW),
    (
        "Group status convert from pending to finished",
        2,
        ["pod1", "pod2"],
        "Succeeded",
        "Pending",
        "Finished",
        NOW,
    ),
    (
        "Group should not enqueue, created too long",
        2,
        ["pod1", "pod2"],
        "Running",
        "Pending",
        "Pending",
        NOW - 72 * HOUR,
    ),
    ("Group min member more than Pod number", 3, ["pod91", "pod92"], "Pending", "Pending", "Pending", NOW),
    (
        "Group status convert from running to pending",
        4,
        ["pod101", "pod102"],
        "Pending",
        "Running",
        "Pending",
        NOW,
    ),
]


@pytest.mark.parametrize(
    ("min_member", "names", "pod_phase", "previous", "desired", "created"),
    [case[1:] for case in TEST_RUN],
    ids=[case[0] for case in TEST_RUN],
)
def test_run(
    min_member: int, names: list[str], pod_phase: str, previous: str, desired: str, created: float
) -> None:
    status = pod_group_status(_group(min_member, previous, created), _pods(names, pod_phase), NOW)
    assert status["phase"] == desired


@pytest.mark.parametrize(
    ("owners", "occupied"),
    [
        (["new-occupied"], "default/new-occupied"),
        (["new-occupied-1", "new-occupied-2"], "default/new-occupied-1,default/new-occupied-2"),
    ],
    ids=[
        "fill the Occupied of PodGroup with a single ownerReference",
        "fill the Occupied of PodGroup with multi ownerReferences",
    ],
)
def test_fill_group_status_occupied(owners: list[str], occupied: str) -> None:
    status = pod_group_status(_group(2, "Pending"), _pods(["pod1", "pod2"], "Pending", owners), NOW)
    assert status["occupiedBy"] == occupied
