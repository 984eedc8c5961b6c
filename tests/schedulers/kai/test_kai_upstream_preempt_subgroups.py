# ruff: noqa: E501  (upstream case names are kept whole)
"""KAI's preempt SubGroups table, ported case by case.

Upstream: NVIDIA/KAI-Scheduler ``pkg/scheduler/actions/preempt/preempt_subgroups_test.go`` ``TestHandlePreemptSubGroups``
(72de64f), every case in order with upstream's name, compared on job and task status as
``MatchExpectedAndRealTasks`` does. Cases needing what gangplane does not model are skipped with the
reason: 6/6 ported and passing. SubGroup sets are the PodGroup's ``subGroups``.
"""

from __future__ import annotations

import pytest
from kaiupstream import Job, Node, Queue, Task, Topology, check_case

CASES = [
    Topology(
        "Job with sub groups preempts low priority job",
        jobs=[
            Job(
                "running_job", 1, "queue0", 50, [Task("Running", node="node0"), Task("Running", node="node0")]
            ),
            Job(
                "pending_job",
                1,
                "queue0",
                100,
                [Task("Pending", subgroup="sub-0"), Task("Pending", subgroup="sub-1")],
                sub_groups=[
                    {"name": "sub-0", "minMember": 1, "parent": None},
                    {"name": "sub-1", "minMember": 1, "parent": None},
                ],
            ),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 2, 0)],
        task_expected={
            "running_job-0": "Releasing",
            "running_job-1": "Releasing",
            "pending_job-0": "Pipelined",
            "pending_job-1": "Pipelined",
        },
    ),
    Topology(
        "Job with sub groups cannot preempts low priority job - cannot satisfy sub group gang",
        jobs=[
            Job(
                "running_job", 1, "queue0", 50, [Task("Running", node="node0"), Task("Running", node="node0")]
            ),
            Job(
                "pending_job",
                2,
                "queue0",
                100,
                [Task("Pending", subgroup="sub-0"), Task("Pending", subgroup="sub-1")],
                sub_groups=[
                    {"name": "sub-0", "minMember": 1, "parent": None},
                    {"name": "sub-1", "minMember": 1, "parent": None},
                ],
            ),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 2, 0)],
        task_expected={
            "running_job-0": "Running",
            "running_job-1": "Running",
            "pending_job-0": "Pending",
            "pending_job-1": "Pending",
        },
    ),
    Topology(
        "Job with sub groups preempts low priority job - partial allocation of the pending job",
        jobs=[
            Job(
                "running_job", 1, "queue0", 50, [Task("Running", node="node0"), Task("Running", node="node0")]
            ),
            Job(
                "pending_job",
                1,
                "queue0",
                100,
                [
                    Task("Pending", subgroup="sub-0"),
                    Task("Pending", subgroup="sub-0"),
                    Task("Pending", subgroup="sub-1"),
                    Task("Pending", subgroup="sub-1"),
                ],
                sub_groups=[
                    {"name": "sub-0", "minMember": 1, "parent": None},
                    {"name": "sub-1", "minMember": 1, "parent": None},
                ],
            ),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 2, 0)],
        task_expected={
            "running_job-0": "Releasing",
            "running_job-1": "Releasing",
            "pending_job-0": "Pipelined",
            "pending_job-1": "Pending",
            "pending_job-2": "Pipelined",
            "pending_job-3": "Pending",
        },
    ),
    Topology(
        "Job with sub groups preempts low priority job - partial allocation of the pending job",
        jobs=[
            Job(
                "running_job", 1, "queue0", 50, [Task("Running", node="node0"), Task("Running", node="node0")]
            ),
            Job(
                "pending_job",
                1,
                "queue0",
                100,
                [
                    Task("Pending", subgroup="sub-0"),
                    Task("Pending", subgroup="sub-0"),
                    Task("Pending", subgroup="sub-1"),
                    Task("Pending", subgroup="sub-1"),
                ],
                sub_groups=[
                    {"name": "sub-0", "minMember": 1, "parent": None},
                    {"name": "sub-1", "minMember": 1, "parent": None},
                ],
            ),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 2, 0)],
        task_expected={
            "running_job-0": "Releasing",
            "running_job-1": "Releasing",
            "pending_job-0": "Pipelined",
            "pending_job-1": "Pending",
            "pending_job-2": "Pipelined",
            "pending_job-3": "Pending",
        },
    ),
    Topology(
        "Preempt job with sub groups - partial eviction",
        jobs=[
            Job(
                "running_job",
                1,
                "queue0",
                50,
                [
                    Task("Running", node="node0", subgroup="sub-0"),
                    Task("Running", node="node0", subgroup="sub-0"),
                    Task("Running", node="node0", subgroup="sub-1"),
                    Task("Running", node="node0", subgroup="sub-1"),
                ],
                sub_groups=[
                    {"name": "sub-0", "minMember": 1, "parent": None},
                    {"name": "sub-1", "minMember": 1, "parent": None},
                ],
            ),
            Job("pending_job", 2, "queue0", 100, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 2, 0)],
        task_expected={
            "running_job-0": "Running",
            "running_job-1": "Releasing",
            "running_job-2": "Running",
            "running_job-3": "Releasing",
            "pending_job-0": "Pipelined",
        },
    ),
    Topology(
        "Preempt job with sub groups - complete eviction",
        jobs=[
            Job(
                "running_job",
                1,
                "queue0",
                50,
                [
                    Task("Running", node="node0", subgroup="sub-0"),
                    Task("Running", node="node0", subgroup="sub-0"),
                    Task("Running", node="node0", subgroup="sub-1"),
                    Task("Running", node="node0", subgroup="sub-1"),
                ],
                sub_groups=[
                    {"name": "sub-0", "minMember": 2, "parent": None},
                    {"name": "sub-1", "minMember": 2, "parent": None},
                ],
            ),
            Job("pending_job", 2, "queue0", 100, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 2, 0)],
        task_expected={
            "running_job-0": "Releasing",
            "running_job-1": "Releasing",
            "running_job-2": "Releasing",
            "running_job-3": "Releasing",
            "pending_job-0": "Pipelined",
        },
    ),
]


@pytest.mark.parametrize("top", CASES, ids=[c.name for c in CASES])
def test_preempt(top: Topology) -> None:
    check_case(top, ["preempt"], {})
