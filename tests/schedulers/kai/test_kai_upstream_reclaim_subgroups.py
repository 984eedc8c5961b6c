# ruff: noqa: E501  (upstream case names are kept whole)
"""KAI's reclaim SubGroups table, ported case by case.

Upstream: NVIDIA/KAI-Scheduler ``pkg/scheduler/actions/reclaim/reclaim_sub_group_test.go`` ``TestHandleReclaimSubGroups``
(72de64f), every case in order with upstream's name, compared on job and task status as
``MatchExpectedAndRealTasks`` does. Cases needing what gangplane does not model are skipped with the
reason: 6/6 ported and passing. SubGroup sets are the PodGroup's ``subGroups``.
"""

from __future__ import annotations

import pytest
from kaiupstream import Job, Node, Queue, Task, Topology, check_case

CASES = [
    Topology(
        "Reclaim resources for job with sub groups",
        jobs=[
            Job(
                "running-job", 1, "queue0", 50, [Task("Running", node="node0"), Task("Running", node="node0")]
            ),
            Job(
                "pending-job",
                1,
                "queue1",
                50,
                [Task("Pending", subgroup="sub-0"), Task("Pending", subgroup="sub-1")],
                sub_groups=[
                    {"name": "sub-0", "minMember": 1, "parent": None},
                    {"name": "sub-1", "minMember": 1, "parent": None},
                ],
            ),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 0, 0), Queue("queue1", 2, 0)],
        task_expected={
            "running-job-0": "Releasing",
            "running-job-1": "Releasing",
            "pending-job-0": "Pipelined",
            "pending-job-1": "Pipelined",
        },
    ),
    Topology(
        "Reclaim resources for job with sub groups - partial allocation of the pending job",
        jobs=[
            Job(
                "running-job", 1, "queue0", 50, [Task("Running", node="node0"), Task("Running", node="node0")]
            ),
            Job(
                "pending-job",
                1,
                "queue1",
                50,
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
        queues=[Queue("queue0", 0, 0), Queue("queue1", 2, 0)],
        task_expected={
            "running-job-0": "Releasing",
            "running-job-1": "Releasing",
            "pending-job-0": "Pipelined",
            "pending-job-1": "Pending",
            "pending-job-2": "Pipelined",
            "pending-job-3": "Pending",
        },
    ),
    Topology(
        "Reclaim resources for job with sub groups - partial allocation of the pending job",
        jobs=[
            Job(
                "running-job", 1, "queue0", 50, [Task("Running", node="node0"), Task("Running", node="node0")]
            ),
            Job(
                "pending-job",
                1,
                "queue1",
                50,
                [
                    Task("Pending", node="node0", subgroup="sub-0"),
                    Task("Pending", node="node0", subgroup="sub-0"),
                    Task("Pending", node="node0", subgroup="sub-1"),
                    Task("Pending", node="node0", subgroup="sub-1"),
                ],
                sub_groups=[
                    {"name": "sub-0", "minMember": 1, "parent": None},
                    {"name": "sub-1", "minMember": 1, "parent": None},
                ],
            ),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 0, 0), Queue("queue1", 2, 0)],
        task_expected={
            "running-job-0": "Releasing",
            "running-job-1": "Releasing",
            "pending-job-0": "Pipelined",
            "pending-job-1": "Pending",
            "pending-job-2": "Pipelined",
            "pending-job-3": "Pending",
        },
    ),
    Topology(
        "Job with sub groups cannot reclaim resources - cannot satisfy sub group gang",
        jobs=[
            Job(
                "running-job", 1, "queue0", 50, [Task("Running", node="node0"), Task("Running", node="node0")]
            ),
            Job(
                "pending-job",
                2,
                "queue1",
                50,
                [Task("Pending", subgroup="sub-0"), Task("Pending", subgroup="sub-1")],
                sub_groups=[
                    {"name": "sub-0", "minMember": 1, "parent": None},
                    {"name": "sub-1", "minMember": 1, "parent": None},
                ],
            ),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 0, 0), Queue("queue1", 2, 0)],
        task_expected={
            "running-job-0": "Running",
            "running-job-1": "Running",
            "pending-job-0": "Pending",
            "pending-job-1": "Pending",
        },
    ),
    Topology(
        "Reclaim resources from job with sub groups - partial eviction",
        jobs=[
            Job(
                "running-job",
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
            Job("pending-job", 2, "queue1", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 2, 0), Queue("queue1", 2, 0)],
        task_expected={
            "running-job-0": "Running",
            "running-job-1": "Releasing",
            "running-job-2": "Running",
            "running-job-3": "Releasing",
            "pending-job-0": "Pipelined",
        },
    ),
    Topology(
        "Reclaim resources from job with sub groups - complete eviction",
        jobs=[
            Job(
                "running-job",
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
            Job("pending-job", 2, "queue1", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 2, 0), Queue("queue1", 2, 0)],
        task_expected={
            "running-job-0": "Releasing",
            "running-job-1": "Releasing",
            "running-job-2": "Releasing",
            "running-job-3": "Releasing",
            "pending-job-0": "Pipelined",
        },
    ),
]


@pytest.mark.parametrize("top", CASES, ids=[c.name for c in CASES])
def test_reclaim(top: Topology) -> None:
    check_case(top, ["reclaim"], {})
