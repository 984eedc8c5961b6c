# ruff: noqa: E501  (upstream case names are kept whole)
"""KAI's preempt integration table, ported case by case.

Upstream: NVIDIA/KAI-Scheduler ``pkg/scheduler/actions/integration_tests/preempt/preempt_test.go`` ``TestPreemptIntegrationTest`` (72de64f): every
case in order with upstream's name, run as ``integration_tests_utils.RunTest`` runs it (rounds of every
action with the results fed back, the expectations checked after each later round). Cases needing what
gangplane does not model are skipped with the reason (``SKIPPED``): 5/6 ported and passing, 1 skipped.
"""

from __future__ import annotations

import pytest
from kaiupstream import Job, Node, Queue, Task, Topology, check_integration

CASES = [
    Topology(
        "3 train job running, 1 build job pending - no need to preempt two jobs",
        jobs=[
            Job("running_job0", 0.5, "queue0", 50, [Task("Running", node="node0")]),
            Job("running_job1", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("running_job2", 0.5, "queue0", 50, [Task("Running", node="node0")]),
            Job("pending_job0", 1, "queue0", 100, [Task("Pending")]),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 2, 0)],
        expected={
            "running_job0": "Running",
            "running_job1": "Pending",
            "running_job2": "Running",
            "pending_job0": "Running",
        },
    ),
    Topology(
        "1 train job running, 1 build job pending - preempt",
        jobs=[
            Job("running_job0", 2, "queue0", 50, [Task("Running", node="node0")]),
            Job("pending_job0", 1, "queue0", 100, [Task("Pending")]),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 1, 0)],
        expected={"running_job0": "Pending", "pending_job0": "Running"},
    ),
    Topology(
        "3 jobs running for queue0 on 4 GPUs, 1 pending build job for queue0, deserved of queue1 is 4 - preempt",
        jobs=[
            Job("running_job0", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("running_job1", 2, "queue0", 50, [Task("Running", node="node0")]),
            Job("running_job2", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("pending_job0", 4, "queue0", 100, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 4, 0)],
        expected={
            "running_job0": "Pending",
            "running_job1": "Pending",
            "running_job2": "Pending",
            "pending_job0": "Running",
        },
    ),
    Topology(
        "3 jobs running for queue0 on 4 GPUs, 1 pending build job for queue0, no node can contain build job - don't preempt",
        jobs=[
            Job("running_job0", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("running_job1", 2, "queue0", 50, [Task("Running", node="node1")]),
            Job("running_job2", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("pending_job0", 4, "queue0", 100, [Task("Pending")]),
        ],
        nodes={"node0": Node(2), "node1": Node(2)},
        queues=[Queue("queue0", 4, 0)],
        expected={
            "running_job0": "Running",
            "running_job1": "Running",
            "running_job2": "Running",
            "pending_job0": "Pending",
        },
    ),
    Topology(
        "3 jobs running for queue0 on 4 GPUs, 1 pending build job for queue0, deserved of queue1 is 3 - don't preempt",
        jobs=[
            Job("running_job0", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("running_job1", 2, "queue0", 50, [Task("Running", node="node0")]),
            Job("running_job2", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("pending_job0", 4, "queue0", 100, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 3, 0)],
        expected={
            "running_job0": "Running",
            "running_job1": "Running",
            "running_job2": "Running",
            "pending_job0": "Pending",
        },
    ),
    Topology(
        "No jobs pending - don't preempt",
        jobs=[
            Job("running_job0", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("running_job1", 2, "queue0", 100, [Task("Running", node="node0")]),
            Job("running_job2", 1, "queue0", 50, [Task("Running", node="node0")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 3, 0)],
        expected={"running_job0": "Running", "running_job1": "Running", "running_job2": "Running"},
    ),
]

SKIPPED = {
    "3 train job running, 1 build job pending - no need to preempt two jobs": (
        "GPU sharing (fractional GPUs) is not modelled (docs/kai.md)"
    ),
}


@pytest.mark.parametrize("top", CASES, ids=[c.name for c in CASES])
def test_integration(top: Topology) -> None:
    check_integration(top, SKIPPED)
