"""KAI's reclaim elastic table, ported case by case.

Upstream: NVIDIA/KAI-Scheduler ``pkg/scheduler/actions/reclaim/reclaim_elastic_test.go`` ``TestHandleElasticReclaim``
(72de64f), every case in order with upstream's name, compared on job and task status as
``MatchExpectedAndRealTasks`` does. Cases needing what gangplane does not model are skipped with the
reason (``SKIPPED``): 11/11 ported and passing.
"""

from __future__ import annotations

import pytest
from kaiupstream import Job, Node, Queue, Task, Topology, check_case

CASES = [
    Topology(
        "Reclaim single task from elastic job",
        jobs=[
            Job(
                "running-job",
                1,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Running", node="node0")],
                min_available=1,
            ),
            Job("pending-job", 1, "queue1", 50, [Task("Pending", node="node0")]),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 1, 1), Queue("queue1", 1, 1)],
        task_expected={
            "running-job-0": "Running",
            "running-job-1": "Releasing",
            "pending-job-0": "Pipelined",
        },
    ),
    Topology(
        "Reclaim several tasks from elastic job",
        jobs=[
            Job(
                "running-job",
                1,
                "queue0",
                50,
                [
                    Task("Running", node="node0"),
                    Task("Running", node="node0"),
                    Task("Running", node="node0"),
                    Task("Running", node="node0"),
                ],
                min_available=1,
            ),
            Job("pending-job", 2, "queue1", 50, [Task("Pending", node="node0")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 1, 1), Queue("queue1", 1, 1)],
        task_expected={
            "running-job-0": "Running",
            "running-job-1": "Running",
            "running-job-2": "Releasing",
            "running-job-3": "Releasing",
            "pending-job-0": "Pipelined",
        },
    ),
    Topology(
        "Reclaim only over quota task from elastic Job",
        jobs=[
            Job(
                "running-job",
                1,
                "queue0",
                50,
                [Task("Running", node="node0", priority=2), Task("Running", node="node0", priority=1)],
                min_available=1,
            ),
            Job(
                "pending-job",
                1,
                "queue1",
                50,
                [Task("Pending", priority=2), Task("Pending", priority=2), Task("Pending", priority=1)],
                min_available=1,
            ),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 1, 0), Queue("queue1", 1, 0)],
        task_expected={
            "running-job-0": "Running",
            "running-job-1": "Releasing",
            "pending-job-0": "Pipelined",
            "pending-job-1": "Pending",
            "pending-job-2": "Pending",
        },
    ),
    Topology(
        "Reclaim all tasks from elastic job",
        jobs=[
            Job(
                "running-job",
                1,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Running", node="node0")],
                min_available=1,
            ),
            Job("pending-job", 2, "queue1", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 0, 0), Queue("queue1", 2, 1)],
        task_expected={
            "running-job-0": "Releasing",
            "running-job-1": "Releasing",
            "pending-job-0": "Pipelined",
        },
    ),
    Topology(
        "Reclaim all tasks from job and a single task from elastic job",
        jobs=[
            Job(
                "running-job0",
                1,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Running", node="node0")],
                min_available=1,
            ),
            Job("running-job1", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("pending-job", 2, "queue1", 50, [Task("Pending", node="node0")]),
        ],
        nodes={"node0": Node(3)},
        queues=[Queue("queue0", 0, 0), Queue("queue1", 3, 1)],
        task_expected={
            "running-job0-0": "Running",
            "running-job0-1": "Releasing",
            "running-job1-0": "Releasing",
            "pending-job-0": "Pipelined",
        },
    ),
    Topology(
        "Reclaim tasks from several elastic jobs",
        jobs=[
            Job(
                "running-job0",
                1,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Running", node="node0")],
                min_available=1,
            ),
            Job(
                "running-job1",
                1,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Running", node="node0")],
                min_available=1,
            ),
            Job("pending-job", 2, "queue1", 50, [Task("Pending", node="node0")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 0, 0), Queue("queue1", 2, 1)],
        task_expected={
            "running-job0-0": "Running",
            "running-job0-1": "Releasing",
            "running-job1-0": "Running",
            "running-job1-1": "Releasing",
            "pending-job-0": "Pipelined",
        },
    ),
    Topology(
        "Reclaim from several running jobs (and of them is elastic)",
        jobs=[
            Job(
                "running-job0",
                1,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Running", node="node0")],
                min_available=1,
            ),
            Job("running-job1", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("pending-job", 3, "queue1", 50, [Task("Pending", node="node0")]),
        ],
        nodes={"node0": Node(3)},
        queues=[Queue("queue0", 0, 0), Queue("queue1", 3, 1)],
        task_expected={
            "running-job0-0": "Releasing",
            "running-job0-1": "Releasing",
            "running-job1-0": "Releasing",
            "pending-job-0": "Pipelined",
        },
    ),
    Topology(
        "Elastic job reclaims another non-elastic job",
        jobs=[
            Job("running-job0", 2, "queue0", 50, [Task("Running", node="node0")]),
            Job(
                "pending-job",
                1,
                "queue1",
                50,
                [Task("Pending", node="node0"), Task("Pending", node="node0")],
                min_available=1,
            ),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 0, 0), Queue("queue1", 1, 1)],
        task_expected={
            "running-job0-0": "Releasing",
            "pending-job-0": "Pipelined",
            "pending-job-1": "Pending",
        },
    ),
    Topology(
        "Elastic job reclaims single task from another elastic job",
        jobs=[
            Job(
                "running-job0",
                1,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Running", node="node0")],
                min_available=1,
            ),
            Job(
                "pending-job",
                1,
                "queue1",
                50,
                [Task("Running", node="node0"), Task("Pending", node="node0")],
                min_available=1,
            ),
        ],
        nodes={"node0": Node(3)},
        queues=[Queue("queue0", 0, 0), Queue("queue1", 1, 1)],
        task_expected={
            "running-job0-0": "Running",
            "running-job0-1": "Releasing",
            "pending-job-0": "Running",
            "pending-job-1": "Pipelined",
        },
    ),
    Topology(
        "Elastic job reclaims single task from another elastic job - equal queues",
        jobs=[
            Job(
                "running-job0",
                0,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Running", node="node0"), Task("Running", node="node0")],
                min_available=1,
            ),
            Job(
                "pending-job",
                0,
                "queue1",
                50,
                [Task("Running", node="node0"), Task("Pending"), Task("Pending")],
                min_available=1,
            ),
        ],
        nodes={"node0": Node(4, cpu_millis=4000)},
        queues=[
            Queue("queue0", 0, 1, parent="department-a", deserved_cpu=1000),
            Queue("queue1", 0, 1, parent="department-a", deserved_cpu=1000),
        ],
        departments=[Queue("department-a", 0, 0, limit_cpu=4000)],
        task_expected={
            "running-job0-0": "Running",
            "running-job0-1": "Running",
            "running-job0-2": "Releasing",
            "pending-job-0": "Running",
            "pending-job-1": "Pipelined",
            "pending-job-2": "Pending",
        },
    ),
    Topology(
        "Don't reclaim elastic job which is in quota",
        jobs=[
            Job(
                "running-job-0",
                1,
                "queue2",
                50,
                [Task("Running", node="node0"), Task("Running", node="node0"), Task("Running", node="node0")],
                min_available=2,
            ),
            Job("pending-job", 2, "queue0", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(3)},
        queues=[Queue("queue0", 2, 1), Queue("queue2", 2, 1)],
        task_expected={
            "running-job-0-0": "Running",
            "running-job-0-1": "Running",
            "running-job-0-2": "Running",
            "pending-job-0": "Pending",
        },
    ),
]

SKIPPED: dict[str, str] = {}


@pytest.mark.parametrize("top", CASES, ids=[c.name for c in CASES])
def test_reclaim(top: Topology) -> None:
    check_case(top, ["reclaim"], SKIPPED)
