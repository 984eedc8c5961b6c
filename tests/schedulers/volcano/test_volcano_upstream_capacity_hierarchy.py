"""Volcano's capacity plugin hierarchy table, ported case by case.

Upstream: volcano-sh/volcano ``pkg/scheduler/plugins/capacity/capacity_test.go``
``Test_capacityPlugin_OnSessionOpenWithHierarchy`` (ed72c7c): the same objects (upstream's names, upper case
here) and cases, run with the hierarchical ``capacity`` share policy and upstream's actions in its order
(enqueue, reclaim, allocate). 13/13.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_volcano_upstream_capacity import nd, rl
from vcupstream import PREEMPTABLE, Case, check, pod, pod_group, queue, run

from gangplane.schedulers.volcano.book import SharePolicy
from gangplane.schedulers.volcano.config import Action


def qp(
    name: str, parent: str, deserved: dict[str, str] | None, capability: dict[str, str] | None
) -> dict[str, Any]:
    """The table's ``buildQueueWithParents``."""
    return queue(name, 1, capability, deserved=deserved, parent=parent or None)


def pgm(
    name: str, ns: str, queue_name: str, minimum: int, _task: None, min_resources: dict[str, str], phase: str
) -> dict[str, Any]:
    return pod_group(name, ns, queue_name, minimum, None, phase, min_resources=min_resources)


N1 = nd("n1", rl("8", "8Gi", {"pods": "11"}), {})
P1 = pod("ns1", "p1", "", "Pending", rl("1", "1Gi"), "pg1", {}, {})
PG1 = pod_group("pg1", "ns1", "q11", 1, None, "Inqueue")
ROOT = qp("root", "", None, None)
ROOT1 = qp("root", "", None, rl("16", "16Gi"))
ROOT2 = qp("root", "", rl("16", "16Gi", {"nvidia.com/a100": "4", "rdma": "1000"}), None)
QUEUE1 = qp("q1", "root", None, rl("4", "4Gi"))
QUEUE2 = qp("q2", "root", None, rl("4", "4Gi"))
QUEUE11 = qp("q11", "q1", None, rl("1", "1Gi"))
QUEUE12 = qp("q12", "q1", None, rl("3", "3Gi"))
P2 = pod("ns1", "p2", "", "Pending", rl("1", "1Gi"), "pg2", {}, {})
PG2 = pod_group("pg2", "ns1", "q1", 1, None, "Pending")
P3 = pod("ns1", "p3", "", "Pending", rl("2", "2Gi"), "pg3", {}, {})
P4 = pod("ns1", "p4", "", "Pending", rl("2", "2Gi"), "pg3", {}, {})
PG3 = pod_group("pg3", "ns1", "q31", 2, None, "Inqueue")
QUEUE3 = qp("q3", "root", rl("4", "4Gi", {"pods": "10"}), rl("4", "4Gi", {"pods": "10"}))
QUEUE4 = qp("q4", "root", rl("2", "2Gi", {"pods": "1"}), rl("4", "4Gi", {"pods": "4"}))
QUEUE31 = qp("q31", "q3", rl("2", "2Gi", {"pods": "2"}), rl("4", "4Gi", {"pods": "4"}))
QUEUE32 = qp("q32", "q3", rl("2", "2Gi", {"pods": "2"}), rl("4", "4Gi", {"pods": "4"}))
QUEUE33 = qp("q33", "q3", rl("0", "0Gi", {"pods": "2"}), rl("4", "4Gi", {"pods": "4"}))
P5 = pod("ns1", "p5", "n1", "Running", rl("4", "4Gi"), "pg4", {}, {})
P6 = pod("ns1", "p6", "n1", "Running", rl("2", "2Gi"), "pg5", {PREEMPTABLE: "false"}, {})
P7 = pod("ns1", "p7", "n1", "Running", rl("2", "2Gi"), "pg5", {}, {})
P8 = pod("ns1", "p8", "", "Pending", rl("2", "2Gi"), "pg6", {}, {})
P9 = pod("ns1", "p9", "n1", "Running", rl("2", "2Gi"), "pg7", {}, {})
P10 = pod("ns1", "p10", "", "Pending", rl("3", "3Gi"), "pg8", {}, {})
PG4 = pod_group("pg4", "ns1", "q4", 1, None, "Running")
PG5 = pod_group("pg5", "ns1", "q31", 1, None, "Running")
PG6 = pod_group("pg6", "ns1", "q32", 1, None, "Inqueue")
PG7 = pod_group("pg7", "ns1", "q32", 1, None, "Running")
PG8 = pod_group("pg8", "ns1", "q33", 1, None, "Inqueue")
QUEUE5 = qp("q5", "root", None, rl("", "4Gi"))
QUEUE51 = qp("q51", "q5", None, rl("", "2Gi"))
PG9 = pod_group("pg9", "ns1", "q51", 1, None, "Running")
P11 = pod("ns1", "p11", "", "Pending", rl("1", ""), "pg9", {}, {})
QUEUE6 = qp("q6", "root", None, rl("2", "4Gi"))
QUEUE61 = qp("q61", "q6", None, None)
QUEUE62 = qp("q62", "q6", None, None)
PG10 = pgm("pg10", "ns1", "q61", 1, None, rl("2", "4Gi"), "Pending")
PG11 = pgm("pg11", "ns1", "q62", 1, None, rl("2", "4Gi"), "Pending")
QUEUE7 = qp("q7", "root", None, rl("6", "4Gi"))
QUEUE71 = qp("q71", "q7", None, rl("6", "4Gi"))
QUEUE71["spec"]["guarantee"] = {"resource": {"cpu": "4", "memory": "3Gi"}}
QUEUE72 = qp("q72", "q7", None, rl("6", "4Gi"))
QUEUE72["spec"]["guarantee"] = {"resource": {"cpu": "4", "memory": "3Gi"}}
QUEUE8 = qp("q8", "root", rl("4", "4Gi", {"nvidia.com/gpu": "8"}), None)
QUEUE81 = qp("q81", "q8", rl("2", "2Gi", {"nvidia.com/gpu": "4"}), None)
QUEUE82 = qp("q82", "q8", rl("2", "2Gi", {"nvidia.com/gpu": "4"}), None)
GPUNODE = nd("n-gpu", rl("8", "8Gi", {"nvidia.com/gpu": "8", "pods": "10"}), {})
PG12 = pod_group("pg12", "ns1", "q81", 1, None, "Inqueue")
P12 = pod("ns1", "p12", "", "Pending", rl("2", "2Gi", {"nvidia.com/gpu": "1"}), "pg12", {}, {})
QUEUE9 = qp("q9", "root", rl("2", "2Gi", {"nvidia.com/gpu": "8", "hugepages-1Gi": "0"}), None)
QUEUE91 = qp("q91", "q9", rl("2", "2Gi", {"nvidia.com/gpu": "4", "hugepages-1Gi": "0"}), None)
N2 = nd("n2", rl("8", "8Gi", {"nvidia.com/gpu": "8", "pods": "10", "hugepages-1Gi": "0"}), {})
PG13 = pod_group("pg13", "ns1", "q91", 1, None, "Inqueue")
P13 = pod("ns1", "p13", "", "Pending", rl("2", "2Gi", {"nvidia.com/gpu": "1"}), "pg13", {}, {})
QUEUE10 = qp("q10", "root", None, rl("10", "4Gi"))
CASE11_QUEUE1 = qp("case11_queue1", "root", None, None)
CASE11_QUEUE11 = qp("case11_queue11", "case11_queue1", None, rl("4", "4Gi", {"nvidia.com/gpu": "4"}))
CASE11_QUEUE12 = qp("case11_queue12", "case11_queue1", None, rl("4", "4Gi", {"nvidia.com/gpu": "4"}))
PG14 = pod_group("pg14", "ns1", "case11_queue11", 1, None, "Inqueue")
PG15 = pod_group("pg15", "ns1", "case11_queue12", 1, None, "Inqueue")
P14 = pod("ns1", "p14", "", "Pending", rl("1", "1Gi", {"nvidia.com/gpu": "4"}), "pg14", {}, {})
P15 = pod("ns1", "p15", "", "Pending", rl("1", "1Gi", {"nvidia.com/gpu": "4"}), "pg15", {}, {})
CASE12_QUEUE1 = qp("case12_queue1", "root", rl("", "", {"nvidia.com/a100": "2"}), None)
CASE12_QUEUE11 = qp("case12_queue11", "case12_queue1", rl("", "", {"nvidia.com/a100": "2"}), None)
CASE12_QUEUE12 = qp("case12_queue12", "case12_queue1", None, None)
N3 = nd("n3", rl("16", "16Gi", {"nvidia.com/a100": "5", "rdma/hca": "1001", "pods": "11"}), {})
PG16 = pod_group("pg16", "ns1", "case12_queue11", 1, None, "Inqueue")
PG17 = pod_group("pg17", "ns1", "case12_queue12", 1, None, "Running")
PG18 = pod_group("pg18", "ns1", "case12_queue12", 1, None, "Running")
P16 = pod(
    "ns1", "p16", "", "Pending", rl("1", "1Gi", {"nvidia.com/a100": "2", "rdma/hca": "1"}), "pg16", {}, {}
)
P17 = pod(
    "ns1", "p17", "n3", "Running", rl("1", "1Gi", {"nvidia.com/a100": "2", "rdma/hca": "1"}), "pg17", {}, {}
)
P18 = pod(
    "ns1",
    "p18",
    "n3",
    "Running",
    rl("1", "1Gi", {"nvidia.com/a100": "2", "rdma/hca": "1"}),
    "pg18",
    {PREEMPTABLE: "false"},
    {},
)

CASES = [
    Case(
        "case0: Pod allocatable when queue is leaf queue",
        pods=[P1],
        nodes=[N1],
        pod_groups=[PG1],
        queues=[ROOT, QUEUE1, QUEUE2, QUEUE11, QUEUE12],
        binds={"ns1/p1": "n1"},
        binds_num=1,
    ),
    Case(
        "case1: Pod not allocatable when queue is not leaf queue",
        pods=[P2],
        nodes=[N1],
        pod_groups=[PG2],
        queues=[ROOT, QUEUE1, QUEUE2, QUEUE11, QUEUE12],
        binds={},
        binds_num=0,
    ),
    Case(
        "case2: Pod allocatable when queue has not exceed capability",
        pods=[P3, P4],
        nodes=[N1],
        pod_groups=[PG3],
        queues=[ROOT, QUEUE3, QUEUE4, QUEUE31, QUEUE32],
        binds={"ns1/p3": "n1", "ns1/p4": "n1"},
        binds_num=2,
    ),
    Case(
        "case3: Can reclaim from other queues when allocated < deserved",
        pods=[P5, P6, P7, P8],
        nodes=[N1],
        pod_groups=[PG4, PG5, PG6],
        queues=[ROOT, QUEUE3, QUEUE31, QUEUE32, QUEUE4],
        pipelined={"ns1/pg6": ()},
        evicted=["ns1/p7"],
        evict_num=1,
    ),
    Case(
        "case4: Pod is not allocatable when ancestor queue's real capability not enough",
        pods=[P6, P9, P10],
        nodes=[N1],
        pod_groups=[PG5, PG7, PG8],
        queues=[ROOT, QUEUE3, QUEUE31, QUEUE32, QUEUE33],
        binds={},
        binds_num=0,
    ),
    Case(
        "case5: If the capability cpu or memory is not specified, the value should be inherited from parent queue",
        pods=[P11],
        nodes=[N1],
        pod_groups=[PG9],
        queues=[ROOT, QUEUE5, QUEUE51],
        binds={"ns1/p11": "n1"},
        binds_num=1,
    ),
    Case(
        "case6: podgroup can't be enqueued when any ancestor queue's capability is not enough",
        pods=[],
        nodes=[N1],
        pod_groups=[PG10, PG11],
        queues=[ROOT, QUEUE6, QUEUE61, QUEUE62],
        status={"ns1/pg10": "Inqueue", "ns1/pg11": "Pending"},
    ),
    Case(
        "case7: the sum of sub queue 71 and 72's guarantee exceeds the capacity of queue7, but should not panic",
        pods=[],
        nodes=[N1],
        pod_groups=[],
        queues=[ROOT, QUEUE7, QUEUE71, QUEUE72],
    ),
    Case(
        "case8: When the queue's deserved value has a scalar resource set, the check can pass",
        pods=[P12],
        nodes=[GPUNODE],
        pod_groups=[PG12],
        queues=[ROOT, QUEUE8, QUEUE81, QUEUE82],
        binds={"ns1/p12": "n-gpu"},
        binds_num=1,
    ),
    Case(
        "case9: When some scalar resources are 0 in deserved, the check can still pass",
        pods=[P13],
        nodes=[N2],
        pod_groups=[PG13],
        queues=[ROOT, QUEUE9, QUEUE91],
        binds={"ns1/p13": "n2"},
        binds_num=1,
    ),
    Case(
        "case10: root queue's capability > cluster total resource, but should not panic",
        pods=[],
        nodes=[N1],
        pod_groups=[],
        queues=[ROOT1, QUEUE10],
    ),
    Case(
        "case11: If the capability scalar resources is not specified, the value should be inherited from parent queue",
        pods=[P14, P15],
        nodes=[N2],
        pod_groups=[PG14, PG15],
        queues=[ROOT, CASE11_QUEUE1, CASE11_QUEUE11, CASE11_QUEUE12],
        binds={"ns1/p14": "n2", "ns1/p15": "n2"},
        binds_num=2,
    ),
    Case(
        "case12: Can reclaim from other queues when allocated <= deserved on a single scalar dimension",
        pods=[P16, P17, P18],
        nodes=[N3],
        pod_groups=[PG16, PG17, PG18],
        queues=[ROOT2, CASE12_QUEUE1, CASE12_QUEUE11, CASE12_QUEUE12],
        pipelined={"ns1/pg16": ()},
        evicted=["ns1/p17"],
        evict_num=1,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_capacity_with_hierarchy(case: Case) -> None:
    actions = [Action.ENQUEUE, Action.RECLAIM, Action.ALLOCATE]
    check(case, run(case, actions, share_policy=SharePolicy.CAPACITY, hierarchical=True))
