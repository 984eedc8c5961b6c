# ruff: noqa: E501  (upstream case names are kept whole)
"""KAI's allocate SubGroups table, ported case by case.

Upstream: NVIDIA/KAI-Scheduler ``pkg/scheduler/actions/allocate/allocate_subgroups_test.go`` ``TestHandleSubGroupsAllocation``
(72de64f), every case in order with upstream's name, compared on job and task status as
``MatchExpectedAndRealTasks`` does. Cases needing what gangplane does not model are skipped with the
reason: 8/8 ported and passing. SubGroup sets are the PodGroup's ``subGroups``.
"""

from __future__ import annotations

import pytest
from kaiupstream import Job, Node, Queue, Task, Topology, check_case

CASES = [
    Topology(
        "Allocate job with SubGroups - full allocate",
        jobs=[
            Job(
                "pending_job0",
                1,
                "queue0",
                50,
                [Task("Pending", subgroup="sub0"), Task("Pending", subgroup="sub1")],
                sub_groups=[
                    {"name": "sub0", "minMember": 1, "parent": None},
                    {"name": "sub1", "minMember": 1, "parent": None},
                ],
            ),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 1, 0)],
        task_expected={"pending_job0-0": "Binding", "pending_job0-1": "Binding"},
    ),
    Topology(
        "Allocate job with SubGroups - partial allocation",
        jobs=[
            Job(
                "pending_job0",
                1,
                "queue0",
                50,
                [
                    Task("Pending", subgroup="sub0"),
                    Task("Pending", subgroup="sub0"),
                    Task("Pending", subgroup="sub1"),
                    Task("Pending", subgroup="sub1"),
                ],
                sub_groups=[
                    {"name": "sub0", "minMember": 1, "parent": None},
                    {"name": "sub1", "minMember": 1, "parent": None},
                ],
            ),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 1, 0)],
        task_expected={
            "pending_job0-0": "Binding",
            "pending_job0-1": "Pending",
            "pending_job0-2": "Binding",
            "pending_job0-3": "Pending",
        },
    ),
    Topology(
        "Allocate job with SubGroups - allocate resource to unsatisfied sub group",
        jobs=[
            Job(
                "job0",
                0,
                "queue0",
                50,
                [
                    Task("Running", node="node0", gpus=1, subgroup="sub0"),
                    Task("Running", node="node0", gpus=1, subgroup="sub0"),
                    Task("Pending", gpus=1, subgroup="sub0"),
                    Task("Pending", gpus=1, subgroup="sub1"),
                    Task("Pending", gpus=1, subgroup="sub1"),
                ],
                sub_groups=[
                    {"name": "sub0", "minMember": 2, "parent": None},
                    {"name": "sub1", "minMember": 2, "parent": None},
                ],
            ),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 1, 0)],
        task_expected={
            "job0-0": "Running",
            "job0-1": "Running",
            "job0-2": "Pending",
            "job0-3": "Binding",
            "job0-4": "Binding",
        },
    ),
    Topology(
        "Allocate job with SubGroups - allocate resource up to MinAvailable",
        jobs=[
            Job(
                "job0",
                0,
                "queue0",
                50,
                [
                    Task("Running", node="node0", gpus=2, subgroup="sub0"),
                    Task("Pending", gpus=1, subgroup="sub0"),
                    Task("Pending", gpus=1, subgroup="sub0"),
                    Task("Pending", gpus=1, subgroup="sub0"),
                    Task("Pending", gpus=1, subgroup="sub0"),
                    Task("Pending", gpus=1, subgroup="sub1"),
                    Task("Pending", gpus=1, subgroup="sub1"),
                ],
                sub_groups=[
                    {"name": "sub0", "minMember": 2, "parent": None},
                    {"name": "sub1", "minMember": 1, "parent": None},
                ],
            ),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 1, 0)],
        task_expected={
            "job0-0": "Running",
            "job0-1": "Binding",
            "job0-2": "Pending",
            "job0-3": "Pending",
            "job0-4": "Pending",
            "job0-5": "Binding",
            "job0-6": "Pending",
        },
    ),
    Topology(
        "Allocate job with SubGroups - allocate resource beyond MinAvailable",
        jobs=[
            Job(
                "job0",
                0,
                "queue0",
                50,
                [
                    Task("Running", node="node0", gpus=1, subgroup="sub0"),
                    Task("Pending", gpus=1, subgroup="sub0"),
                    Task("Pending", gpus=1, subgroup="sub0"),
                    Task("Pending", gpus=1, subgroup="sub0"),
                    Task("Pending", gpus=1, subgroup="sub0"),
                    Task("Pending", gpus=1, subgroup="sub1"),
                    Task("Pending", gpus=1, subgroup="sub1"),
                ],
                sub_groups=[
                    {"name": "sub0", "minMember": 2, "parent": None},
                    {"name": "sub1", "minMember": 1, "parent": None},
                ],
            ),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 1, 0)],
        task_expected={
            "job0-0": "Running",
            "job0-1": "Binding",
            "job0-2": "Binding",
            "job0-3": "Pending",
            "job0-4": "Pending",
            "job0-5": "Binding",
            "job0-6": "Pending",
        },
    ),
    Topology(
        "Allocate job with SubGroups - unbalanced hierarchy structure",
        jobs=[
            Job(
                "job0",
                0,
                "queue0",
                50,
                [
                    Task("Pending", gpus=1, subgroup="sub-a"),
                    Task("Pending", gpus=1, subgroup="sub-a"),
                    Task("Pending", gpus=1, subgroup="sub-b"),
                    Task("Pending", gpus=1, subgroup="sub-b"),
                    Task("Pending", gpus=4, subgroup="sub-c"),
                ],
                sub_groups=[
                    {"name": "sub-ab", "parent": None},
                    {"name": "sub-a", "minMember": 2, "parent": "sub-ab"},
                    {"name": "sub-b", "minMember": 2, "parent": "sub-ab"},
                    {"name": "sub-c", "minMember": 1, "parent": None},
                ],
            ),
        ],
        nodes={"node0": Node(8)},
        queues=[Queue("queue0", 1, 0)],
        task_expected={
            "job0-0": "Binding",
            "job0-1": "Binding",
            "job0-2": "Binding",
            "job0-3": "Binding",
            "job0-4": "Binding",
        },
    ),
    Topology(
        "Allocate job with SubGroups - cannot satisfy sub group gang",
        jobs=[
            Job(
                "pending_job0",
                0,
                "queue0",
                50,
                [
                    Task("Pending", gpus=3, subgroup="sub0"),
                    Task("Pending", gpus=3, subgroup="sub0"),
                    Task("Pending", gpus=1, subgroup="sub1"),
                    Task("Pending", gpus=1, subgroup="sub1"),
                ],
                sub_groups=[
                    {"name": "sub0", "minMember": 1, "parent": None},
                    {"name": "sub1", "minMember": 2, "parent": None},
                ],
            ),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 1, 0)],
        task_expected={
            "pending_job0-0": "Pending",
            "pending_job0-1": "Pending",
            "pending_job0-2": "Pending",
            "pending_job0-3": "Pending",
        },
    ),
    Topology(
        "Allocate multiple jobs with SubGroups",
        jobs=[
            Job(
                "pending_job0",
                0,
                "queue0",
                50,
                [
                    Task("Pending", gpus=1, subgroup="sub0"),
                    Task("Pending", gpus=1, subgroup="sub0"),
                    Task("Pending", gpus=1, subgroup="sub1"),
                    Task("Pending", gpus=1, subgroup="sub1"),
                ],
                sub_groups=[
                    {"name": "sub0", "minMember": 1, "parent": None},
                    {"name": "sub1", "minMember": 1, "parent": None},
                ],
            ),
            Job(
                "pending_job1",
                0,
                "queue0",
                50,
                [
                    Task("Pending", gpus=1, subgroup="sub0"),
                    Task("Pending", gpus=1, subgroup="sub0"),
                    Task("Pending", gpus=1, subgroup="sub1"),
                    Task("Pending", gpus=1, subgroup="sub1"),
                ],
                sub_groups=[
                    {"name": "sub0", "minMember": 1, "parent": None},
                    {"name": "sub1", "minMember": 1, "parent": None},
                ],
            ),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 1, 0)],
        task_expected={
            "pending_job0-0": "Binding",
            "pending_job0-1": "Pending",
            "pending_job0-2": "Binding",
            "pending_job0-3": "Pending",
            "pending_job1-0": "Binding",
            "pending_job1-1": "Pending",
            "pending_job1-2": "Binding",
            "pending_job1-3": "Pending",
        },
    ),
]


@pytest.mark.parametrize("top", CASES, ids=[c.name for c in CASES])
def test_allocate(top: Topology) -> None:
    check_case(top, ["allocate"], {})
