"""Volcano's preempt action tables, ported case by case.

Upstream: volcano-sh/volcano ``pkg/scheduler/actions/preempt/preempt_test.go`` (ed72c7c): ``TestPreempt``
(13 cases, all with the ``high-priority``/``low-priority`` classes) and the two cases
``TestTopologyAwarePreempt`` adds to the same rows. Ported 14/15 (one differs by design, ``differs`` says
why); the PodAntiAffinity case is skipped (inter-pod affinity is not modelled, docs/volcano.md).
``TestNormalPreemptRechecksPredicateAfterEviction`` needs a test-only predicate plugin and is not ported.
"""

from __future__ import annotations

import pytest
from vcupstream import PREEMPTABLE, Case, check, node, pod, pod_group, priority_class, queue, res, run

from gangplane.schedulers.volcano.config import Action

T = {PREEMPTABLE: "true"}
F = {PREEMPTABLE: "false"}
RUNNING, PENDING = "Running", "Pending"
CLASSES = [priority_class("high-priority", 100000), priority_class("low-priority", 10)]


def _n(name: str, cpu: str, mem: str, pods: str = "10") -> dict[str, object]:
    return node(name, res(cpu, mem, pods=pods))


def _case(name: str, **kw: object) -> Case:
    return Case(name, priority_classes=CLASSES, **kw)  # type: ignore[arg-type]


CASES = [
    _case(
        "do not preempt if there are enough idle resources",
        pod_groups=[pod_group("pg1", "c1", "q1", 3, {"": 3}, "Inqueue")],
        pods=[
            pod("c1", "preemptee1", "n1", RUNNING, res("1", "1G"), "pg1"),
            pod("c1", "preemptee2", "n1", RUNNING, res("1", "1G"), "pg1"),
            pod("c1", "preemptor1", "", PENDING, res("1", "1G"), "pg1"),
        ],
        nodes=[_n("n1", "10", "10G")],
        queues=[queue("q1", 1)],
        evict_num=0,
    ),
    _case(
        "do not preempt if job is pipelined",
        pod_groups=[
            pod_group("pg1", "c1", "q1", 1, {"": 2}, "Inqueue"),
            pod_group("pg2", "c1", "q1", 1, {"": 2}, "Inqueue"),
        ],
        pods=[
            pod("c1", "preemptee1", "n1", RUNNING, res("1", "1G"), "pg1"),
            pod("c1", "preemptee2", "n1", RUNNING, res("1", "1G"), "pg1"),
            pod("c1", "preemptee3", "n1", RUNNING, res("1", "1G"), "pg2"),
            pod("c1", "preemptor2", "", PENDING, res("1", "1G"), "pg2"),
        ],
        nodes=[_n("n1", "3", "3G")],
        queues=[queue("q1", 1)],
        evict_num=0,
    ),
    _case(
        "preempt one task of different job to fit both jobs on one node",
        pod_groups=[
            pod_group("pg1", "c1", "q1", 1, {"": 2}, "Inqueue", "low-priority"),
            pod_group("pg2", "c1", "q1", 1, {"": 2}, "Inqueue", "high-priority"),
        ],
        pods=[
            pod("c1", "preemptee1", "n1", RUNNING, res("1", "1G"), "pg1", T),
            pod("c1", "preemptee2", "n1", RUNNING, res("1", "1G"), "pg1", F),
            pod("c1", "preemptor1", "", PENDING, res("1", "1G"), "pg2"),
            pod("c1", "preemptor2", "", PENDING, res("1", "1G"), "pg2"),
        ],
        nodes=[_n("n1", "2", "2G")],
        queues=[queue("q1", 1)],
        evicted=["c1/preemptee1"],
        evict_num=1,
    ),
    _case(
        "preempt enough tasks to fit large task of different job",
        pod_groups=[
            pod_group("pg1", "c1", "q1", 1, {"": 3}, "Inqueue", "low-priority"),
            pod_group("pg2", "c1", "q1", 1, {"": 1}, "Inqueue", "high-priority"),
        ],
        pods=[
            pod("c1", "preemptee1", "n1", RUNNING, res("1", "1G"), "pg1", T),
            pod("c1", "preemptee2", "n1", RUNNING, res("1", "1G"), "pg1", T),
            pod("c1", "preemptee3", "n1", RUNNING, res("1", "1G"), "pg1", F),
            pod("c1", "preemptor1", "", PENDING, res("5", "5G"), "pg2"),
        ],
        nodes=[_n("n1", "6", "6G")],
        queues=[queue("q1", 1)],
        evicted=["c1/preemptee2", "c1/preemptee1"],
        evict_num=2,
    ),
    _case(
        "preempt low priority job in same queue",
        pod_groups=[
            pod_group("pg1", "c1", "q1", 0, {}, "Inqueue", "low-priority"),
            pod_group("pg2", "c1", "q1", 1, {"": 1}, "Inqueue", "high-priority"),
        ],
        pods=[
            pod("c1", "preemptee1", "n1", RUNNING, res("3", "3G"), "pg1", T),
            pod("c1", "preemptor1", "", PENDING, res("3", "3G"), "pg2"),
        ],
        nodes=[_n("n1", "12", "12G")],
        queues=[queue("q1", 1, res("4", "4G"))],
        evicted=["c1/preemptee1"],
        evict_num=1,
    ),
    _case(
        "preempt low priority job in same queue: allocatable and has enough resource, don't preempt",
        pod_groups=[
            pod_group("pg1", "c1", "q1", 1, {}, "Inqueue", "low-priority"),
            pod_group("pg2", "c1", "q1", 1, {"": 1}, "Inqueue", "high-priority"),
        ],
        pods=[
            pod("c1", "preemptee1", "n1", RUNNING, res("3", "3G"), "pg1", T),
            pod("c1", "preemptor1", "", PENDING, res("3", "3G"), "pg2"),
        ],
        nodes=[_n("n1", "12", "12G")],
        queues=[queue("q1", 1, res("6", "6G"))],
        evict_num=0,
    ),
    _case(
        "preempt low priority job in same queue but not pod with preemptable=false or higher priority",
        pod_groups=[
            pod_group("pg1", "c1", "q1", 1, {}, "Inqueue", "low-priority"),
            pod_group("pg2", "c1", "q1", 1, {"": 1}, "Inqueue", "high-priority"),
        ],
        pods=[
            pod("c1", "preemptee1", "n1", RUNNING, res("1", "1G"), "pg1", F),
            pod("c1", "preemptee2", "n1", RUNNING, res("1", "1G"), "pg1", T),
            pod("c1", "preemptee3", "n1", RUNNING, res("1", "1G"), "pg1", T, priority=100000),
            pod("c1", "preemptor1", "", PENDING, res("1", "1G"), "pg2"),
        ],
        nodes=[_n("n1", "12", "12G")],
        queues=[queue("q1", 1, res("3", "3G"))],
        evicted=["c1/preemptee2"],
        evict_num=1,
    ),
    _case(
        "unBestEffort high-priority pod preempt BestEffort low-priority pod in same queue",
        pod_groups=[
            pod_group("pg1", "c1", "q1", 0, {}, "Inqueue", "low-priority"),
            pod_group("pg2", "c1", "q1", 1, {"": 1}, "Inqueue", "high-priority"),
        ],
        pods=[
            pod("c1", "preemptee1", "n1", RUNNING, {}, "pg1", T),
            pod("c1", "preemptor1", "", PENDING, res("3", "3G"), "pg2"),
        ],
        nodes=[_n("n1", "12", "12G", pods="1")],
        queues=[queue("q1", 1, res("6", "6G"))],
        evicted=["c1/preemptee1"],
        evict_num=1,
    ),
    _case(
        "BestEffort high-priority pod preempt BestEffort low-priority pod in same queue",
        pod_groups=[
            pod_group("pg1", "c1", "q1", 0, {}, "Inqueue", "low-priority"),
            pod_group("pg2", "c1", "q1", 1, {"": 1}, "Inqueue", "high-priority"),
        ],
        pods=[
            pod("c1", "preemptee1", "n1", RUNNING, {}, "pg1", T),
            pod("c1", "preemptor1", "", PENDING, {}, "pg2"),
        ],
        nodes=[_n("n1", "12", "12G", pods="1")],
        queues=[queue("q1", 1, res("6", "6G"))],
        evicted=[],
        evict_num=0,
        differs="upstream evicts preemptee1 for the pod slot; gangplane places best-effort tasks only in "
        "backfill, which never evicts (docs/volcano.md, Differences)",
    ),
    _case(
        "can not preempt resources when task preemption policy is never",
        pod_groups=[
            pod_group("pg1", "c1", "q1", 0, None, "Inqueue", "low-priority"),
            pod_group("pg2", "c1", "q1", 1, None, "Inqueue", "high-priority"),
        ],
        pods=[
            pod("c1", "preemptee1", "n1", RUNNING, res("1", "1G"), "pg1", T),
            pod("c1", "preemptor1", "", PENDING, res("1", "1G"), "pg2", preemption_policy="Never"),
        ],
        nodes=[_n("n1", "1", "1Gi", pods="1")],
        queues=[queue("q1", 1)],
        evict_num=0,
        evicted=[],
    ),
    _case(
        "rollback evictions when preemptor exceeds queue capacity after evicting victims",
        pod_groups=[
            pod_group("pg1", "c1", "q1", 1, {"": 2}, "Inqueue", "low-priority"),
            pod_group("pg2", "c1", "q1", 1, {"": 1}, "Inqueue", "high-priority"),
        ],
        pods=[
            pod("c1", "preemptee1", "n1", RUNNING, res("1", "1G"), "pg1", T),
            pod("c1", "preemptee2", "n1", RUNNING, res("1", "1G"), "pg1", T),
            pod("c1", "preemptor1", "", PENDING, res("4", "4G"), "pg2"),
        ],
        nodes=[_n("n1", "10", "10G")],
        queues=[queue("q1", 1, res("3", "3G"))],
        evict_num=0,
    ),
    _case(
        "only commit evictions on the node where preemption succeeds",
        pod_groups=[
            pod_group("pg1", "c1", "q1", 0, {}, "Inqueue", "low-priority"),
            pod_group("pg2", "c1", "q1", 1, {"": 1}, "Inqueue", "high-priority"),
            pod_group("pg3", "c1", "q1", 0, {}, "Inqueue", "low-priority"),
        ],
        pods=[
            pod("c1", "preemptee1", "n1", RUNNING, res("1", "1G"), "pg1", T),
            pod("c1", "preemptee2", "n2", RUNNING, res("4", "4G"), "pg3", T),
            pod("c1", "preemptor1", "", PENDING, res("3", "3G"), "pg2"),
        ],
        nodes=[_n("n1", "3", "3G"), _n("n2", "4", "4G")],
        queues=[queue("q1", 1, res("6", "6G"))],
        evict_num=1,
        evicted=["c1/preemptee2"],
    ),
    _case(
        "multi-queue: preemptorTasks must not be overwritten by intra-job preemption of another queue",
        pod_groups=[
            pod_group("pg1", "c1", "q1", 1, {"": 1}, "Inqueue"),
            pod_group("pg2", "c1", "q2", 0, {}, "Inqueue", "low-priority"),
            pod_group("pg3", "c1", "q2", 1, {"": 1}, "Inqueue", "high-priority"),
        ],
        pods=[
            pod("c1", "q1-runner1", "n1", RUNNING, res("1", "1G"), "pg1"),
            pod("c1", "q2-preemptee1", "n1", RUNNING, res("1", "1G"), "pg2", T),
            pod("c1", "q2-preemptor1", "", PENDING, res("1", "1G"), "pg3"),
        ],
        nodes=[_n("n1", "2", "2G")],
        queues=[queue("q1", 1), queue("q2", 1, res("4", "4G"))],
        evicted=["c1/q2-preemptee1"],
        evict_num=1,
    ),
    # TestTopologyAwarePreempt's extra row (its other rows repeat TestPreempt's).
    _case(
        "preemption with priority queues",
        pod_groups=[
            pod_group("pg3", "c1", "q2", 1, None, "Running", "high-priority"),
            pod_group("pg1", "c1", "q1", 0, None, "Running", "low-priority"),
            pod_group("pg2", "c1", "q1", 1, None, "Inqueue", "high-priority"),
        ],
        pods=[
            pod("c1", "preemptee2", "n1", RUNNING, res("1", "1G"), "pg3", T),
            pod("c1", "preemptee1", "n1", RUNNING, res("1", "1G"), "pg1", T),
            pod(
                "c1",
                "preemptor1",
                "",
                PENDING,
                res("1", "1G"),
                "pg2",
                preemption_policy="PreemptLowerPriority",
            ),
        ],
        nodes=[_n("n1", "2", "2Gi", pods="2")],
        queues=[
            queue("q1", 1, res("1", "1G"), priority=1, deserved=res("1", "1G")),
            queue("q2", 1, res("1", "1G"), priority=10, deserved=res("1", "1G")),
        ],
        evict_num=1,
        evicted=["c1/preemptee1"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_preempt(case: Case) -> None:
    check(case, run(case, [Action.PREEMPT]))


@pytest.mark.skip(
    reason="TestTopologyAwarePreempt 'preempt low-priority pod when high-priority pod has "
    "PodAntiAffinity conflict': inter-pod (anti-)affinity is not modelled (docs/volcano.md)"
)
def test_preempt_pod_anti_affinity_conflict() -> None:
    raise AssertionError("not modelled")
