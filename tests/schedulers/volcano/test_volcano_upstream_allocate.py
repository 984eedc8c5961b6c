"""Volcano's allocate action tables, ported case by case.

Upstream: volcano-sh/volcano ``pkg/scheduler/actions/allocate/allocate_test.go`` (ed72c7c). ``TestAllocate``
6/6. The network-topology tables are in test_volcano_upstream_topology.py.
"""

from __future__ import annotations

import pytest
from vcupstream import Case, check, node, pod, pod_group, queue, res, run

from gangplane.schedulers.volcano.config import Action

PENDING = "Pending"
MASTER = {"volcano.sh/task-spec": "master"}
WORKER = {"volcano.sh/task-spec": "worker"}
ON_MASTER, ON_WORKER = {"nodeRole": "master"}, {"nodeRole": "worker"}
R = res("1", "1G")

CASES = [
    Case(
        "prepredicate failed: node selector does not match",
        pod_groups=[pod_group("pg1", "c1", "c1", 1, None, "Inqueue")],
        pods=[
            pod("c1", "p1", "", PENDING, R, "pg1", MASTER, ON_MASTER),
            pod("c1", "p2", "", PENDING, R, "pg1", WORKER, ON_WORKER),
        ],
        nodes=[node("n1", res("2", "4Gi", pods="10"), ON_WORKER)],
        queues=[queue("c1", 1)],
        binds={"c1/p2": "n1"},
        binds_num=1,
    ),
    Case(
        "prepredicate failed and tasks are not used up, continue on until min member meet",
        pod_groups=[pod_group("pg1", "c1", "c1", 2, {"master": 1, "worker": 1}, "Inqueue")],
        pods=[
            pod("c1", "p0", "", PENDING, R, "pg1", MASTER, ON_MASTER),
            pod("c1", "p1", "", PENDING, R, "pg1", MASTER, ON_MASTER),
            pod("c1", "p2", "", PENDING, R, "pg1", WORKER, ON_WORKER),
            pod("c1", "p3", "", PENDING, R, "pg1", WORKER, ON_WORKER),
        ],
        nodes=[
            node("n1", res("1", "2Gi", pods="10"), ON_MASTER),
            node("n2", res("1", "2Gi", pods="10"), ON_WORKER),
        ],
        queues=[queue("c1", 1)],
        binds={"c1/p0": "n1", "c1/p2": "n2"},
        binds_num=2,
    ),
    Case(
        "master's min member can not be allocated, break from allocating",
        pod_groups=[pod_group("pg1", "c1", "c1", 2, {"master": 2, "worker": 0}, "Inqueue")],
        pods=[
            pod("c1", "p0", "", PENDING, R, "pg1", MASTER, ON_MASTER),
            pod("c1", "p1", "", PENDING, R, "pg1", MASTER, ON_MASTER),
            pod("c1", "p2", "", PENDING, R, "pg1", WORKER, ON_WORKER),
            pod("c1", "p3", "", PENDING, R, "pg1", WORKER, ON_WORKER),
        ],
        nodes=[
            node("n1", res("1", "2Gi", pods="10"), ON_MASTER),
            node("n2", res("2", "2Gi", pods="10"), ON_WORKER),
        ],
        queues=[queue("c1", 1)],
        binds={},
        binds_num=0,
    ),
    Case(
        "one Job with two Pods on one node",
        pod_groups=[pod_group("pg1", "c1", "c1", 0, None, "Inqueue")],
        pods=[pod("c1", "p1", "", PENDING, R, "pg1"), pod("c1", "p2", "", PENDING, R, "pg1")],
        nodes=[node("n1", res("2", "4Gi", pods="10"))],
        queues=[queue("c1", 1)],
        binds={"c1/p1": "n1", "c1/p2": "n1"},
        binds_num=2,
    ),
    Case(
        "two Jobs on one node",
        pod_groups=[
            pod_group("pg1", "c1", "c1", 0, None, "Inqueue"),
            pod_group("pg2", "c2", "c2", 0, None, "Inqueue"),
        ],
        pods=[
            pod("c1", "pg1-p-1", "", PENDING, R, "pg1"),
            pod("c1", "pg1-p-2", "", PENDING, R, "pg1"),
            pod("c2", "pg2-p-1", "", PENDING, R, "pg2"),
            pod("c2", "pg2-p-2", "", PENDING, R, "pg2"),
        ],
        nodes=[node("n1", res("2", "4G", pods="10"))],
        queues=[queue("c1", 1), queue("c2", 1)],
        binds={"c2/pg2-p-1": "n1", "c1/pg1-p-1": "n1"},
        binds_num=2,
    ),
    Case(
        "high priority queue should not block others",
        pod_groups=[
            pod_group("pg1", "c1", "c1", 0, None, "Inqueue"),
            pod_group("pg2", "c1", "c2", 0, None, "Inqueue"),
        ],
        pods=[
            pod("c1", "p1", "", PENDING, res("3", "1G"), "pg1"),
            pod("c1", "p2", "", PENDING, R, "pg2"),
        ],
        nodes=[node("n1", res("2", "4G", pods="10"))],
        queues=[queue("c1", 1), queue("c2", 1)],
        binds={"c1/p2": "n1"},
        binds_num=1,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_allocate(case: Case) -> None:
    check(case, run(case, [Action.ALLOCATE]))
