"""The default scheduler for plain pods: order, fit messages, preemption."""

from gangplane.schedulers.base import Status
from gangplane.schedulers.default import PREEMPTED_REASON, DefaultScheduler
from gangplane.schedulers.loop import plan_pass
from schedulers.kube_builders import T0, node, pod


def _run(nodes, pods, scheduler=None):
    planned = plan_pass(T0, nodes, pods, {}, {"default-scheduler": scheduler or DefaultScheduler()})
    return planned.results[0][1]


def test_higher_priority_first_then_oldest() -> None:
    pods = [
        pod("late", cpu="2", created=T0 + 2),
        pod("early", cpu="2", created=T0 + 1),
        pod("vip", cpu="2", priority=9, created=T0 + 3),
    ]
    result = _run([node("a", cpu="4")], pods, DefaultScheduler(preemption=False))
    assert [b.pod_key for b in result.bindings] == ["ml/vip", "ml/early"]
    [reason] = result.pending
    assert (
        reason.pod_keys == ("ml/late",) and reason.message == "0/1 nodes are available: 1 Insufficient cpu."
    )


def test_spreads_plain_pods() -> None:
    result = _run([node("a"), node("b")], [pod("p"), pod("q")])
    assert sorted(b.node for b in result.bindings) == ["a", "b"]


def test_gated_and_foreign_pods_are_left_alone() -> None:
    pods = [pod("gated", schedulingGates=[{"name": "g"}]), pod("other", scheduler="volcano"), pod("mine")]
    result = _run([node("a")], pods)
    assert [b.pod_key for b in result.bindings] == ["ml/mine"] and result.pending == []


def test_request_for_a_resource_no_node_has() -> None:
    result = _run(
        [node("a")],
        [pod("p", containers=[{"name": "c", "resources": {"requests": {"example.com/fpga": "1"}}}])],
    )
    assert result.pending[0].message == "0/1 nodes are available: 1 Insufficient example.com/fpga."


def test_preemption_evicts_lowest_and_waits() -> None:
    nodes = [node("a", cpu="4")]
    bound = [pod("low", cpu="3", priority=1, node_name="a"), pod("mid", cpu="1", priority=5, node_name="a")]
    result = _run(nodes, [*bound, pod("high", cpu="2", priority=10)])
    assert [(e.pod_key, e.reason) for e in result.evictions] == [("ml/low", PREEMPTED_REASON)]
    assert result.bindings == [] and result.pending[0].status is Status.WAIT


def test_no_second_preemption_while_victims_terminate() -> None:
    nodes = [node("a", cpu="4")]
    terminating = pod("low", cpu="3", priority=1, node_name="a")
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    bound = [terminating, pod("low2", cpu="1", priority=1, node_name="a")]
    result = _run(nodes, [*bound, pod("high", cpu="2", priority=10)])
    assert result.evictions == [] and result.pending[0].status is Status.UNSCHEDULABLE


def test_preemption_off() -> None:
    bound = [pod("low", cpu="4", priority=1, node_name="a")]
    result = _run(
        [node("a", cpu="4")], [*bound, pod("high", cpu="2", priority=10)], DefaultScheduler(preemption=False)
    )
    assert result.evictions == [] and result.pending[0].status is Status.UNSCHEDULABLE


def test_equal_priority_never_preempts() -> None:
    bound = [pod("peer", cpu="4", priority=3, node_name="a")]
    result = _run([node("a", cpu="4")], [*bound, pod("p", cpu="2", priority=3)])
    assert result.evictions == []


def test_preemption_policy_never_waits_instead_of_preempting() -> None:
    # kube-scheduler PodEligibleToPreemptOthers: preemptionPolicy Never pods never evict anyone.
    bound = [pod("low", cpu="3", priority=1, node_name="a")]
    result = _run([node("a", cpu="4")], [*bound, pod("high", cpu="2", priority=10, preemptionPolicy="Never")])
    assert result.evictions == [] and result.pending[0].status is Status.UNSCHEDULABLE
    assert result.pending[0].message.endswith("not eligible to preempt: preemptionPolicy is Never")
