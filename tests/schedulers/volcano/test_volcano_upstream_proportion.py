"""Volcano's proportion plugin tables, ported case by case.

Upstream: volcano-sh/volcano ``pkg/scheduler/plugins/proportion/proportion_test.go`` (ed72c7c):
- ``TestEnqueueAndAllocable`` 5/5 (upstream switches single callbacks off per case; gangplane always runs
  all of them, and each case's expectation holds with all on, which upstream's ``allEnable`` cases show);
- ``TestAllocate`` 1/1 (differs by design: Allocatable is always on; a variant shows the queue order);
- ``TestNoDoubleCountingForInqueueJobWithBindingTasks`` 1/1 (two sessions).
Not ported: ``TestProportion`` (asserts Prometheus metrics over a live cache and port 8081; gangplane's queue
``allocated`` is checked in test_volcano_queues.py) and ``TestJobEnqueuedOnOtherPluginsReject`` (needs a
test-only plugin that rejects jobs; gangplane has no pluggable JobEnqueueable).
"""

from __future__ import annotations

import pytest
from vcupstream import Case, check, node, pod, pod_group, queue, res, run

from gangplane.schedulers.volcano.book import SharePolicy
from gangplane.schedulers.volcano.config import Action

RUNNING, PENDING = "Running", "Pending"
N1 = node("n1", res("2", "2G", pods="10"))
N2 = node("n2", res("2", "2G", pods="10"))
R1C2G, R2C1G, R1C0G, R0C1G, R1C1G = (
    res("1", "2G"),
    res("2", "1G"),
    res("1", "0G"),
    res("0", "1G"),
    res("1", "1G"),
)
P1 = pod("ns1", "pod1", "n1", RUNNING, R1C2G, "pg1")
P2 = pod("ns1", "pod2", "n2", RUNNING, R2C1G, "pg2")
P3 = pod("ns1", "pod3", "", PENDING, R1C0G, "pg3")
P4 = pod("ns1", "pod4", "", PENDING, R0C1G, "pg4")
P5 = pod("ns1", "pod5", "", PENDING, R1C1G, "pg5")
P6 = pod("ns1", "pod6", "", PENDING, R1C1G, "pg6")
PG1 = pod_group("pg1", "ns1", "q1", 1, None, "Running", min_resources=R1C2G)
PG2 = pod_group("pg2", "ns1", "q2", 1, None, "Running", min_resources=R2C1G)
PG3 = pod_group("pg3", "ns1", "q1", 1, None, "Pending", min_resources=R1C0G)
PG4 = pod_group("pg4", "ns1", "q2", 1, None, "Pending", min_resources=R0C1G)
PG5 = pod_group("pg5", "ns1", "q1", 1, None, "Pending", min_resources=R1C1G)
PG6 = pod_group("pg6", "ns1", "q3", 1, None, "Pending", min_resources=R1C1G)
Q1 = queue("q1", 1, res("2", "2G"))
Q2 = queue("q2", 1, res("3", "3G"))
Q3_CLOSED = queue("q3", 1, res("3", "3G"), state="Closed")

ENQUEUE_AND_ALLOCATABLE = [
    Case(
        "case0: memory exceed derserved, job only request cpu can be enqueued and allocated",
        pods=[P1, P2, P3],
        nodes=[N1, N2],
        pod_groups=[PG1, PG2, PG3],
        queues=[Q1, Q2],
        binds_num=1,
        binds={"ns1/pod3": "n1"},
    ),
    Case(
        "case1: cpu exceed derserved, job only request memory can be enqueued and allocated",
        pods=[P1, P2, P4],
        nodes=[N1, N2],
        pod_groups=[PG1, PG2, PG4],
        queues=[Q1, Q2],
        binds_num=1,
        binds={"ns1/pod4": "n2"},
    ),
    Case(
        "case2: exceed capacity, can not enqueue",
        pods=[P1, P2, P5],
        nodes=[N1, N2],
        pod_groups=[PG1, PG2, PG5],
        queues=[Q1, Q2],
        binds_num=0,
        binds={},
        status={"ns1/pg5": "Pending"},
    ),
    Case(
        "case3: exceed deserved, can not allocate",
        pods=[P1, P2, P5],
        nodes=[N1, N2],
        pod_groups=[PG1, PG2, PG5],
        queues=[Q1, Q2],
        binds_num=0,
        binds={},
    ),
    Case(
        "case4: queue with  non-open state, can not enqueue",
        pods=[P6],
        nodes=[N1, N2],
        pod_groups=[PG6],
        queues=[Q3_CLOSED],
        binds_num=0,
        binds={},
        status={"ns1/pg6": "Pending"},
    ),
]


@pytest.mark.parametrize("case", ENQUEUE_AND_ALLOCATABLE, ids=[c.name for c in ENQUEUE_AND_ALLOCATABLE])
def test_enqueue_and_allocatable(case: Case) -> None:
    check(case, run(case, [Action.ENQUEUE, Action.ALLOCATE]))


@pytest.mark.parametrize("deserved", [None, res("2", "4Gi")])
def test_allocate_in_queue_priority_order(deserved: dict[str, str] | None) -> None:
    # TestAllocate "case0: Pods are assigned according to the order of Queue Priority in which PGs are
    # placed". Upstream's tier enables only proportion's QueueOrder; gangplane always applies Allocatable too
    # (as Volcano's default configuration does), under which each queue deserves 4/3 CPU and no 2-CPU pod is
    # admitted. Under ``capacity`` with ``deserved`` set so Allocatable admits one pod per queue, the queue
    # priority order decides, as upstream expects.
    n1, n2 = node("n1", res("2", "4Gi", pods="10")), node("n2", res("2", "4Gi", pods="10"))
    cap = res("2", "4Gi")
    case = Case(
        "case0",
        pods=[
            pod("ns1", "p1", "n1", RUNNING, res("2", "4Gi"), "pg1"),
            pod("ns1", "p2", "", PENDING, res("2", "4Gi"), "pg2"),
            pod("ns1", "p3", "", PENDING, res("2", "4Gi"), "pg3"),
        ],
        nodes=[n1, n2],
        pod_groups=[
            pod_group("pg1", "ns1", "q1", 1, None, "Running"),
            pod_group("pg2", "ns1", "q2", 1, None, "Inqueue"),
            pod_group("pg3", "ns1", "q3", 1, None, "Inqueue"),
        ],
        queues=[
            queue("q1", 1, cap, priority=5, deserved=deserved),
            queue("q2", 1, cap, priority=1, deserved=deserved),
            queue("q3", 1, cap, priority=10, deserved=deserved),
        ],
        binds={"ns1/p3": "n2"} if deserved else {},
        differs="" if deserved else "Allocatable is always on in gangplane",
    )
    policy = SharePolicy.CAPACITY if deserved else SharePolicy.PROPORTION
    check(case, run(case, [Action.ALLOCATE, Action.RECLAIM], share_policy=policy))


def test_no_double_counting_for_inqueue_job_with_binding_tasks() -> None:
    # Session 1 binds jobA's three pods while its PodGroup stays Inqueue; session 2 must count them once,
    # so jobB (1 CPU) still fits the queue's 4 CPUs and is enqueued and bound.
    n1 = node("n1", res("4", "8Gi", pods="10"))
    one = res("1", "1Gi")
    pg_a = pod_group("pgA", "ns1", "q1", 3, None, "Inqueue", min_resources=res("3", "3Gi"))
    pods_a = [pod("ns1", f"pA{i}", "", PENDING, one, "pgA") for i in (1, 2, 3)]
    q1 = queue("q1", 1, res("4", "8Gi"))
    first = run(Case("cycle 1", pods=pods_a, nodes=[n1], pod_groups=[pg_a], queues=[q1]), [Action.ALLOCATE])
    assert sorted(first.binds) == ["ns1/pA1", "ns1/pA2", "ns1/pA3"]
    bound = [
        {**p, "spec": {**p["spec"], "nodeName": first.binds[f"ns1/{p['metadata']['name']}"]}} for p in pods_a
    ]
    pg_b = pod_group("pgB", "ns1", "q1", 1, None, "Pending", min_resources=one)
    second = Case(
        "cycle 2",
        pods=[*bound, pod("ns1", "pB1", "", PENDING, one, "pgB")],
        nodes=[n1],
        pod_groups=[pg_a, pg_b],
        queues=[q1],
        binds={"ns1/pB1": "n1"},
    )
    check(second, run(second, [Action.ENQUEUE, Action.ALLOCATE]))
