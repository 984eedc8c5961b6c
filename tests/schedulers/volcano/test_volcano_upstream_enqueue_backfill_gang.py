"""Volcano's enqueue and backfill action tables and the gang plugin table, ported case by case.

Upstream (volcano-sh/volcano, ed72c7c):
- ``pkg/scheduler/actions/enqueue/enqueue_test.go`` ``TestEnqueue``: 5/5 (no overcommit plugin there).
- ``pkg/scheduler/actions/backfill/backfill_test.go`` ``TestPickUpPendingTasks``: 1/1, as the order backfill
  binds best-effort tasks in (upstream pipelines half of them by hand first; gangplane has no per-task
  pipelined state, so all start pending; the order rule, job order then task priority, is the same).
- ``pkg/scheduler/plugins/gang/gang_test.go`` ``TestShouldSkipUnschedulableForReleasing``: 5/5.
"""

from __future__ import annotations

import pytest
from vcupstream import Case, check, node, pod, pod_group, priority_class, queue, res, run

from gangplane.schedulers.volcano.config import Action
from gangplane.schedulers.volcano.status import releasing_keeps_gang

RUNNING, PENDING = "Running", "Pending"

ENQUEUE = [
    Case(
        "when podgroup status is inqueue",
        pod_groups=[pod_group("pg1", "c1", "c1", 2, None, "Inqueue")],
        pods=[
            pod("c1", "p1", "", PENDING, res("1", "1G"), "pg1"),
            pod("c1", "p2", "", PENDING, res("1", "1G"), "pg1"),
        ],
        nodes=[],
        queues=[queue("c1", 1, res("4", "4G")), queue("c2", 1, res("4", "4G"))],
        status={"c1/pg1": "Inqueue"},
    ),
    Case(
        "when podgroup status is pending",
        pod_groups=[
            pod_group("pg1", "c1", "c1", 1, None, "Pending"),
            pod_group("pg2", "c1", "c2", 1, None, "Pending"),
        ],
        pods=[
            pod("c1", "p1", "", PENDING, res("3", "1G"), "pg1"),
            pod("c1", "p2", "", PENDING, res("1", "1G"), "pg2"),
        ],
        nodes=[],
        queues=[queue("c1", 1, res("4", "4G")), queue("c2", 1, res("4", "4G"))],
        status={"c1/pg1": "Inqueue", "c1/pg2": "Inqueue"},
    ),
    Case(
        "when podgroup status is running",
        pod_groups=[pod_group("pg1", "c1", "c1", 2, None, "Running")],
        pods=[
            pod("c1", "p1", "", RUNNING, res("1", "1G"), "pg1"),
            pod("c1", "p2", "", RUNNING, res("1", "1G"), "pg1"),
        ],
        nodes=[],
        queues=[queue("c1", 1, res("4", "4G"))],
        status={"c1/pg1": "Running"},
    ),
    Case(
        "pggroup cannot enqueue because the specified queue is c1, but there is only c2",
        pod_groups=[pod_group("pg1", "c1", "c1", 0, None, "Pending")],
        pods=[],
        nodes=[],
        queues=[queue("c2", 1, res("4", "4G"))],
    ),
    Case(
        "pggroup cannot enqueue because queue resources are less than podgroup MinResources",
        pod_groups=[pod_group("pg1", "c1", "c1", 1, None, "Pending", min_resources=res("8", "8G"))],
        pods=[],
        nodes=[],
        queues=[queue("c1", 1, res("1", "1G"))],
        status={"c1/pg1": "Pending"},
    ),
]


@pytest.mark.parametrize("case", ENQUEUE, ids=[c.name for c in ENQUEUE])
def test_enqueue(case: Case) -> None:
    out = run(case, [Action.ENQUEUE])
    check(case, out)
    if case.name.startswith("pggroup cannot enqueue because the specified queue"):
        assert "c1/pg1" not in out.phases  # upstream leaves the job out of the session


def test_backfill_picks_best_effort_tasks_in_job_then_task_order() -> None:
    # TestPickUpPendingTasks "test": pg2 (job priority 2) before pg1, tasks by pod priority, best-effort only.
    pods = [
        pod("default", f"{pg}-{kind}-task-{prio}", "", PENDING, req, pg, priority=prio)
        for pg in ("pg1", "pg2")
        for prio in (1, 2, 3, 4)
        for kind, req in (("besteffort", {}), ("unbesteffort", {"cpu": "500m"}))
    ]
    case = Case(
        "test",
        pods=pods,
        nodes=[node("node1", res("8", "8G", pods="110"))],
        pod_groups=[
            pod_group("pg1", "default", "q1", 1, {"": 3}, "Inqueue", "job-priority-1"),
            pod_group("pg2", "default", "q1", 1, {"": 3}, "Inqueue", "job-priority-2"),
        ],
        queues=[queue("q1", 1)],
        priority_classes=[priority_class("job-priority-1", 1), priority_class("job-priority-2", 2)],
    )
    out = run(case, [Action.BACKFILL])
    assert [b.pod_key.split("/")[1] for b in out.result.bindings] == [
        f"{pg}-besteffort-task-{prio}" for pg in ("pg2", "pg1") for prio in (4, 3, 2, 1)
    ]


# TestShouldSkipUnschedulableForReleasing: (name, minMember, tasks as (status, node), pipelined replacement)
RELEASING = [
    ("partial termination", 2, [("Running", "node-1"), ("Releasing", "node-2")], False, True),
    (
        "pending replacement still needs condition",
        2,
        [("Running", "node-1"), ("Releasing", "node-2"), ("Pending", "")],
        False,
        False,
    ),
    (
        "pipelined replacement still needs condition",
        2,
        [("Running", "node-1"), ("Releasing", "node-2")],
        True,
        False,
    ),
    ("never scheduled releasing task is not counted", 1, [("Releasing", "")], False, False),
    ("scheduled tasks below minAvailable", 3, [("Running", "node-1"), ("Releasing", "node-2")], False, False),
]


@pytest.mark.parametrize(("name", "minimum", "tasks", "pipelined", "expected"), RELEASING)
def test_should_skip_unschedulable_for_releasing(
    name: str, minimum: int, tasks: list[tuple[str, str]], pipelined: bool, expected: bool
) -> None:
    # The pipelined replacement has no pod state of its own in gangplane: it is the job's pipelined flag.
    pods = [
        pod(
            "ns",
            f"t{i}",
            where,
            "Pending" if status == "Pending" else "Running",
            res("1", "1G"),
            "job-1",
            deleting=status == "Releasing",
        )
        for i, (status, where) in enumerate(tasks)
    ]
    nodes = [node(n, res("8", "8G", pods="10")) for n in ("node-1", "node-2")]
    case = Case(
        name,
        pods=pods,
        nodes=nodes,
        pod_groups=[pod_group("job-1", "ns", "q", minimum, None, "Running")],
        queues=[queue("q")],
    )
    out = run(case, [])
    assert out.session is not None
    job = out.session.jobs["ns/job-1"]
    assert releasing_keeps_gang(job, pipelined) is expected


def test_a_gang_shutting_down_gets_no_unschedulable_condition() -> None:
    pods = [
        pod("ns", "t0", "n1", RUNNING, res("1", "1G"), "pg"),
        pod("ns", "t1", "n1", RUNNING, res("1", "1G"), "pg", deleting=True),
    ]
    case = Case(
        "",
        pods=pods,
        nodes=[node("n1", res("8", "8G", pods="10"))],
        pod_groups=[pod_group("pg", "ns", "q", 2, None, "Running")],
        queues=[queue("q")],
    )
    writes = [w for w in run(case, []).result.status_writes if w.name == "pg"]
    assert all(c["type"] != "Unschedulable" for w in writes for c in w.status.get("conditions", []))
