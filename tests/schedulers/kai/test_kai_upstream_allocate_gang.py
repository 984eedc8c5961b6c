"""KAI's allocate gang table, ported case by case.

Upstream: NVIDIA/KAI-Scheduler ``pkg/scheduler/actions/allocate/allocateGang_test.go`` ``TestHandleGangAllocation``
(72de64f), every case in order with upstream's name, compared on job and task status as
``MatchExpectedAndRealTasks`` does. Cases needing what gangplane does not model are skipped with the
reason (``SKIPPED``): 6/6 ported and passing.
"""

from __future__ import annotations

import pytest
from kaiupstream import Job, Node, Queue, Task, Topology, check_case

CASES = [
    Topology(
        "Allocate train gang job",
        jobs=[
            Job("pending_job0", 1, "queue0", 50, [Task("Pending"), Task("Pending")]),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 1, 0)],
        expected={"pending_job0": "Binding"},
    ),
    Topology(
        "Allocate build gang job",
        jobs=[
            Job("pending_job0", 1, "queue0", 100, [Task("Pending"), Task("Pending")]),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 2, 0)],
        expected={"pending_job0": "Binding"},
    ),
    Topology(
        "Allocate build gang job on 2 nodes",
        jobs=[
            Job("pending_job0", 1, "queue0", 100, [Task("Pending"), Task("Pending")]),
        ],
        nodes={"node0": Node(1), "node1": Node(1)},
        queues=[Queue("queue0", 2, 0)],
        expected={"pending_job0": "Binding"},
    ),
    Topology(
        "Don't allocate gang job if not all tasks are allocatable",
        jobs=[
            Job("pending_job0", 2, "queue0", 100, [Task("Pending"), Task("Pending")]),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 2, 0)],
        expected={"pending_job0": "Pending"},
    ),
    Topology(
        "Don't allocate gang interactive job if it will go over quota",
        jobs=[
            Job("pending_job0", 2, "queue0", 100, [Task("Pending"), Task("Pending")]),
        ],
        nodes={"node0": Node(10)},
        queues=[Queue("queue0", 3, 0)],
        expected={"pending_job0": "Pending"},
    ),
    Topology(
        "Pipeline if resource aren't currently allocatable",
        jobs=[
            Job("running_job0", 1, "queue0", 50, [Task("Releasing", node="node0")]),
            Job("pending_job0", 2, "queue0", 50, [Task("Pending"), Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 3, 0)],
        expected={"running_job0": "Releasing", "pending_job0": "Pipelined"},
    ),
]

SKIPPED: dict[str, str] = {}


@pytest.mark.parametrize("top", CASES, ids=[c.name for c in CASES])
def test_allocate(top: Topology) -> None:
    check_case(top, ["allocate"], SKIPPED)
