"""scheduler-plugins' Coscheduling tables, ported case by case (kubernetes-sigs/scheduler-plugins, 903da7d).

- ``pkg/coscheduling/core/core_test.go``: ``TestPreFilter`` 10/10, ``TestCheckClusterResource`` 3/3 and
  ``TestMarkAndClearPodGroupScheduleFailure`` 1/1;
  ``TestPermit`` 3/4 ("doesn't have quorum" → Wait is skipped: gangplane never holds members at Permit, it
  places the whole gang in one pass, docs/coscheduling.md "Local semantics").
- ``pkg/coscheduling/coscheduling_test.go``: ``TestLess`` 12/13 (observed as which of two pods wins the
  only free slot; the case whose pod names a missing PodGroup is skipped: such a pod never enters gangplane's
  queue, Permit's PodGroupNotFound is decided first), ``TestLessAfterScheduleFailure`` 1/1,
  ``TestPostFilter`` 3/3 and ``TestPostFilterRejectThreshold`` 6/6 (the pure rule ``rejects_group``).
  ``TestPodGroupBackoffTime`` is covered by test_coscheduling_scheduler.py's back-off test.
"""

from __future__ import annotations

from typing import Any

import pytest

from gangplane.api.scheduling.coscheduling import SCHEDULER_NAME
from gangplane.schedulers.base import CycleResult, Status
from gangplane.schedulers.coscheduling import CoschedulingArgs, GroupSpec, prefilter_resources, rejects_group
from gangplane.schedulers.default import DefaultScheduler
from gangplane.schedulers.loop import plan_pass
from gangplane.store.catalog import COSCHEDULING_PODGROUPS
from schedulers.kube_builders import T0, node, pod, pod_group, snapshot

Obj = dict[str, Any]


def _run(
    nodes: list[Obj],
    pods: list[Obj],
    groups: list[Obj],
    scheduler: DefaultScheduler | None = None,
    now: float = T0,
) -> CycleResult:
    scheduler = scheduler or DefaultScheduler(SCHEDULER_NAME)
    planned = plan_pass(now, nodes, pods, {COSCHEDULING_PODGROUPS: groups}, {SCHEDULER_NAME: scheduler})
    return planned.results[0][1]


def _p(name: str, group: str | None = None, ns: str = "ns", gated: bool = False, **kw: Any) -> Obj:
    """``st.MakePod()``: no requests; a group label when given."""
    spec = {"schedulingGates": [{"name": "example-gate"}]} if gated else {}
    return pod(name, namespace=ns, cpu=None, group=group, scheduler=SCHEDULER_NAME, **spec, **kw)


def _pg(name: str, min_member: int, ns: str = "ns", **kw: Any) -> Obj:
    return pod_group(name, min_member, namespace=ns, **kw)


# ---------------------------------------------------------------- core_test.go TestPreFilter

PREFILTER_NODES = [node("node-a", cpu="4", pods=32), node("node-b", cpu="4", pods=32)]
PREFILTER = [
    (
        "pod does not belong to any pg",
        _p("p", ns="default"),
        [_p("p1", "pg1"), _p("p2", "pg2")],
        [_pg("pg1", 1), _pg("pg2", 1)],
        True,
    ),
    ("pod belongs to a non-existent pg", _p("p", "pg-non-existent"), [], [_pg("pg1", 1)], True),
    (
        "pod count less than minMember",
        _p("p", "pg1"),
        [_p("pg2-1", "pg2")],
        [_pg("pg1", 2), _pg("pg2", 2)],
        False,
    ),
    (
        "pod count equal minMember",
        _p("p1a", "pg1"),
        [_p("p1b", "pg1"), _p("p1c", "pg1")],
        [_pg("pg1", 2), _pg("pg2", 2)],
        True,
    ),
    (
        "pod count more than minMember",
        _p("p1a", "pg1"),
        [_p("p1b", "pg1"), _p("p1c", "pg1")],
        [_pg("pg1", 2), _pg("pg2", 2)],
        True,
    ),
    (
        "gated pods but still meeting quorum (minMember < replicas)",
        _p("p1a", "pg1"),
        [_p("p1b", "pg1"), _p("p1c", "pg1", gated=True)],
        [_pg("pg1", 2)],
        True,
    ),
    (
        "gated pods push group below quorum",
        _p("p1a", "pg1"),
        [_p("p1b", "pg1", gated=True), _p("p1c", "pg1")],
        [_pg("pg1", 3)],
        False,
    ),
    (
        "all sibling pods are gated",
        _p("p1a", "pg1"),
        [_p("p1b", "pg1", gated=True), _p("p1c", "pg1", gated=True)],
        [_pg("pg1", 2)],
        False,
    ),
    (
        "cluster's resource satisfies minResource",
        _p("p1a", "pg1"),
        [_p("p1b", "pg1"), _p("p1c", "pg1")],
        [_pg("pg1", 2, min_resources={"cpu": "6"})],
        True,
    ),
    (
        "cluster's resource cannot satisfy minResource",
        _p("p1a", "pg1"),
        [_p("p1b", "pg1"), _p("p1c", "pg1")],
        [_pg("pg1", 2, min_resources={"cpu": "10"})],
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "target", "others", "groups", "success"), PREFILTER, ids=[c[0] for c in PREFILTER]
)
def test_prefilter(name: str, target: Obj, others: list[Obj], groups: list[Obj], success: bool) -> None:
    result = _run(PREFILTER_NODES, [target, *others], groups)
    key = f"{target['metadata']['namespace']}/{target['metadata']['name']}"
    reasons = [r for r in result.pending if key in r.pod_keys]
    rejected = any("pre-filter" in r.message or "minResources" in r.message for r in reasons)
    assert rejected is not success, reasons
    if name == "pod belongs to a non-existent pg":  # PreFilter lets it through; Permit refuses it
        assert [r.message for r in reasons] == ["PodGroup ns/pg-non-existent not found"]
    elif success:
        assert key in {b.pod_key for b in result.bindings}


# ---------------------------------------------------------------- core_test.go TestCheckClusterResource


def _req(name: str, node_name: str, cpu: str, group: str | None = None) -> Obj:
    return pod(name, namespace="ns", cpu=cpu, group=group, node_name=node_name, phase="Running")


CLUSTER_RESOURCE = [
    ("Cluster resource enough", [_req("p1", "node-a", "2")], True),
    ("Cluster resource not enough", [_req("p1", "node-a", "2"), _req("p2", "node-b", "1")], False),
    (
        "Cluster resource enough as p1's resource needs to be excluded from minResources",
        [_req("p1", "node-a", "2", group="pg1"), _req("p2", "node-b", "1")],
        True,
    ),
]


@pytest.mark.parametrize(
    ("name", "existing", "enough"), CLUSTER_RESOURCE, ids=[c[0] for c in CLUSTER_RESOURCE]
)
def test_check_cluster_resource(name: str, existing: list[Obj], enough: bool) -> None:
    # Two nodes of 3 CPUs; minResources cpu=4 (upstream passes minResources alone here, no pods count).
    nodes = [node("node-a", cpu="3", pods=32), node("node-b", cpu="3", pods=32)]
    snap, _ = snapshot(nodes, existing)
    spec = GroupSpec.of(_pg("pg1", 1, min_resources={"cpu": "4"}), CoschedulingArgs())
    assert (prefilter_resources(spec, snap) is None) is enough


# ---------------------------------------------------------------- core_test.go / coscheduling_test.go TestPermit

ONE_NODE = [node("node", cpu="4", pods=32)]


def test_permit_pod_without_a_group_is_scheduled() -> None:
    # "pod does not belong to any pg" (PodGroupNotSpecified) / "pods do not belong to any podGroup" (Success)
    result = _run(ONE_NODE, [_p("p")], [_pg("pg1", 2)])
    assert [b.pod_key for b in result.bindings] == ["ns/p"]


def test_permit_pod_naming_a_missing_group_is_unschedulable() -> None:
    # "pod specifies a non-existent pg" (PodGroupNotFound)
    result = _run(ONE_NODE, [_p("p", "pg-non-existent")], [_pg("pg1", 2)])
    assert result.bindings == [] and result.pending[0].status is Status.UNSCHEDULABLE


@pytest.mark.parametrize("existing", [[_p("p1b", "pg1", node_name="node")], []], ids=["core", "plugin"])
def test_permit_quorum_satisfied(existing: list[Obj]) -> None:
    # core "pod belongs to a pg that have quorum satisfied" (minMember 2, one already assigned) and plugin
    # "pods belong to a podGroup, and quorum satisfied" (minMember 1): the pod is bound.
    groups = [_pg("pg1", 2 if existing else 1), _pg("pg2", 2)]
    result = _run(ONE_NODE, [*existing, _p("p1a", "pg1")], groups)
    assert [b.pod_key for b in result.bindings] == ["ns/p1a"]


@pytest.mark.skip(
    reason="TestPermit 'pod belongs to a pg that doesn't have quorum' → Wait: gangplane places "
    "the whole gang in one pass and never holds members at Permit (docs/coscheduling.md)"
)
def test_permit_wait_without_quorum() -> None:
    raise AssertionError("not modelled")


# ---------------------------------------------------------------- coscheduling_test.go TestLess

LOW, HIGH = 10, 100
# (name, p1 (ns, priority, group, added at +s), p2 (same), groups (ns, name, created at +s), p1 first)
LESS = [
    ("p1.priority less than p2.priority", ("ns1", LOW, None, None), ("ns2", HIGH, None, None), [], False),
    ("p1.priority greater than p2.priority", ("ns1", HIGH, None, None), ("ns2", LOW, None, None), [], True),
    (
        "equal priority. p1 is added to schedulingQ earlier than p2",
        ("ns1", HIGH, None, 1),
        ("ns2", HIGH, None, 2),
        [],
        True,
    ),
    (
        "equal priority. p2 is added to schedulingQ earlier than p1",
        ("ns1", HIGH, None, 2),
        ("ns2", HIGH, None, 1),
        [],
        False,
    ),
    (
        "p1.priority less than p2.priority, p1 belongs to pg1",
        ("ns1", LOW, "pg1", None),
        ("ns2", HIGH, None, None),
        [("ns1", "pg1", None)],
        False,
    ),
    (
        "p1.priority greater than p2.priority, p1 belongs to pg1",
        ("ns1", HIGH, "pg1", None),
        ("ns2", LOW, None, None),
        [("ns1", "pg1", None)],
        True,
    ),
    (
        "equal priority. p1 is added to schedulingQ earlier than p2, p1 belongs to pg1",
        ("ns1", HIGH, "pg1", 1),
        ("ns2", HIGH, None, 2),
        [("ns1", "pg1", 1)],
        True,
    ),
    (
        "equal priority. p2 is added to schedulingQ earlier than p1, p1 belongs to pg1",
        ("ns1", HIGH, "pg1", 2),
        ("ns2", HIGH, None, 1),
        [("ns1", "pg1", 2)],
        False,
    ),
    (
        "p1.priority less than p2.priority, p1 belongs to pg1 and p2 belongs to pg2",
        ("ns1", LOW, "pg1", None),
        ("ns2", HIGH, "pg2", None),
        [("ns1", "pg1", 1), ("ns2", "pg2", 2)],
        False,
    ),
    (
        "p1.priority greater than p2.priority, p1 belongs to pg1 and and p2 belongs to pg2",
        ("ns1", HIGH, "pg1", None),
        ("ns2", LOW, "pg1", None),
        [("ns1", "pg1", 1), ("ns2", "pg2", 2)],
        True,
    ),
    (
        "equal priority. p1 is added to schedulingQ earlier than p2, p1 belongs to pg1 and p2 belongs to pg2",
        ("ns1", HIGH, "pg1", 1),
        ("ns2", HIGH, "pg2", 2),
        [("ns1", "pg1", 1), ("ns2", "pg2", 2)],
        True,
    ),
    (
        "equal priority. p2 is added to schedulingQ earlier than p1, p1 belongs to pg2 and p2 belongs to pg1",
        ("ns", LOW, "pg2", 1),
        ("ns", HIGH, "pg1", 2),
        [("ns", "pg1", 1), ("ns", "pg2", 2)],
        False,
    ),
    (
        "equal priority and creation time, and p2 belong to pg2",
        ("ns1", HIGH, None, 1),
        ("ns2", HIGH, "pg2", 1),
        [("ns2", "pg2", 2)],
        True,
    ),
]


def _queued(name: str, ns: str, priority: int, group: str | None, added: int | None) -> Obj:
    created = T0 + (added or 0)
    return pod(
        name, namespace=ns, cpu="1", group=group, scheduler=SCHEDULER_NAME, priority=priority, created=created
    )


@pytest.mark.parametrize(("name", "p1", "p2", "groups", "p1_first"), LESS, ids=[c[0] for c in LESS])
def test_less(name: str, p1: tuple, p2: tuple, groups: list[tuple], p1_first: bool) -> None:
    # One node with room for one pod: the pod the queue sorts first is bound.
    pgs = [_pg(g, 1, ns=ns, created=T0 + at if at else 0.0) for ns, g, at in groups]  # no Time: zero
    result = _run([node("n", cpu="1", pods=32)], [_queued("p1", *p1), _queued("p2", *p2)], pgs)
    assert [b.pod_key.split("/")[1] for b in result.bindings] == ["p1" if p1_first else "p2"]


@pytest.mark.skip(
    reason="TestLess 'equal priority and creation time, p1 belongs pg1 and p2 belong to pg2': p1 "
    "names PodGroup ns1/pg2, which does not exist; gangplane refuses it before queueing"
)
def test_less_missing_group() -> None:
    raise AssertionError("not modelled")


def test_less_after_schedule_failure() -> None:
    # TestLessAfterScheduleFailure: pg1 (older) sorts first until it fails; then pg2 goes first.
    scheduler = DefaultScheduler(SCHEDULER_NAME)
    groups = [_pg("pg1", 3, created=T0 - 10), _pg("pg2", 3, created=T0 - 5)]
    fail = [_queued(f"a{i}", "ns", HIGH, "pg1", 0) for i in range(3)]
    first = _run([node("n", cpu="2", pods=32)], fail, groups, scheduler)
    assert (
        first.bindings == []
        and scheduler.backoff.queue_time(GroupSpec.of(groups[0], CoschedulingArgs())) == T0
    )
    pods = [_queued("p1", "ns", HIGH, "pg1", 0), _queued("p2", "ns", HIGH, "pg2", 0)]
    small = [_pg("pg1", 1, created=T0 - 10), _pg("pg2", 1, created=T0 - 5)]
    result = _run([node("n", cpu="1", pods=32)], pods, small, scheduler, now=T0 + 1)
    assert [b.pod_key for b in result.bindings] == ["ns/p2"]  # pg1's failure moved it behind pg2
    cleared = _run([node("n", cpu="1", pods=32)], pods, small, DefaultScheduler(SCHEDULER_NAME), now=T0 + 1)
    assert [b.pod_key for b in cleared.bindings] == ["ns/p1"]


# ---------------------------------------------------------------- coscheduling_test.go TestPostFilter(+Threshold)


def test_post_filter_pod_without_group_is_unschedulable_alone() -> None:
    # "pod does not belong to any pod group": a plain pod that fits nowhere is unschedulable, nothing else.
    too_big = pod("p", namespace="ns", cpu="8", scheduler=SCHEDULER_NAME)
    result = _run(ONE_NODE, [too_big], [_pg("pg1", 2)])
    assert result.bindings == [] and [r.pod_keys for r in result.pending] == [("ns/p",)]


@pytest.mark.parametrize(
    ("name", "min_member", "assigned", "rejects"),
    [
        ("enough pods assigned, do not reject all", 1, 1, False),
        ("pod failed at filter phase, reject all pods", 2, 1, True),
    ],
)
def test_post_filter(name: str, min_member: int, assigned: int, rejects: bool) -> None:
    default = CoschedulingArgs().pod_group_reject_percentage
    assert rejects_group(min_member, assigned, default) is rejects


@pytest.mark.parametrize(
    ("name", "percentage", "assigned", "rejects"),
    [
        ("default 10%: 9/10 assigned (10% gap) → no rejection", 10, 9, False),
        ("default 10%: 8/10 assigned (20% gap) → rejection", 10, 8, True),
        ("0%: 9/10 assigned (10% gap) → rejection (always reject)", 0, 9, True),
        ("100%: 0/10 assigned (100% gap) → no rejection (never reject)", 100, 0, False),
        ("50%: 6/10 assigned (40% gap) → no rejection", 50, 6, False),
        ("50%: 4/10 assigned (60% gap) → rejection", 50, 4, True),
    ],
)
def test_post_filter_reject_threshold(name: str, percentage: int, assigned: int, rejects: bool) -> None:
    assert rejects_group(10, assigned, percentage) is rejects


def test_mark_and_clear_pod_group_schedule_failure() -> None:
    # core_test.go TestMarkAndClearPodGroupScheduleFailure: the queue time is the PodGroup's creation, a
    # later failure time after a failure, and the creation again once cleared.
    spec = GroupSpec.of(_pg("pg1", 3, created=T0 - 10), CoschedulingArgs())
    backoff = DefaultScheduler(SCHEDULER_NAME).backoff
    assert backoff.queue_time(spec) == T0 - 10
    backoff.record_failure(spec.key, T0, 0, complete=False)
    assert backoff.queue_time(spec) > T0 - 10
    backoff.record_success(spec.key)
    assert backoff.queue_time(spec) == T0 - 10
