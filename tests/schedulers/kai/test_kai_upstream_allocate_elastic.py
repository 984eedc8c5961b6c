# ruff: noqa: E501  (upstream case names are kept whole)
"""KAI's allocate elastic table, ported case by case.

Upstream: NVIDIA/KAI-Scheduler ``pkg/scheduler/actions/allocate/allocateElastic_test.go`` ``TestHandleElasticAllocation``
(72de64f), every case in order with upstream's name, compared on job and task status as
``MatchExpectedAndRealTasks`` does. Cases needing what gangplane does not model are skipped with the
reason (``SKIPPED``): 7/7 ported and passing.
"""

from __future__ import annotations

import pytest
from kaiupstream import Job, Node, Queue, Task, Topology, check_case

CASES = [
    Topology(
        "Allocate elastic job - full allocate",
        jobs=[
            Job("pending_job0", 1, "queue0", 50, [Task("Pending"), Task("Pending")], min_available=1),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 1, 0)],
        task_expected={"pending_job0-0": "Binding", "pending_job0-1": "Binding"},
    ),
    Topology(
        "Allocate elastic job - partial allocate",
        jobs=[
            Job("pending_job0", 1, "queue0", 50, [Task("Pending"), Task("Pending")], min_available=1),
        ],
        nodes={"node0": Node(1)},
        queues=[Queue("queue0", 1, 0)],
        task_expected={"pending_job0-0": "Binding", "pending_job0-1": "Pending"},
    ),
    Topology(
        "Allocate elastic job - partial allocate - with priority",
        jobs=[
            Job(
                "pending_job0",
                1,
                "queue0",
                50,
                [Task("Pending", priority=1), Task("Pending", priority=2)],
                min_available=1,
            ),
        ],
        nodes={"node0": Node(1)},
        queues=[Queue("queue0", 1, 0)],
        task_expected={"pending_job0-0": "Pending", "pending_job0-1": "Binding"},
    ),
    Topology(
        "Allocate elastic job - full allocate - partially running",
        jobs=[
            Job(
                "running_job0",
                1,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Pending")],
                min_available=1,
            ),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 1, 0)],
        task_expected={"running_job0-0": "Running", "running_job0-1": "Binding"},
    ),
    Topology(
        "Allocate elastic job - partial allocate - some pods already running",
        jobs=[
            Job(
                "pending_job0",
                1,
                "queue0",
                50,
                [Task("Running", node="node0"), Task("Pending"), Task("Pending")],
                min_available=1,
            ),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 1, 0)],
        task_expected={"pending_job0-0": "Running", "pending_job0-1": "Binding", "pending_job0-2": "Pending"},
    ),
    Topology(
        "Allocate 2 elastic jobs - full and partial allocate",
        jobs=[
            Job(
                "pending_job0",
                1,
                "queue0",
                50,
                [Task("Pending"), Task("Pending"), Task("Pending")],
                min_available=1,
            ),
            Job(
                "pending_job1",
                1,
                "queue0",
                50,
                [Task("Pending"), Task("Pending"), Task("Pending")],
                min_available=1,
            ),
        ],
        nodes={"node0": Node(5)},
        queues=[Queue("queue0", 5, 0)],
        task_expected={
            "pending_job0-0": "Binding",
            "pending_job0-1": "Binding",
            "pending_job0-2": "Binding",
            "pending_job1-0": "Binding",
            "pending_job1-1": "Binding",
            "pending_job1-2": "Pending",
        },
    ),
    Topology(
        "Allocate 2 elastic jobs - both partial allocate",
        jobs=[
            Job(
                "pending_job0",
                1,
                "queue0",
                50,
                [Task("Pending"), Task("Pending"), Task("Pending"), Task("Pending")],
                min_available=1,
            ),
            Job(
                "pending_job1",
                1,
                "queue0",
                50,
                [Task("Pending"), Task("Pending"), Task("Pending"), Task("Pending")],
                min_available=1,
            ),
        ],
        nodes={"node0": Node(5)},
        queues=[Queue("queue0", 5, 0)],
        task_expected={
            "pending_job0-0": "Binding",
            "pending_job0-1": "Binding",
            "pending_job0-2": "Binding",
            "pending_job0-3": "Pending",
            "pending_job1-0": "Binding",
            "pending_job1-1": "Binding",
            "pending_job1-2": "Pending",
            "pending_job1-3": "Pending",
        },
    ),
]

SKIPPED: dict[str, str] = {}


@pytest.mark.parametrize("top", CASES, ids=[c.name for c in CASES])
def test_allocate(top: Topology) -> None:
    check_case(top, ["allocate"], SKIPPED)
