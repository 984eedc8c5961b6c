# ruff: noqa: E501  (upstream case names are kept whole)
"""KAI's preempt gang integration table, ported case by case.

Upstream: NVIDIA/KAI-Scheduler ``pkg/scheduler/actions/integration_tests/preempt/preemptGang_test.go`` ``TestPreemptGangIntegrationTest`` (72de64f): every
case in order with upstream's name, run as ``integration_tests_utils.RunTest`` runs it (rounds of every
action with the results fed back, the expectations checked after each later round). Cases needing what
gangplane does not model are skipped with the reason (``SKIPPED``): 3/3 ported and passing.
"""

from __future__ import annotations

import pytest
from kaiupstream import Job, Node, Queue, Task, Topology, check_integration

CASES = [
    Topology(
        "Classic gang preempt",
        jobs=[
            Job("running_job0", 2, "queue0", 50, [Task("Running", node="node0")]),
            Job("pending_job0", 1, "queue0", 100, [Task("Pending"), Task("Pending")]),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 2, 0)],
        expected={"running_job0": "Pending", "pending_job0": "Running"},
    ),
    Topology(
        "Some of the pods are running and some are pending- preempt those who are needed in order to allocate all the pods of gang job",
        jobs=[
            Job("running_job0", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("running_job1", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("pending_job0", 1, "queue0", 100, [Task("Running", node="node0"), Task("Pending")]),
        ],
        nodes={"node0": Node(3)},
        queues=[Queue("queue0", 2, 0)],
        expected={"running_job0": "Running", "running_job1": "Pending", "pending_job0": "Running"},
    ),
    Topology(
        "preempt gang job",
        jobs=[
            Job(
                "running_gang_job0",
                1,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Running", node="node0")],
            ),
            Job("pending_job0", 1, "queue0", 100, [Task("Pending")]),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 1, 0)],
        expected={"running_gang_job0": "Pending", "pending_job0": "Running"},
    ),
]

SKIPPED: dict[str, str] = {}


@pytest.mark.parametrize("top", CASES, ids=[c.name for c in CASES])
def test_integration(top: Topology) -> None:
    check_integration(top, SKIPPED)
