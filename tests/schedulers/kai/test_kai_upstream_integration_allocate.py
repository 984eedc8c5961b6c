# ruff: noqa: E501  (upstream case names are kept whole)
"""KAI's allocate integration table, ported case by case.

Upstream: NVIDIA/KAI-Scheduler ``pkg/scheduler/actions/integration_tests/allocate/allocate_test.go`` ``TestAllocateIntegrationTest`` (72de64f): every
case in order with upstream's name, run as ``integration_tests_utils.RunTest`` runs it (rounds of every
action with the results fed back, the expectations checked after each later round). Cases needing what
gangplane does not model are skipped with the reason (``SKIPPED``): 18/18 ported and passing.
"""

from __future__ import annotations

import pytest
from kaiupstream import Job, Node, Queue, Task, Topology, check_integration

CASES = [
    Topology(
        "allocate job but does not allow to project to go over allowance",
        jobs=[
            Job("pending_job0", 2, "queue0", 50, [Task("Pending")]),
            Job("pending_job1", 2, "queue0", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 2, 2, limit=2, parent="department-a")],
        departments=[Queue("department-a", 2, 2)],
        expected={"pending_job0": "Running", "pending_job1": "Pending"},
        rounds_until=1,
    ),
    Topology(
        "allocate job but does not allow to department to go over allowance",
        jobs=[
            Job("pending_job0", 2, "queue0", 50, [Task("Pending")]),
            Job("pending_job1", 2, "queue0", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 2, 0, parent="department-a")],
        departments=[Queue("department-a", 2, 2, limit=2)],
        expected={"pending_job0": "Running", "pending_job1": "Pending"},
        rounds_until=1,
    ),
    Topology(
        "allocate pending jobs, allow over quota for train jobs (with interactive jobs)",
        jobs=[
            Job("pending_job0", 1, "queue0", 100, [Task("Pending")]),
            Job("pending_job1", 1, "queue0", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 1, 0), Queue("queue1", 1, 0)],
        expected={"pending_job0": "Running", "pending_job1": "Running"},
        rounds_until=1,
    ),
    Topology(
        "don't allocate over quota build jobs",
        jobs=[
            Job("pending_job0", 2, "queue0", 100, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 1, 0), Queue("queue1", 1, 0)],
        expected={"pending_job0": "Pending"},
        rounds_until=1,
    ),
    Topology(
        "allocate according to creation time when share is equal",
        jobs=[
            Job("pending_job0", 1, "queue0", 100, [Task("Pending")]),
            Job("pending_job1", 1, "queue1", 100, [Task("Pending")]),
        ],
        nodes={"node0": Node(1)},
        queues=[Queue("queue0", 1, 0), Queue("queue1", 1, 0)],
        expected={"pending_job0": "Running", "pending_job1": "Pending"},
        rounds_until=1,
    ),
    Topology(
        "allocate according to priority",
        jobs=[
            Job("pending_job0", 1, "queue0", 100, [Task("Pending")]),
            Job("pending_job1", 1, "queue1", 100, [Task("Pending")]),
        ],
        nodes={"node0": Node(1)},
        queues=[Queue("queue0", 1, 0), Queue("queue1", 1, 0, priority=101)],
        expected={"pending_job0": "Pending", "pending_job1": "Running"},
        rounds_until=1,
    ),
    Topology(
        "1 build job pending for each queue with different share - allocate the second",
        jobs=[
            Job("pending_job0", 1, "queue0", 100, [Task("Pending")]),
            Job("pending_job1", 1, "queue1", 100, [Task("Pending")]),
        ],
        nodes={"node0": Node(1)},
        queues=[Queue("queue0", 1, 0), Queue("queue1", 2, 0)],
        expected={"pending_job0": "Pending", "pending_job1": "Running"},
        rounds_until=1,
    ),
    Topology(
        "6 pending train jobs - allocate the 1st 2 of each queue (verify the share is being updated during the allocation)",
        jobs=[
            Job("pending_job0", 1, "queue0", 50, [Task("Pending")]),
            Job("pending_job1", 1, "queue0", 50, [Task("Pending")]),
            Job("pending_job2", 1, "queue0", 50, [Task("Pending")]),
            Job("pending_job3", 1, "queue1", 50, [Task("Pending")]),
            Job("pending_job4", 1, "queue1", 50, [Task("Pending")]),
            Job("pending_job5", 1, "queue1", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 1, 0), Queue("queue1", 1, 0)],
        expected={
            "pending_job0": "Running",
            "pending_job1": "Running",
            "pending_job2": "Pending",
            "pending_job3": "Running",
            "pending_job4": "Running",
            "pending_job5": "Pending",
        },
        rounds_until=1,
    ),
    Topology(
        "Over provisioning with over quota, many queues to few GPUs - verify queue share is updated during the same allocation round",
        jobs=[
            Job("pending_job0", 1, "queue0", 50, [Task("Pending")]),
            Job("pending_job1", 1, "queue1", 50, [Task("Pending")]),
            Job("pending_job2", 1, "queue2", 50, [Task("Pending")]),
            Job("pending_job3", 1, "queue3", 50, [Task("Pending")]),
            Job("pending_job4", 1, "queue0", 50, [Task("Pending")]),
            Job("pending_job5", 1, "queue1", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 1, 0), Queue("queue1", 1, 0), Queue("queue2", 1, 0), Queue("queue3", 1, 0)],
        expected={
            "pending_job0": "Running",
            "pending_job1": "Running",
            "pending_job2": "Pending",
            "pending_job3": "Pending",
            "pending_job4": "Pending",
            "pending_job5": "Pending",
        },
        rounds_until=1,
    ),
    Topology(
        "Allocate Departments with smaller ratio 1st",
        jobs=[
            Job("pending_job0", 1, "queue0", 50, [Task("Pending")]),
            Job("pending_job1", 1, "queue1", 50, [Task("Pending")]),
            Job("pending_job2", 1, "queue2", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(1)},
        queues=[
            Queue("queue0", 3, 0, parent="d1"),
            Queue("queue1", 2, 0, parent="d1"),
            Queue("queue2", 1, 0, parent="d2"),
        ],
        departments=[Queue("d1", 1, 1), Queue("d2", 2, 2)],
        expected={"pending_job0": "Pending", "pending_job1": "Pending", "pending_job2": "Running"},
    ),
    Topology(
        "Don't allow allocation of interactive jobs above the department's deserved GPUs",
        jobs=[
            Job("pending_job0", 2, "queue0", 100, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[Queue("queue0", 2, 0, parent="d1"), Queue("queue1", 2, 0, parent="d2")],
        departments=[Queue("d1", 1, 1), Queue("d2", 1, 1)],
        expected={"pending_job0": "Pending"},
    ),
    Topology(
        "try to allocate interactive after train when over-quota - train should be preempted for interactive to run",
        jobs=[
            Job("running_job_train", 1, "queue0", 50, [Task("Running", node="node0")]),
            Job("pending_job_interactive", 1, "queue0", 100, [Task("Pending")]),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 1, 1, limit=1)],
        expected={"running_job_train": "Pending", "pending_job_interactive": "Running"},
        rounds_until=2,
    ),
    Topology(
        "try to allocate train after interactive when over-quota - train should not run",
        jobs=[
            Job("pending_job_interactive0", 1, "queue0", 100, [Task("Running", node="node0")]),
            Job("pending_job_train1", 1, "queue0", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("queue0", 1, 1, limit=1)],
        expected={"pending_job_interactive0": "Running", "pending_job_train1": "Pending"},
        rounds_until=1,
    ),
    Topology(
        "don't allow job over QUEUE deserved CPU",
        jobs=[
            Job("pending_job0", 1, "queue0", 50, [Task("Pending")], cpu_millis=2000),
            Job("pending_job1", 1, "queue0", 50, [Task("Pending")], cpu_millis=2000),
        ],
        nodes={"node0": Node(4, cpu_millis=5000)},
        queues=[Queue("queue0", 2, 2, limit=2, parent="department-a", limit_cpu=2500000)],
        departments=[Queue("department-a", 2, 2)],
        expected={"pending_job0": "Running", "pending_job1": "Pending"},
        rounds_until=1,
    ),
    Topology(
        "don't allow job over DEPARTMENT deserved CPU",
        jobs=[
            Job("pending_job0", 1, "queue0", 50, [Task("Pending")], cpu_millis=2000),
            Job("pending_job1", 1, "queue0", 50, [Task("Pending")], cpu_millis=2000),
        ],
        nodes={"node0": Node(4, cpu_millis=5000)},
        queues=[Queue("queue0", 2, 2, limit=2, parent="department-a")],
        departments=[Queue("department-a", 2, 2, limit_cpu=2500000)],
        expected={"pending_job0": "Running", "pending_job1": "Pending"},
        rounds_until=1,
    ),
    Topology(
        "single level queue hierarchy - allocate job",
        jobs=[
            Job("pending_job0", 1, "root-queue", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(2)},
        queues=[Queue("root-queue", 2, 0)],
        expected={"pending_job0": "Running"},
        rounds_until=1,
    ),
    Topology(
        "three level queue hierarchy - allocate jobs across teams",
        jobs=[
            Job("job_team1", 1, "team1", 50, [Task("Pending")]),
            Job("job_team2", 1, "team2", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[
            Queue("org", 4, 0),
            Queue("dept1", 2, 0, parent="org"),
            Queue("team1", 1, 0, parent="dept1"),
            Queue("team2", 1, 0, parent="dept1"),
        ],
        expected={"job_team1": "Running", "job_team2": "Running"},
        rounds_until=1,
    ),
    Topology(
        "four level queue hierarchy - allocate job at deepest level",
        jobs=[
            Job("deep_job", 2, "project", 50, [Task("Pending")]),
        ],
        nodes={"node0": Node(4)},
        queues=[
            Queue("company", 10, 0),
            Queue("division", 5, 0, parent="company"),
            Queue("department", 3, 0, parent="division"),
            Queue("project", 2, 0, parent="department"),
        ],
        expected={"deep_job": "Running"},
        rounds_until=1,
    ),
]

SKIPPED: dict[str, str] = {}


@pytest.mark.parametrize("top", CASES, ids=[c.name for c in CASES])
def test_integration(top: Topology) -> None:
    check_integration(top, SKIPPED)
