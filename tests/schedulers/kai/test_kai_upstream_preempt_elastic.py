"""KAI's preempt elastic table, ported case by case.

Upstream: NVIDIA/KAI-Scheduler ``pkg/scheduler/actions/preempt/preempt_elastic_test.go`` ``TestHandlePreemptElastic``
(72de64f), every case in order with upstream's name, compared on job and task status as
``MatchExpectedAndRealTasks`` does. Cases needing what gangplane does not model are skipped with the
reason (``SKIPPED``): 8/9 ported and passing, 1 skipped (consolidation).
"""

from __future__ import annotations

import pytest
from kaiupstream import Job, Node, Queue, Task, Topology, check_case

CASES = [
    Topology(
        "Inference job preempts single task from elastic train job",
        jobs=[
            Job(
                "running_job0",
                1,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Running", node="node0")],
                min_available=1,
            ),
            Job("pending_job0", 1, "queue0", 125, [Task("Pending")]),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 2, 0)],
        task_expected={
            "running_job0-0": "Running",
            "running_job0-1": "Releasing",
            "pending_job0": "Pipelined",
        },
    ),
    Topology(
        "Inference job preempts several tasks from elastic train job",
        jobs=[
            Job(
                "running_job0",
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
            Job("pending_job0", 2, "queue0", 125, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 4, 0)],
        task_expected={
            "running_job0-0": "Running",
            "running_job0-1": "Running",
            "running_job0-2": "Releasing",
            "running_job0-3": "Releasing",
            "pending_job0": "Pipelined",
        },
    ),
    Topology(
        "Inference job preempts all tasks from elastic train job",
        jobs=[
            Job(
                "running_job0",
                1,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Running", node="node0")],
                min_available=1,
            ),
            Job("pending_job0", 2, "queue0", 125, [Task("Pending")]),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 4, 0)],
        task_expected={
            "running_job0-0": "Releasing",
            "running_job0-1": "Releasing",
            "pending_job0": "Pipelined",
        },
    ),
    Topology(
        "Inference job preempts running job and a single task from elastic train job",
        jobs=[
            Job(
                "running_job0",
                1,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Running", node="node0")],
                min_available=1,
            ),
            Job("running_job1", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("pending_job0", 2, "queue0", 125, [Task("Pending")]),
        ],
        nodes={"node0": Node(3)},
        queues=[Queue("queue0", 3, 0)],
        task_expected={
            "running_job0-0": "Running",
            "running_job0-1": "Releasing",
            "running_job1-0": "Releasing",
            "pending_job0": "Pipelined",
        },
    ),
    Topology(
        "Inference job preempts single task from several elastic train jobs",
        jobs=[
            Job(
                "running_job0",
                1,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Running", node="node0")],
                min_available=1,
            ),
            Job(
                "running_job1",
                1,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Running", node="node0")],
                min_available=1,
            ),
            Job("pending_job0", 2, "queue0", 125, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 4, 0)],
        task_expected={
            "running_job0-0": "Running",
            "running_job0-1": "Releasing",
            "running_job1-0": "Running",
            "running_job1-1": "Releasing",
            "pending_job0": "Pipelined",
        },
    ),
    Topology(
        "Inference job preempts several jobs (one of them is elastic)",
        jobs=[
            Job("running_job0", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job(
                "running_job1",
                1,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Running", node="node0")],
                min_available=1,
            ),
            Job("running_job2", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("pending_job0", 4, "queue0", 125, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 4, 0)],
        task_expected={
            "running_job0-0": "Releasing",
            "running_job1-0": "Releasing",
            "running_job1-1": "Releasing",
            "running_job2-0": "Releasing",
            "pending_job0": "Pipelined",
        },
    ),
    Topology(
        "Elastic inference job preempts train job",
        jobs=[
            Job("running_job0", 2, "queue0", 50, [Task("Running", node="node0")]),
            Job("pending_job0", 1, "queue0", 125, [Task("Pending"), Task("Pending")], min_available=1),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 2, 0)],
        task_expected={
            "running_job0-0": "Releasing",
            "pending_job0-0": "Pipelined",
            "pending_job0-1": "Pending",
        },
    ),
    Topology(
        "Elastic inference job preempts task from train job in favor of a single task",
        jobs=[
            Job(
                "running_job0",
                1,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Running", node="node0")],
                min_available=1,
            ),
            Job(
                "pending_job0",
                1,
                "queue0",
                125,
                [Task("Running", node="node0"), Task("Pending")],
                min_available=1,
            ),
        ],
        nodes={"node0": Node(3)},
        queues=[Queue("queue0", 3, 0)],
        task_expected={
            "running_job0-0": "Running",
            "running_job0-1": "Releasing",
            "pending_job0-0": "Running",
            "pending_job0-1": "Pipelined",
        },
    ),
    Topology(
        "Inference job preempts single task, moves one task from elastic train job",
        jobs=[
            Job(
                "running_job0",
                1,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Running", node="node0")],
                min_available=1,
            ),
            Job("pending_job0", 2, "queue0", 125, [Task("Pending")]),
        ],
        nodes={"node0": Node(2), "node1": Node(1)},
        queues=[Queue("queue0", 2, 0)],
        task_expected={
            "running_job0-0": "Pipelined",
            "running_job0-1": "Releasing",
            "pending_job0": "Pipelined",
        },
    ),
]

SKIPPED = {
    "Inference job preempts single task, moves one task from elastic train job": (
        "consolidation (moving a running pod to another node instead of evicting) is not modelled (docs/kai.md)"
    ),
}


@pytest.mark.parametrize("top", CASES, ids=[c.name for c in CASES])
def test_preempt(top: Topology) -> None:
    check_case(top, ["preempt"], SKIPPED)
