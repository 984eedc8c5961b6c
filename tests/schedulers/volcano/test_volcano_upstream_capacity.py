# ruff: noqa: E501  (upstream case names are kept whole)
"""Volcano's capacity plugin table, ported case by case.

Upstream: volcano-sh/volcano ``pkg/scheduler/plugins/capacity/capacity_test.go``
``Test_capacityPlugin_OnSessionOpenWithoutHierarchy`` (ed72c7c): the same objects (upstream's names, upper
case here) and cases, run with the ``capacity`` share policy and the allocate and reclaim actions: 11/11;
and ``TestEnqueueAndAllocatable`` 4/4, ``Test_updateQueueAttrShare`` 16/16. The hierarchy table is in test_volcano_upstream_capacity_hierarchy.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from vcupstream import PREEMPTABLE, Case, check, node, pod, pod_group, queue, run

from gangplane.schedulers.volcano.book import SharePolicy
from gangplane.schedulers.volcano.config import Action


def rl(cpu: str, memory: str, scalars: dict[str, str] | None = None) -> dict[str, str]:
    """``api.BuildResourceList``: an empty cpu or memory is left out."""
    out = {name: q for name, q in (("cpu", cpu), ("memory", memory)) if q}
    return {**out, **(scalars or {})}


def nd(name: str, alloc: dict[str, str], labels: dict[str, str] | None) -> dict[str, Any]:
    return node(name, alloc, labels)


def qrq(name: str, deserved: dict[str, str] | None, capability: dict[str, str] | None) -> dict[str, Any]:
    """``util.BuildQueueWithResourcesQuantity`` (weight 1)."""
    return queue(name, 1, capability, deserved=deserved)


def qprq(
    name: str, priority: int, deserved: dict[str, str] | None, capability: dict[str, str] | None
) -> dict[str, Any]:
    return queue(name, 1, capability, priority=priority, deserved=deserved)


N1 = nd("n1", rl("2", "4Gi", {"pods": "10"}), {"selector": "worker"})
N2 = nd("n2", rl("2", "4Gi", {"pods": "10"}), {})
P1 = pod("ns1", "p1", "n1", "Running", rl("1", "1Gi"), "pg1", {}, {})
P2 = pod("ns1", "p2", "", "Pending", rl("1", "1Gi"), "pg2", {}, {"selector": "worker"})
PG1 = pod_group("pg1", "ns1", "q1", 1, None, "Running")
PG2 = pod_group("pg2", "ns1", "q1", 1, None, "Inqueue")
QUEUE1 = qrq("q1", None, rl("2", "2Gi"))
P3 = pod("ns1", "p3", "n1", "Running", rl("1", "1Gi"), "pg3", {}, {})
P4 = pod("ns1", "p4", "", "Pending", rl("1", "1Gi"), "pg4", {}, {})
PG3 = pod_group("pg3", "ns1", "q2", 1, None, "Running")
PG4 = pod_group("pg4", "ns1", "q2", 1, None, "Inqueue")
QUEUE2 = qrq("q2", None, rl("1.5", "1.5Gi"))
P5 = pod("ns1", "p5", "n1", "Running", rl("2", "4Gi"), "pg5", {PREEMPTABLE: "false"}, {})
P6 = pod("ns1", "p6", "n2", "Running", rl("2", "4Gi"), "pg5", {}, {})
P7 = pod("ns1", "p7", "", "Pending", rl("2", "4Gi"), "pg6", {}, {})
PG5 = pod_group("pg5", "ns1", "q3", 1, None, "Running")
PG6 = pod_group("pg6", "ns1", "q4", 1, None, "Inqueue")
QUEUE3 = qrq("q3", rl("2", "4Gi"), None)
QUEUE4 = qrq("q4", rl("2", "4Gi"), None)
N3 = nd("n3", rl("2", "4Gi", {"nvidia.com/A100": "10", "pods": "10"}), {"selector": "worker"})
N4 = nd("n4", rl("2", "4Gi", {"nvidia.com/A100": "10", "pods": "10"}), {})
P8 = pod(
    "ns1", "p8", "n3", "Running", rl("0", "0Gi", {"nvidia.com/A100": "10"}), "pg7", {PREEMPTABLE: "false"}, {}
)
P9 = pod("ns1", "p9", "n4", "Running", rl("0", "0Gi", {"nvidia.com/A100": "10"}), "pg7", {}, {})
P10 = pod("ns1", "p10", "n3", "Running", rl("2", "4Gi"), "pg8", {}, {})
P11 = pod("ns1", "p11", "n4", "Running", rl("2", "4Gi"), "pg8", {}, {})
P12 = pod("ns1", "p12", "", "Pending", rl("0", "0Gi", {"nvidia.com/A100": "10"}), "pg9", {}, {})
PG7 = pod_group("pg7", "ns1", "q5", 1, None, "Running")
PG8 = pod_group("pg8", "ns1", "q6", 1, None, "Running")
PG9 = pod_group("pg9", "ns1", "q6", 1, None, "Inqueue")
QUEUE5 = qrq("q5", rl("2", "4Gi", {"nvidia.com/A100": "10"}), None)
QUEUE6 = qrq("q6", rl("2", "4Gi", {"nvidia.com/A100": "10"}), None)
N5 = nd("n5", rl("2", "4Gi", {"pods": "10"}), {})
N6 = nd("n6", rl("2", "4Gi", {"pods": "10"}), {})
P13 = pod("ns1", "p13", "n5", "Running", rl("2", "4Gi"), "pg10", {}, {})
P14 = pod("ns1", "p14", "", "Pending", rl("2", "4Gi"), "pg11", {}, {})
P15 = pod("ns1", "p15", "", "Pending", rl("2", "4Gi"), "pg12", {}, {})
PG10 = pod_group("pg10", "ns1", "q7", 1, None, "Running")
PG11 = pod_group("pg11", "ns1", "q8", 1, None, "Inqueue")
PG12 = pod_group("pg12", "ns1", "q9", 1, None, "Inqueue")
QUEUE7 = qprq("q7", 5, None, rl("2", "4Gi"))
QUEUE8 = qprq("q8", 1, None, rl("2", "4Gi"))
QUEUE9 = qprq("q9", 10, None, rl("2", "4Gi"))
P16 = pod("ns1", "p16", "n1", "Running", rl("1", "3Gi"), "pg16", {}, None)
P17 = pod("ns1", "p17", "", "Pending", rl("1", "1Gi"), "pg17", {}, None)
P18 = pod("ns1", "p18", "n1", "Running", rl("1", "1Gi"), "pg18", {}, None)
PG16 = pod_group("pg16", "ns1", "q10", 1, None, "Running")
PG17 = pod_group("pg17", "ns1", "q10", 1, None, "Inqueue")
PG18 = pod_group("pg18", "ns1", "q11", 1, None, "Running")
QUEUE10 = qrq("q10", rl("2", "2Gi"), rl("4", "4Gi"))
QUEUE11 = qrq("q11", rl("0", "0Gi"), rl("2", "2Gi"))
P19 = pod("ns1", "p19", "n1", "Running", rl("1", "1Gi"), "pg19", {}, None)
P20 = pod("ns1", "p20", "", "Pending", rl("1", "2Gi"), "pg20", {}, None)
P21 = pod("ns1", "p21", "n1", "Running", rl("1", "1Gi"), "pg21", {}, None)
PG19 = pod_group("pg19", "ns1", "q12", 1, None, "Running")
PG20 = pod_group("pg20", "ns1", "q12", 1, None, "Inqueue")
PG21 = pod_group("pg21", "ns1", "q13", 1, None, "Running")
QUEUE12 = qrq("q12", rl("1", "2Gi"), rl("4", "4Gi"))
QUEUE13 = qrq("q13", rl("0", "0Gi"), rl("2", "2Gi"))
N7 = nd("n7", rl("4", "8Gi", {"nvidia.com/gpu": "4", "pods": "10"}), None)
P22 = pod("ns1", "p22", "n7", "Running", rl("2", "4Gi"), "pg22", None, None)
P23 = pod("ns1", "p23", "n7", "Running", rl("0", "0Gi", {"nvidia.com/gpu": "1"}), "pg23", None, None)
P24 = pod("ns1", "p24", "n7", "Running", rl("2", "1Gi", {"nvidia.com/gpu": "1"}), "pg24", None, None)
P25 = pod("ns1", "p25", "", "Pending", rl("2", "3Gi", {"nvidia.com/gpu": "1"}), "pg25", None, None)
PG22 = pod_group("pg22", "ns1", "queue14", 1, None, "Running")
PG23 = pod_group("pg23", "ns1", "queue15", 1, None, "Running")
PG24 = pod_group("pg24", "ns1", "queue16", 1, None, "Running")
PG25 = pod_group("pg25", "ns1", "queue16", 1, None, "Inqueue")
QUEUE14 = qrq("queue14", rl("2", "4Gi", {"nvidia.com/gpu": "2"}), None)
QUEUE15 = qrq("queue15", None, None)
QUEUE16 = qrq("queue16", rl("2", "4Gi", {"nvidia.com/gpu": "2"}), None)
N8 = nd("n8", rl("4", "8Gi", {"nvidia.com/gpu": "1", "pods": "10"}), None)
P26 = pod("ns1", "p26", "n8", "Running", rl("0", "4Gi"), "pg26", None, None)
P27 = pod("ns1", "p27", "n8", "Running", rl("1", "0Gi"), "pg27", None, None)
P28 = pod("ns1", "p28", "n8", "Running", rl("0", "0Gi", {"nvidia.com/gpu": "1"}), "pg28", None, None)
PG26 = pod_group("pg26", "ns1", "queue17", 1, None, "Running")
PG27 = pod_group("pg27", "ns1", "queue17", 1, None, "Running")
PG28 = pod_group("pg28", "ns1", "queue17", 1, None, "Running")
QUEUE17 = qrq("queue17", rl("2", "2Gi"), None)
P29 = pod("ns1", "p29", "n8", "Running", rl("2", "4Gi"), "pg29", None, None)
PG29 = pod_group("pg29", "ns1", "queue18", 1, None, "Running")
P30 = pod("ns1", "p30", "", "Pending", rl("1", "0Gi", {"nvidia.com/gpu": "1"}), "pg30", None, None)
PG30 = pod_group("pg30", "ns1", "queue18", 1, None, "Inqueue")
QUEUE18 = qrq("queue18", rl("2", "4Gi", {"nvidia.com/gpu": "1"}), None)
P31 = pod("ns1", "p31", "n8", "Running", rl("4", "4Gi", {"nvidia.com/gpu": "1"}), "pg31", None, None)
PG31 = pod_group("pg31", "ns1", "queue19", 1, None, "Running")
QUEUE19 = qrq("queue19", rl("", "", {"nvidia.com/gpu": "1"}), None)
P32 = pod("ns1", "p32", "", "Pending", rl("1", "1Gi"), "pg32", None, None)
PG32 = pod_group("pg32", "ns1", "queue20", 1, None, "Inqueue")
QUEUE20 = qrq("queue20", rl("2", "2Gi"), None)
N9 = nd("n9", rl("8", "100Gi", {"pods": "10"}), None)
N10 = nd("n10", rl("8", "100Gi", {"pods": "10"}), None)
P33 = pod("ns1", "p33", "n9", "Running", rl("7", "90Gi"), "pg33", {}, None)
P34 = pod("ns1", "p34", "", "Pending", rl("2", "5Gi"), "pg34", {}, None)
P35 = pod("ns1", "p35", "n10", "Running", rl("2", "5Gi"), "pg35", {}, None)
PG33 = pod_group("pg33", "ns1", "queue21", 1, None, "Running")
PG34 = pod_group("pg34", "ns1", "queue21", 1, None, "Inqueue")
PG35 = pod_group("pg35", "ns1", "queue22", 1, None, "Running")
QUEUE21 = qrq("queue21", rl("8", "100Gi"), rl("8", "100Gi"))
QUEUE22 = qrq("queue22", None, rl("2", "5Gi"))

CASES = [
    Case(
        "case0: Pod allocatable when queue has not exceed capability",
        pods=[P1, P2],
        nodes=[N1, N2],
        pod_groups=[PG1, PG2],
        queues=[QUEUE1],
        binds={"ns1/p2": "n1"},
        binds_num=1,
    ),
    Case(
        "case1: Pod not allocatable when queue exceed queue capability",
        pods=[P3, P4],
        nodes=[N1, N2],
        pod_groups=[PG3, PG4],
        queues=[QUEUE2],
        binds_num=0,
    ),
    Case(
        "case2: Can reclaim from other queues when allocated < deserved",
        pods=[P5, P6, P7],
        nodes=[N1, N2],
        pod_groups=[PG5, PG6],
        queues=[QUEUE3, QUEUE4],
        pipelined={"ns1/pg6": ()},
        evicted=["ns1/p6"],
        evict_num=1,
    ),
    Case(
        "case3: CPU & Memory are overused, scalar resource is not overused, but candidate pod has not request CPU & Memory, reclaim should happen",
        pods=[P8, P9, P10, P11, P12],
        nodes=[N3, N4],
        pod_groups=[PG7, PG8, PG9],
        queues=[QUEUE5, QUEUE6],
        pipelined={"ns1/pg9": ()},
        evicted=["ns1/p9"],
        evict_num=1,
    ),
    Case(
        "case4: Pods are assigned according to the order of Queue Priority in which PGs are placed",
        pods=[P13, P14, P15],
        nodes=[N5, N6],
        pod_groups=[PG10, PG11, PG12],
        queues=[QUEUE7, QUEUE8, QUEUE9],
        binds={"ns1/p15": "n6"},
        binds_num=1,
    ),
    Case(
        "case5: Can reclaim from other queues when allocated + req <= deserved on one dimension",
        pods=[P16, P17, P18],
        nodes=[N1],
        pod_groups=[PG16, PG17, PG18],
        queues=[QUEUE10, QUEUE11],
        pipelined={"ns1/pg17": ()},
        evicted=["ns1/p18"],
        evict_num=1,
    ),
    Case(
        "case6: Can not reclaim from other queues when allocated + req > deserved",
        pods=[P19, P20, P21],
        nodes=[N1],
        pod_groups=[PG19, PG20, PG21],
        queues=[QUEUE12, QUEUE13],
        pipelined={},
        evicted=[],
        evict_num=0,
    ),
    Case(
        "case7: allocated does not contain scalar dimension (GPU), deserved does; should not reclaim",
        pods=[P22, P23, P24, P25],
        nodes=[N7],
        pod_groups=[PG22, PG23, PG24, PG25],
        queues=[QUEUE14, QUEUE15, QUEUE16],
        pipelined={},
        evicted=[],
        evict_num=0,
    ),
    Case(
        "case8: reclaimer dimensions are considered properly while evicting reclaimees",
        pods=[P26, P27, P28, P29, P30],
        nodes=[N8],
        pod_groups=[PG26, PG27, PG28, PG29, PG30],
        queues=[QUEUE17, QUEUE18],
        pipelined={"ns1/pg30": ()},
        evicted=["ns1/p28"],
        evict_num=1,
    ),
    Case(
        "case9: reclaimee has intersecting scalar dimensions with deserved shouldn't be reclaimed on cpu/memory",
        pods=[P31, P32],
        nodes=[N8],
        pod_groups=[PG31, PG32],
        queues=[QUEUE19, QUEUE20],
        pipelined={},
        evicted=[],
        evict_num=0,
    ),
    Case(
        "case10: PreemptiveFn respects capability — no reclaim when futureUsed would exceed capability",
        pods=[P33, P34, P35],
        nodes=[N9, N10],
        pod_groups=[PG33, PG34, PG35],
        queues=[QUEUE21, QUEUE22],
        pipelined={},
        evicted=[],
        evict_num=0,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_capacity_without_hierarchy(case: Case) -> None:
    check(case, run(case, [Action.ALLOCATE, Action.RECLAIM], share_policy=SharePolicy.CAPACITY))


# TestEnqueueAndAllocatable (4/4): enqueue then allocate under capacity's JobEnqueueable and Allocatable.
E_N = [nd("n1", rl("3", "3G", {"pods": "10"}), None), nd("n2", rl("3", "3G", {"pods": "10"}), None)]
R1C3G, R3C1G, R1C0G, R0C1G, R1C1G = rl("1", "3G"), rl("3", "1G"), rl("1", "0G"), rl("0", "1G"), rl("1", "1G")
E_POD = {
    1: pod("ns1", "pod1", "n1", "Running", R1C3G, "pg1"),
    2: pod("ns1", "pod2", "n2", "Running", R3C1G, "pg2"),
    3: pod("ns1", "pod3", "", "Pending", R1C0G, "pg3"),
    4: pod("ns1", "pod4", "", "Pending", R0C1G, "pg4"),
    5: pod("ns1", "pod5", "", "Pending", R1C1G, "pg5"),
    6: pod("ns1", "pod6", "", "Pending", R1C1G, "pg6"),
}
E_PG = {
    1: pod_group("pg1", "ns1", "q1", 1, None, "Running", min_resources=R1C3G),
    2: pod_group("pg2", "ns1", "q2", 1, None, "Running", min_resources=R3C1G),
    3: pod_group("pg3", "ns1", "q1", 1, None, "Pending", min_resources=R1C0G),
    4: pod_group("pg4", "ns1", "q2", 1, None, "Pending", min_resources=R0C1G),
    5: pod_group("pg5", "ns1", "q1", 1, None, "Pending", min_resources=R1C1G),
    6: pod_group("pg6", "ns1", "q3", 1, None, "Pending", min_resources=R1C1G),
}
E_Q = [qrq("q1", rl("2", "2G"), rl("2", "2G")), qrq("q2", rl("2", "2G"), rl("3", "3G"))]
CLOSED_Q3 = queue("q3", 1, rl("3", "3G"), state="Closed")


def _e(name: str, pods: list[int], queues: list[dict[str, Any]], binds: dict[str, str]) -> Case:
    return Case(
        name,
        pods=[E_POD[i] for i in pods],
        nodes=E_N,
        pod_groups=[E_PG[i] for i in pods],
        queues=queues,
        binds=binds,
        binds_num=len(binds),
    )


ENQUEUE_AND_ALLOCATABLE = [
    _e(
        "case0: memory exceed derserved, job only request cpu can be enqueued and allocated",
        [1, 2, 3],
        E_Q,
        {"ns1/pod3": "n1"},
    ),
    _e(
        "case1: cpu exceed derserved, job only request memory can be enqueued and allocated",
        [1, 2, 4],
        E_Q,
        {"ns1/pod4": "n2"},
    ),
    _e("case2: exceed capacity, can not enqueue", [1, 2, 5], E_Q, {}),
    _e("case4: queue with non-open state, can not enqueue", [6], [CLOSED_Q3], {}),
]


@pytest.mark.parametrize("case", ENQUEUE_AND_ALLOCATABLE, ids=[c.name for c in ENQUEUE_AND_ALLOCATABLE])
def test_enqueue_and_allocatable(case: Case) -> None:
    check(case, run(case, [Action.ENQUEUE, Action.ALLOCATE], share_policy=SharePolicy.CAPACITY))


# Test_updateQueueAttrShare (16/16): a queue's share for QueueOrder under capacity; ``None`` = no deserved
# (best-effort). Allocation comes from one running pod, pending requests from one pending pod.
SHARE = [
    ("best-effort queue with allocated resources", None, ("1", "1Gi"), None, 1.0),
    ("best-effort queue with pending requests only (no allocated)", None, None, ("1", "1Gi"), 1.0),
    ("best-effort queue with both allocated and request", None, ("1", "1Gi"), ("0.5", "0.5Gi"), 1.0),
    ("best-effort queue completely idle", None, None, None, 1.0),
    ("queue with deserved but no allocated", ("2", "2Gi"), None, None, 0.0),
    ("queue with deserved, allocated < deserved (CPU dimension)", ("2", "2Gi"), ("1", "1Gi"), None, 0.5),
    ("queue with deserved, allocated = deserved", ("2", "2Gi"), ("2", "2Gi"), None, 1.0),
    ("queue with deserved, allocated > deserved (CPU dimension)", ("2", "2Gi"), ("3", "2Gi"), None, 1.5),
    ("queue with deserved, memory is dominant resource", ("2", "4Gi"), ("1", "3Gi"), None, 0.75),
    ("queue with deserved, CPU is dominant resource", ("2", "4Gi"), ("1.5", "2Gi"), None, 0.75),
    ("queue with deserved, allocated exceeds on both dimensions", ("2", "2Gi"), ("3", "3Gi"), None, 1.5),
    (
        "queue with deserved, request should not affect share calculation",
        ("2", "2Gi"),
        ("1", "1Gi"),
        ("1", "1Gi"),
        0.5,
    ),
    ("queue with deserved but zero values", ("0", "0Gi"), ("1", "1Gi"), None, 1.0),
    ("queue with deserved, allocated is zero", ("2", "2Gi"), ("0", "0Gi"), None, 0.0),
    ("best-effort queue with only CPU allocated", None, ("1", "0Gi"), None, 1.0),
    ("best-effort queue with only memory allocated", None, ("0", "1Gi"), None, 1.0),
]


@pytest.mark.parametrize(
    ("name", "deserved", "allocated", "pending", "share"), SHARE, ids=[c[0] for c in SHARE]
)
def test_update_queue_attr_share(
    name: str,
    deserved: tuple[str, str] | None,
    allocated: tuple[str, str] | None,
    pending: tuple[str, str] | None,
    share: float,
) -> None:
    pods, groups = [], []
    if allocated is not None:
        pods.append(pod("ns1", "held", "n1", "Running", rl(*allocated), "pg-held"))
        groups.append(pod_group("pg-held", "ns1", "q", 1, None, "Running"))
    if pending is not None:
        pods.append(pod("ns1", "wants", "", "Pending", rl(*pending), "pg-wants"))
        groups.append(pod_group("pg-wants", "ns1", "q", 1, None, "Inqueue"))
    spec_deserved = None if deserved is None else rl(*deserved)
    case = Case(
        name,
        pods=pods,
        nodes=[nd("n1", rl("64", "256Gi", {"pods": "110"}), None)],
        pod_groups=groups,
        queues=[qrq("q", spec_deserved, None)],
    )
    out = run(case, [], share_policy=SharePolicy.CAPACITY)
    assert out.session is not None
    assert out.session.book.share("q") == pytest.approx(share)
