"""Scenarios over the pure core: quota blocking, borrowing and reclaim, priority preemption, FIFO strategies,
waitForPodsReady, stop policy and namespace selection."""

from __future__ import annotations

import dataclasses

from kueue_builders import cohort, cq, state, wl

from gangplane.api.scheduling.common import LabelSelector
from gangplane.api.scheduling.kueue import PreemptionPolicy as P
from gangplane.api.scheduling.kueue import QueueingStrategy, StopPolicy
from gangplane.schedulers.kueue.cycle import run_cycle
from gangplane.schedulers.kueue.workloads import Phase

GPU = "gpu"
F = "default"


def _admitted(s) -> set[str]:  # type: ignore[no-untyped-def]
    return {k.split("/")[1] for by_key in s.admitted.values() for k in by_key}


def _drain(s, now: float = 0.0, limit: int = 20):  # type: ignore[no-untyped-def]
    results = []
    for _ in range(limit):
        result = run_cycle(s, now)
        results.append(result)
        if not result.progressed:
            break
    return results


def test_quota_blocks_second_workload_until_first_finishes() -> None:
    s = state(cq("team", {F: {GPU: 8}}))
    s.add_workload(wl("first", "team", {GPU: 6}, created=1), 0)
    s.add_workload(wl("second", "team", {GPU: 4}, created=2), 0)
    _drain(s, 2)  # past the requeue batched by configure()
    assert _admitted(s) == {"first"}
    second = s.workloads["ns/second"]
    assert second.conditions["QuotaReserved"].status == "False"
    assert second.conditions["QuotaReserved"].message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for gpu in flavor default, 2 more needed"
    )
    s.finish_workload("ns/first", True, "done", 5)
    assert not run_cycle(s, 5.5).admitted  # the requeue is batched for one second
    assert [w.key for w in run_cycle(s, 6).admitted] == ["ns/second"]
    assert s.workloads["ns/first"].conditions["Finished"].reason == "Succeeded"


def test_borrowing_from_cohort_and_reclaiming_it() -> None:
    a = cq("a", {F: {GPU: 4}}, cohort="pool", reclaim=P.ANY)
    b = cq("b", {F: {GPU: 4}}, cohort="pool", reclaim=P.ANY)
    s = state(a, b)
    s.add_workload(wl("borrower", "a", {GPU: 6}), 0)
    _drain(s)
    assert _admitted(s) == {"borrower"}
    assert s.tree.cqs["a"].usage[(F, GPU)] == 6  # 2 borrowed from b
    s.add_workload(wl("owner", "b", {GPU: 4}), 1)
    first = run_cycle(s, 1)
    assert [e.key for e in first.evictions] == ["ns/borrower"]
    assert first.evictions[0].preemption_reason == "InCohortReclamation"
    assert s.workloads["ns/owner"].pending_reason == "WaitingForPreemptedWorkloads"
    second = run_cycle(s, 1)
    assert [w.key for w in second.admitted] == ["ns/owner"]
    assert s.workloads["ns/borrower"].conditions["Evicted"].reason == "Preempted"


def test_high_priority_preempts_low_which_requeues_and_later_admits() -> None:
    s = state(cq("team", {F: {GPU: 8}}, within=P.LOWER_PRIORITY))
    s.add_workload(wl("low", "team", {GPU: 6}, priority=1, created=1), 0)
    _drain(s)
    s.add_workload(wl("high", "team", {GPU: 6}, priority=10, created=2), 1)
    result = run_cycle(s, 1)
    assert [(e.key, e.reason, e.preemption_reason) for e in result.evictions] == [
        ("ns/low", "Preempted", "InClusterQueue")
    ]
    low = s.workloads["ns/low"]
    assert low.phase == Phase.PENDING and low.conditions["Requeued"].status == "True"
    _drain(s, 1)
    assert _admitted(s) == {"high"}
    s.finish_workload("ns/high", True, "", 10)
    _drain(s, 11)
    assert _admitted(s) == {"low"}


def test_equal_priority_is_not_preempted_by_lower_priority_policy() -> None:
    s = state(cq("team", {F: {GPU: 8}}, within=P.LOWER_PRIORITY))
    s.add_workload(wl("old", "team", {GPU: 6}, priority=5, created=1), 0)
    _drain(s)
    s.add_workload(wl("new", "team", {GPU: 6}, priority=5, created=2), 1)
    assert not run_cycle(s, 1).evictions


def test_minimal_victim_set() -> None:
    s = state(cq("team", {F: {GPU: 8}}, within=P.LOWER_PRIORITY))
    for i, size in enumerate([2, 4, 2]):
        s.add_workload(wl(f"v{i}", "team", {GPU: size}, priority=1, created=i), i)
        _drain(s, i)
    s.add_workload(wl("big", "team", {GPU: 4}, priority=9, created=10), 5)
    # Most recently admitted first: v2 (2) is not enough, v1 (4) is; v2 is then put back.
    evicted = {e.key for e in run_cycle(s, 5).evictions}
    assert evicted == {"ns/v1"}


def _fifo_state(strategy: QueueingStrategy):  # type: ignore[no-untyped-def]
    s = state(cq("team", {F: {GPU: 8}}, strategy=strategy))
    s.add_workload(wl("running", "team", {GPU: 4}, created=0), 0)
    _drain(s)
    s.add_workload(wl("big", "team", {GPU: 8}, created=1), 0)
    s.add_workload(wl("small", "team", {GPU: 2}, created=2), 0)
    return s


def test_strict_fifo_blocks_behind_its_head() -> None:
    s = _fifo_state(QueueingStrategy.STRICT_FIFO)
    _drain(s, 1)
    assert _admitted(s) == {"running"}
    assert s.workloads["ns/small"].phase == Phase.PENDING


def test_best_effort_fifo_skips_a_head_that_does_not_fit() -> None:
    s = _fifo_state(QueueingStrategy.BEST_EFFORT_FIFO)
    _drain(s, 1)
    assert _admitted(s) == {"running", "small"}
    assert "ns/big" in s.queues.queue("team").inadmissible


def test_pods_ready_timeout_evicts_and_backs_off_exponentially() -> None:
    s = state(cq("team", {F: {GPU: 8}}), pods_ready=True)
    s.add_workload(wl("gang", "team", {GPU: 8}), 0)
    _drain(s)
    run_cycle(s, 1)  # flushes the requeue batched by configure()
    assert s.next_wakeup() == 1800
    evictions = s.check_pods_ready(1800)
    assert [(e.key, e.reason) for e in evictions] == [("ns/gang", "PodsReadyTimeout")]
    gang = s.workloads["ns/gang"]
    assert (gang.requeue_count, gang.requeue_at) == (1, 1860)
    assert gang.conditions["Requeued"].status == "False"
    assert not run_cycle(s, 1830).admitted
    assert [w.key for w in run_cycle(s, 1860).admitted] == ["ns/gang"]
    assert gang.conditions["Requeued"].reason == "BackoffFinished"
    s.check_pods_ready(1860 + 1800)
    assert gang.requeue_at == 1860 + 1800 + 120


def test_pods_ready_stops_the_timer() -> None:
    s = state(cq("team", {F: {GPU: 8}}), pods_ready=True)
    s.add_workload(wl("gang", "team", {GPU: 8}), 0)
    _drain(s)
    s.set_pods_ready("ns/gang", True, 10)
    assert s.check_pods_ready(5000) == []
    assert s.workloads["ns/gang"].conditions["PodsReady"].reason == "Started"


def test_stop_policy_hold_and_drain() -> None:
    spec = cq("team", {F: {GPU: 8}})
    s = state(spec)
    s.add_workload(wl("a", "team", {GPU: 2}), 0)
    _drain(s)
    evictions = s.configure(
        [dataclasses.replace(spec, stop_policy=StopPolicy.HOLD_AND_DRAIN)], [], s.flavors.values(), 1
    )
    assert [(e.key, e.reason) for e in evictions] == [("ns/a", "ClusterQueueStopped")]
    _drain(s, 3)
    assert s.workloads["ns/a"].pending_reason == "Suspended"


def test_namespace_selector() -> None:
    spec = cq("team", {F: {GPU: 8}}, namespace_selector=LabelSelector(match_labels={"team": "a"}))
    s = state(spec)
    s.add_workload(wl("w", "team", {GPU: 1}), 0)
    _drain(s)
    assert s.workloads["ns/w"].pending_reason == "Misconfigured"


def test_cohort_tree_three_levels_borrows_through_parent() -> None:
    s = state(
        cq("a", {F: {GPU: 2}}, cohort="research"),
        cq("b", {F: {GPU: 2}}, cohort="research"),
        cq("c", {F: {GPU: 4}}, cohort="org"),
        cohorts=(cohort("research", parent="org"), cohort("org")),
    )
    s.add_workload(wl("wide", "a", {GPU: 7}), 0)
    _drain(s)
    assert _admitted(s) == {"wide"}
    assert s.workloads["ns/wide"].assignment.borrow == 2


def test_removed_cluster_queue_does_not_break_release() -> None:
    s = state(cq("team", {F: {GPU: 8}}), cq("other", {F: {GPU: 8}}))
    s.add_workload(wl("a", "team", {GPU: 2}), 0)
    _drain(s)
    s.configure([cq("other", {F: {GPU: 8}})], [], s.flavors.values(), 1)
    s.finish_workload("ns/a", True, "", 2)
    assert s.workloads["ns/a"].phase == Phase.FINISHED


def test_borrow_within_cohort_preempts_lower_priority_below_threshold() -> None:
    a = cq(
        "a",
        {F: {GPU: 4}},
        cohort="pool",
        reclaim=P.LOWER_PRIORITY,
        borrow_within=P.LOWER_PRIORITY,
        threshold=5,
    )
    b = cq("b", {F: {GPU: 4}}, cohort="pool")
    s = state(a, b)
    s.add_workload(wl("low", "b", {GPU: 8}, priority=1), 0)
    s.add_workload(wl("mid", "b", {GPU: 0}, priority=9), 0)
    _drain(s)
    assert _admitted(s) == {"low", "mid"}
    s.add_workload(wl("borrower", "a", {GPU: 6}, priority=10), 1)
    result = run_cycle(s, 1)
    assert [(e.key, e.preemption_reason) for e in result.evictions] == [
        ("ns/low", "InCohortReclaimWhileBorrowing")
    ]


def test_block_admission_waits_for_pods_ready() -> None:
    from gangplane.schedulers.kueue.podsready import WaitForPodsReady
    from gangplane.schedulers.kueue.state import KueueConfig

    s = state(cq("team", {F: {GPU: 8}}))
    s.config = KueueConfig(WaitForPodsReady(block_admission=True))
    s.add_workload(wl("first", "team", {GPU: 2}, created=0), 0)
    s.add_workload(wl("second", "team", {GPU: 2}, created=1), 0)
    _drain(s, 2)
    assert _admitted(s) == {"first"}
    assert s.workloads["ns/second"].pending_reason == "WaitingForPodsReady"
    s.set_pods_ready("ns/first", True, 3)
    _drain(s, 3)
    assert _admitted(s) == {"first", "second"}
