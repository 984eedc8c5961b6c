"""Visibility positions and reasons; metrics on a private registry; fair-sharing DRS numbers."""

from __future__ import annotations

import math

from kueue_builders import cohort, cq, state, wl
from prometheus_client import CollectorRegistry

from gangplane.api.scheduling.kueue import PreemptionPolicy as P
from gangplane.schedulers.kueue.cycle import run_cycle
from gangplane.schedulers.kueue.fairsharing import DEFAULT_STRATEGIES, dominant_resource_share, weighted_share
from gangplane.schedulers.kueue.metrics import KueueMetrics
from gangplane.schedulers.kueue.quota import QuotaTree
from gangplane.schedulers.kueue.visibility import pending_in_cluster_queue, pending_workloads_summary

GPU = "nvidia.com/gpu"


def test_pending_positions_and_plain_reason() -> None:
    s = state(cq("team", {"a100": {GPU: 8}}))
    s.add_workload(wl("running", "team", {GPU: 4}, created=0), 0)
    run_cycle(s, 2)
    s.add_workload(wl("big", "team", {GPU: 8}, created=3, priority=5), 3)
    s.add_workload(wl("later", "team", {GPU: 6}, created=4), 4)
    s.add_workload(wl("queued", "team", {GPU: 6}, created=5), 5)
    run_cycle(s, 5)
    items = pending_in_cluster_queue(s, "team")
    assert [(p.name, p.position_in_cluster_queue, p.position_in_local_queue) for p in items] == [
        ("big", 0, 0),
        ("later", 1, 1),
        ("queued", 2, 2),
    ]
    assert items[0].message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor a100, "
        "4 more needed"
    )
    summary = pending_workloads_summary(items, limit=1, offset=1)
    assert summary["kind"] == "PendingWorkloadsSummary"
    assert [i["metadata"]["name"] for i in summary["items"]] == ["later"]
    assert summary["items"][0]["positionInClusterQueue"] == 1


def test_metrics_use_kueue_names_on_the_given_registry() -> None:
    registry = CollectorRegistry()
    metrics = KueueMetrics(registry)
    s = state(cq("team", {"a100": {GPU: 8}}))
    s.add_workload(wl("a", "team", {GPU: 6}, created=0), 0)
    s.add_workload(wl("b", "team", {GPU: 6}, created=0), 0)
    metrics.observe_cycle(s, run_cycle(s, 2.5), 2.5, 0.001)
    metrics.observe_cycle(s, run_cycle(s, 2.5), 2.5, 0.001)
    get = registry.get_sample_value
    assert get("kueue_admitted_workloads_total", {"cluster_queue": "team", "priority_class": ""}) == 1
    assert get("kueue_admission_wait_time_seconds_bucket", {"cluster_queue": "team", "priority_class": "",
                                                            "le": "2.5"}) == 1  # fmt: skip
    assert get("kueue_pending_workloads", {"cluster_queue": "team", "status": "inadmissible"}) == 1
    labels = {"cohort": "", "cluster_queue": "team", "flavor": "a100", "resource": GPU}
    assert get("kueue_cluster_queue_resource_usage", labels) == 6
    assert get("kueue_cluster_queue_nominal_quota", labels) == 8
    assert get("kueue_admission_attempts_total", {"result": "success"}) == 1


def test_drs_worked_example() -> None:
    # kueue.md §7: nominal 10 cpu, using 14, parent lendable 20 -> ratio 200, weight 1 -> share 200.
    tree = QuotaTree([cq("a", {"d": {"cpu": 10}}, cohort="c"), cq("b", {"d": {"cpu": 10}}, cohort="c")],
                     [cohort("c")])  # fmt: skip
    tree.add_usage("a", {("d", "cpu"): 14})
    assert dominant_resource_share(tree.cqs["a"]) == 200
    assert weighted_share(tree.cqs["a"]) == 200
    assert dominant_resource_share(tree.cqs["b"]) == 0
    weighted = QuotaTree([cq("a", {"d": {"cpu": 10}}, cohort="c", fair_weight=0.0)], [cohort("c")])
    weighted.add_usage("a", {("d", "cpu"): 11})
    assert math.isinf(dominant_resource_share(weighted.cqs["a"]))


def test_fair_sharing_reclaims_from_the_largest_borrower() -> None:
    queues = [
        cq(n, {"d": {"gpu": 4}}, cohort="c", within=P.LOWER_PRIORITY, reclaim=P.ANY) for n in ("a", "b", "x")
    ]
    s = state(*queues, cohorts=(cohort("c"),), fair=DEFAULT_STRATEGIES)
    s.add_workload(wl("a1", "a", {"gpu": 7}, created=1), 0)
    s.add_workload(wl("b1", "b", {"gpu": 5}, created=1), 0)
    run_cycle(s, 2)
    assert set(s.admitted["a"]) == {"ns/a1"} and set(s.admitted["b"]) == {"ns/b1"}
    s.add_workload(wl("x1", "x", {"gpu": 4}, created=3), 3)
    result = run_cycle(s, 3)
    assert [(e.key, e.preemption_reason) for e in result.evictions] == [("ns/a1", "InCohortReclamation")]


def test_public_surface_is_pinned() -> None:
    import gangplane.schedulers.kueue as kueue

    assert sorted(kueue.__all__) == sorted(
        ["CYCLE_KEY", "Assignment", "ClusterQueueSpec", "CohortSpec", "CycleResult", "Eviction", "FlavorSpec",
         "KueueConfig", "KueueController", "KueueMetrics", "KueueReconciler", "KueueState", "PendingWorkload",
         "PodSetAssignment", "PodSetRequest", "PreemptionStrategy", "QuotaTree", "WaitForPodsReady",
         "WorkloadRequest", "assign_flavors", "available", "build_kueue_controller", "dominant_resource_share",
         "pending_in_cluster_queue", "pending_in_local_queue", "potential_available", "run_cycle"]
    )  # fmt: skip
    assert all(hasattr(kueue, name) for name in kueue.__all__)
