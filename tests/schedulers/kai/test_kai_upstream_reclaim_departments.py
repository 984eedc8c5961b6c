# ruff: noqa: E501  (upstream case names are kept whole)
"""KAI's reclaim departments table, ported case by case.

Upstream: NVIDIA/KAI-Scheduler ``pkg/scheduler/actions/reclaim/reclaimDepartments_test.go`` ``TestHandleDepartmentsReclaim``
(72de64f), every case in order with upstream's name, compared on job and task status as
``MatchExpectedAndRealTasks`` does. Cases needing what gangplane does not model are skipped with the
reason (``SKIPPED``): 9/9 ported and passing.
"""

from __future__ import annotations

import pytest
from kaiupstream import Job, Node, Queue, Task, Topology, check_case

CASES = [
    Topology(
        "Classic reclaim for train jobs between departments",
        jobs=[
            Job("running_job0", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("running_job1", 1, "queue0", 100, [Task("Running", node="node0")]),
            Job("pending_job0", 1, "queue1", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 1, 0, parent="d1"), Queue("queue1", 1, 0, parent="d2")],
        departments=[Queue("d1", 1, 1), Queue("d2", 1, 1)],
        expected={"running_job0": "Releasing", "running_job1": "Running", "pending_job0": "Pipelined"},
    ),
    Topology(
        "Classic interactive job reclaim train job from different department",
        jobs=[
            Job("running_job0", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("running_job1", 1, "queue0", 100, [Task("Running", node="node0")]),
            Job("pending_job0", 1, "queue1", 100, [Task("Pending")]),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 1, 1, parent="d1"), Queue("queue1", 1, 1, parent="d2")],
        departments=[Queue("d1", 1, 1), Queue("d2", 1, 1)],
        expected={"running_job0": "Releasing", "running_job1": "Running", "pending_job0": "Pipelined"},
    ),
    Topology(
        "Don't reclaim if department will be overquota",
        jobs=[
            Job("running_job0", 3, "queue0", 50, [Task("Running", node="node0")]),
            Job("running_job1", 1, "queue1", 100, [Task("Running", node="node0")]),
            Job("pending_job0", 2, "queue1", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[
            Queue("queue0", 1, 1, parent="d1"),
            Queue("queue1", 1, 1, parent="d2"),
            Queue("queue2", 1, 1, parent="d2"),
        ],
        departments=[Queue("d1", 2, 2), Queue("d2", 2, 2)],
        expected={"running_job0": "Running", "running_job1": "Running", "pending_job0": "Pending"},
    ),
    Topology(
        "Reclaim trains according to deserved quota",
        jobs=[
            Job("running_job0", 4, "queue0", 50, [Task("Running", node="node0")]),
            Job("running_job1", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("pending_job0", 4, "queue1", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(8)},
        queues=[Queue("queue0", 1, 1, parent="d1"), Queue("queue1", 1, 1, parent="d2")],
        departments=[Queue("d1", 1, 1), Queue("d2", 1, 1)],
        expected={"running_job0": "Running", "running_job1": "Releasing", "pending_job0": "Pipelined"},
    ),
    Topology(
        "Reclaim from different department and same department",
        jobs=[
            Job("running_job0", 2, "queue0", 50, [Task("Running", node="node0")]),
            Job("running_job1", 2, "queue1", 50, [Task("Running", node="node0")]),
            Job("pending_job0", 4, "queue2", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[
            Queue("queue0", 1, 1, parent="d1"),
            Queue("queue1", 0, 0, parent="d2"),
            Queue("queue2", 4, 4, parent="d2"),
        ],
        departments=[Queue("d1", 0, 0), Queue("d2", 4, 4)],
        expected={"running_job0": "Releasing", "running_job1": "Releasing", "pending_job0": "Pipelined"},
    ),
    Topology(
        "Verify reclaim doesn't happen between department by fairness",
        jobs=[
            Job("running_job0", 2, "queue0", 50, [Task("Running", node="node0")]),
            Job("running_job1", 2, "queue1", 50, [Task("Running", node="node0")]),
            Job("pending_job0", 1, "queue0", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 3, 3, parent="d0"), Queue("queue1", 1, 1, parent="d1")],
        departments=[Queue("d0", 1, 1), Queue("d1", 1, 1)],
        expected={"running_job0": "Running", "running_job1": "Running", "pending_job0": "Pending"},
    ),
    Topology(
        "Verify department interactive will not go over quota even if department has enough reclaimable deserved",
        jobs=[
            Job("running_job0", 1, "queue0", 100, [Task("Running", node="node0")]),
            Job("running_job1", 3, "queue1", 50, [Task("Running", node="node0")]),
            Job("pending_job0", 1, "queue0", 100, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 3, 3, parent="d0"), Queue("queue1", 3, 3, parent="d1")],
        departments=[Queue("d0", 1, 1), Queue("d1", 1, 1)],
        expected={"running_job0": "Running", "running_job1": "Running", "pending_job0": "Pending"},
    ),
    Topology(
        "Verify department train will not go over quota even if department has enough reclaimable deserved",
        jobs=[
            Job("running_job0", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("running_job1", 3, "queue1", 50, [Task("Running", node="node0")]),
            Job("pending_job0", 1, "queue0", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 1, 1, parent="d0"), Queue("queue1", 1, 1, parent="d1")],
        departments=[Queue("d0", 1, 1), Queue("d1", 1, 1)],
        expected={"running_job0": "Running", "running_job1": "Releasing", "pending_job0": "Pipelined"},
    ),
    Topology(
        "Reclaim from overquota department with multiple departments",
        jobs=[
            Job("d1_p1_pending_job", 1, "d1_project1", 125, [Task("Pending")]),
            Job("d1_p2_job1", 1, "d1_project2", 50, [Task("Running", node="node0")]),
            Job("d1_p2_job2", 1, "d1_project2", 50, [Task("Running", node="node0")]),
            Job("d1_p2_job3", 1, "d1_project2", 50, [Task("Running", node="node0")]),
            Job("d1_p2_job4", 1, "d1_project2", 50, [Task("Running", node="node0")]),
            Job("d2_job1", 1, "d2_project1", 50, [Task("Running", node="node0")]),
            Job("d2_job2", 1, "d2_project1", 50, [Task("Running", node="node0")]),
            Job("d2_job3", 1, "d2_project1", 50, [Task("Running", node="node0")]),
            Job("d2_job4", 1, "d2_project1", 50, [Task("Running", node="node0")]),
            Job("d2_job5", 1, "d2_project1", 50, [Task("Running", node="node0")]),
            Job("d2_job6", 1, "d2_project1", 50, [Task("Running", node="node0")]),
            Job("d2_job7", 1, "d2_project1", 50, [Task("Running", node="node0")]),
            Job("d2_job8", 1, "d2_project1", 50, [Task("Running", node="node0")]),
            Job("d3_job1", 1, "d3_project1", 50, [Task("Running", node="node0")]),
            Job("d3_job2", 1, "d3_project1", 50, [Task("Running", node="node0")]),
            Job("d3_job3", 1, "d3_project1", 50, [Task("Running", node="node0")]),
            Job("d3_job4", 1, "d3_project1", 50, [Task("Running", node="node0")]),
            Job("d4_job1", 5, "d4_project1", 50, [Task("Pending", node="node0")]),
        ],
        nodes={"node0": Node(16)},
        queues=[
            Queue("d1_project1", 3, 3, parent="d1"),
            Queue("d1_project2", 1, 1, parent="d1"),
            Queue("d2_project1", 4, 4, parent="d2"),
            Queue("d3_project1", 4, 4, parent="d3"),
            Queue("d4_project1", 4, 4, parent="d4"),
        ],
        departments=[Queue("d1", 4, 4), Queue("d2", 4, 4), Queue("d3", 4, 4), Queue("d4", 4, 4)],
        expected={"d1_p1_pending_job": "Pipelined", "d2_job8": "Releasing"},
    ),
]

SKIPPED: dict[str, str] = {}


@pytest.mark.parametrize("top", CASES, ids=[c.name for c in CASES])
def test_reclaim(top: Topology) -> None:
    check_case(top, ["reclaim"], SKIPPED)
