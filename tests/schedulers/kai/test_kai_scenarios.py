"""Cycle-level scenarios for the embedded KAI scheduler."""

from __future__ import annotations

from kaiworld import World, node, under_root

from gangplane.api.scheduling import kai
from gangplane.schedulers.core.scoring import Strategy
from gangplane.schedulers.kai import KaiConfig

_world = under_root


def test_gang_binds_whole_or_not_at_all() -> None:
    w = _world(a=0)
    w.add_job("fits", 4, gpu=4, queue="a")
    w.add_job("toobig", 3, gpu=8, queue="a")
    result = w.cycle()
    assert len(w.bound("fits")) == 4 and w.bound("toobig") == []
    reason = next(p for p in result.pending if p.group == "ns/toobig")
    assert reason.reason == "NotEnoughResources" and "gang needs 3" in reason.message
    cond = w.groups["ns/toobig"]["status"]["schedulingConditions"][0]
    assert cond["type"] == "UnschedulableOnNodePool" and cond["reasons"][0]["reason"] == "NotEnoughResources"
    assert w.groups["ns/fits"]["status"]["resourcesStatus"]["allocated"]["nvidia.com/gpu"] == "16"


def test_limit_blocks_and_says_so() -> None:
    w = World(nodes=[node("n0")])
    w.add_queue("capped", 0, limit=2)
    w.add_job("j", 4, queue="capped")
    result = w.cycle()
    assert w.bound("j") == []
    assert result.pending[0].reason == "OverLimit"
    assert result.pending[0].message == "queue capped at its limit of 2 GPUs: 0 in use, 4 more requested"


def test_non_preemptible_work_stays_within_quota() -> None:
    w = World(nodes=[node("n0")])
    w.add_queue("q", 2)
    w.add_job("inf", 4, queue="q", priority_class="inference")  # 125: non-preemptible
    result = w.cycle()
    assert w.bound("inf") == [] and result.pending[0].reason == "NonPreemptibleOverQuota"


def test_missing_queue_is_reported() -> None:
    w = World(nodes=[node("n0")])
    w.add_job("j", 1, queue="ghost")
    result = w.cycle()
    assert result.pending[0].reason == "QueueDoesNotExist"


def test_over_quota_work_is_reclaimed_when_a_queue_under_quota_submits() -> None:
    # a (quota 8) is idle; b (quota 8) runs 16 GPUs. a submits 2 × 4 GPUs: b gives back 8.
    w = _world(a=8, b=8)
    for i in range(4):
        w.add_job(f"b{i}", 1, gpu=4, queue="b")
    w.run(1)
    assert sum(len(w.bound(f"b{i}")) for i in range(4)) == 4
    w.add_job("a0", 2, gpu=4, queue="a")
    result = w.cycle()
    assert {e.reason for e in result.evictions} == {"Reclaimed"} and len(result.evictions) == 2
    assert all(e.pod_key.startswith("ns/b") for e in result.evictions)
    w.cycle()
    assert len(w.bound("a0")) == 2


def test_in_quota_work_is_never_reclaimed() -> None:
    w = _world(a=8, b=8)
    w.add_job("b0", 2, gpu=4, queue="b")  # exactly b's quota
    w.run(1)
    w.add_job("a0", 3, gpu=8, queue="a")  # asks beyond the cluster's free room
    result = w.cycle()
    assert result.evictions == []


def test_preempt_within_a_queue_by_priority_only_preemptible_victims() -> None:
    w = _world(nodes=1, q=8)
    w.add_job("low", 2, gpu=4, queue="q", priority_class="train")
    w.run(1)
    w.add_job("high", 2, gpu=4, queue="q", priority_class="build")
    result = w.cycle()
    assert sorted(e.pod_key for e in result.evictions) == ["ns/low-0", "ns/low-1"]
    w.cycle()
    assert w.bound("high") == ["n0", "n0"]


def test_non_preemptible_victims_are_kept() -> None:
    w = _world(nodes=1, q=8)
    w.add_job("low", 2, gpu=4, queue="q", priority_class="train", preemptibility="non-preemptible")
    w.run(1)
    w.add_job("high", 2, gpu=4, queue="q", priority_class="build")
    assert w.cycle().evictions == []


def test_required_topology_keeps_the_gang_in_one_domain() -> None:
    labels = {"n0": "r0", "n1": "r0", "n2": "r1", "n3": "r1"}
    w = World(nodes=[node(n, gpu=4, labels={"rack": r}) for n, r in labels.items()])
    w.add_queue("q", 0)
    w.add_job("filler", 1, gpu=4, queue="q")
    w.pin("filler", ["n0"])
    w.add_job("ring", 2, gpu=4, queue="q", topology={"topology": "t", "requiredTopologyLevel": "rack"})
    w.cycle()
    assert w.bound("ring") == ["n2", "n3"]


def test_required_topology_waits_instead_of_straddling() -> None:
    labels = {"n0": "r0", "n1": "r0", "n2": "r1", "n3": "r1"}
    w = World(nodes=[node(n, gpu=4, labels={"rack": r}) for n, r in labels.items()])
    w.add_queue("q", 0)
    w.add_job("f", 2, gpu=4, queue="q")
    w.pin("f", ["n0", "n2"])
    w.add_job("ring", 2, gpu=4, queue="q", topology={"topology": "t", "requiredTopologyLevel": "rack"})
    result = w.cycle()
    assert w.bound("ring") == []
    assert "no rack domain can hold the gang" in next(
        p.message for p in result.pending if p.group == "ns/ring"
    )


def test_spread_puts_one_pod_per_node() -> None:
    w = World(nodes=[node(f"n{i}") for i in range(4)], config=KaiConfig(strategy=Strategy.SPREAD))
    w.add_queue("q", 0)
    w.add_job("j", 4, queue="q")
    w.cycle()
    assert w.bound("j") == ["n0", "n1", "n2", "n3"]


def test_podgrouper_derives_the_jobset_gang_when_no_pod_group_exists() -> None:
    w = World(nodes=[node("n0"), node("n1")])
    w.add_queue("q", 0)
    w.jobsets.append(
        {
            "metadata": {
                "name": "train",
                "namespace": "ns",
                "uid": "js-uid",
                "labels": {kai.QUEUE_LABEL: "q"},
            },
            "spec": {
                "replicatedJobs": [{"name": "node", "replicas": 1, "template": {"spec": {"parallelism": 3}}}]
            },
        }
    )
    labels = {
        "jobset.sigs.k8s.io/jobset-name": "train",
        "jobset.sigs.k8s.io/replicatedjob-name": "node",
        "jobset.sigs.k8s.io/job-index": "0",
        kai.QUEUE_LABEL: "q",
    }
    for i in range(2):  # only 2 of the 3 pods exist yet: the leaf needs 3
        w.add_pod(f"train-node-0-{i}", 8, "2026-01-01T00:00:01Z", labels=labels)
    result = w.cycle()
    assert result.bindings == []
    assert result.pending[0].group == "ns/pg-train-js-uid" and result.pending[0].reason == "NotEnoughPods"
    w.nodes.append(node("n2"))
    w.add_pod("train-node-0-2", 8, "2026-01-01T00:00:01Z", labels=labels)
    assert len(w.cycle().bindings) == 3


def test_quota_and_weight_split_a_contended_cluster_via_reclaim() -> None:
    # 16 GPUs, a: quota 4 weight 1, b: quota 4 weight 3 -> fair shares 6 / 10. b floods first, then a.
    w = _world(a=4, b=4)
    w.queues["b"]["spec"]["resources"]["gpu"]["overQuotaWeight"] = 3
    for i in range(16):
        w.add_job(f"b{i}", 1, gpu=1, queue="b")
    w.run(1)
    for i in range(16):
        w.add_job(f"a{i}", 1, gpu=1, queue="a")
    w.run(6)
    used_a = sum(len(w.bound(f"a{i}")) for i in range(16))
    used_b = sum(len(w.bound(f"b{i}")) for i in range(16))
    assert (used_a, used_b) == (6, 10)
