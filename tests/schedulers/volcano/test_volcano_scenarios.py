"""Cycle-level scenarios for the embedded Volcano scheduler."""

from __future__ import annotations

from vcworld import World, hypernode, node

from gangplane.schedulers.volcano import VolcanoConfig


def test_gang_that_fits_is_bound_whole_and_pod_group_runs() -> None:
    w = World(nodes=[node("n0"), node("n1")])
    w.add_job("train", 4, gpu=4)
    result = w.cycle()
    assert len(result.bindings) == 4
    assert w.bound("train") == ["n0", "n0", "n1", "n1"]
    assert w.phase("train") == "Running"
    cond = w.groups["ns/train"]["status"]["conditions"][0]
    assert cond["type"] == "Scheduled"


def test_gang_that_does_not_fit_binds_nothing_and_says_why() -> None:
    w = World(nodes=[node("n0"), node("n1")])
    w.add_job("big", 3, gpu=8, min_resources=False)
    result = w.cycle()
    assert result.bindings == []
    assert w.phase("big") == "Inqueue"
    reason = result.pending[0]
    assert reason.group == "ns/big" and len(reason.pod_keys) == 3
    assert reason.message.startswith("3/3 tasks in gang unschedulable")
    cond = w.groups["ns/big"]["status"]["conditions"][0]
    assert (cond["type"], cond["reason"]) == ("Unschedulable", "NotEnoughResources")


def test_enqueue_holds_a_job_whose_min_resources_exceed_the_queue() -> None:
    w = World(nodes=[node("n0")])
    w.add_queue("small", capability={"nvidia.com/gpu": "2"})
    w.add_job("j", 4, gpu=1, queue="small")
    result = w.cycle()
    assert w.phase("j") == "Pending" and result.bindings == []
    assert (
        "queue small at its capability nvidia.com/gpu=2, 0 in use, 4 more requested"
        in result.pending[0].message
    )


def test_closed_queue_gets_nothing() -> None:
    w = World(nodes=[node("n0")])
    w.add_queue("shut")
    w.queues["shut"]["status"]["state"] = "Closed"
    w.add_job("j", 1, queue="shut", min_resources=False)
    result = w.cycle()
    assert result.bindings == []
    assert "queue shut is Closed" in result.pending[0].message


def test_unknown_queue_leaves_the_job_out() -> None:
    w = World(nodes=[node("n0")])
    w.add_job("j", 1, queue="ghost")
    result = w.cycle()
    assert result.bindings == [] and result.pending[0].message == "queue ghost does not exist"


def test_queue_weights_split_a_contended_cluster() -> None:
    # 16 GPUs; a:b = 1:3; each queue floods with 1-GPU gangs. Deserved 4 / 12.
    w = World(nodes=[node("n0"), node("n1")])
    w.add_queue("a", weight=1)
    w.add_queue("b", weight=3)
    for i in range(16):
        w.add_job(f"a{i}", 1, queue="a", min_resources=False)
        w.add_job(f"b{i}", 1, queue="b", min_resources=False)
    w.run(3)
    used_a = sum(len(w.bound(f"a{i}")) for i in range(16))
    used_b = sum(len(w.bound(f"b{i}")) for i in range(16))
    assert (used_a, used_b) == (4, 12)
    assert w.queues["a"]["status"]["allocated"]["nvidia.com/gpu"] == "4"
    assert w.queues["b"]["status"]["running"] == 12


NO_OVERCOMMIT = VolcanoConfig(overcommit_factor=None)


def test_full_cluster_blocks_admission_under_overcommit() -> None:
    # overcommit: inqueue + minResources ≤ 1.2 × 8 − 8 used; a Pending job is never a reclaim candidate.
    w = World(nodes=[node("n0")])
    w.add_queue("a")
    w.add_queue("b")
    w.add_job("b0", 1, gpu=8, queue="b")
    w.run(1)
    w.add_job("a0", 1, gpu=8, queue="a")
    result = w.cycle()
    assert result.evictions == [] and w.phase("a0") == "Pending"
    assert "overcommit factor" in result.pending[0].message


def test_reclaim_takes_back_a_borrowed_share() -> None:
    # b borrows the whole cluster while a is idle; a then submits and reclaims its half.
    w = World(nodes=[node("n0"), node("n1")], config=NO_OVERCOMMIT)
    w.add_queue("a")
    w.add_queue("b")
    for i in range(4):
        w.add_job(f"b{i}", 1, gpu=4, queue="b")
    w.run(1)
    assert sum(len(w.bound(f"b{i}")) for i in range(4)) == 4
    w.add_job("a0", 2, gpu=4, queue="a")
    result = w.cycle()
    assert sorted(e.reason for e in result.evictions) == ["Reclaimed", "Reclaimed"]
    assert all(e.pod_key.startswith("ns/b") for e in result.evictions)
    assert "waiting for 2 evicted pods" in next(p.message for p in result.pending if p.group == "ns/a0")
    w.cycle()
    assert len(w.bound("a0")) == 2


def test_not_reclaimable_queue_keeps_what_it_borrowed() -> None:
    w = World(nodes=[node("n0")], config=NO_OVERCOMMIT)
    w.add_queue("a")
    w.add_queue("b", reclaimable=False)
    w.add_job("b0", 1, gpu=8, queue="b")
    w.run(1)
    w.add_job("a0", 1, gpu=8, queue="a")
    result = w.cycle()
    assert result.evictions == [] and w.bound("a0") == []


def test_preempt_within_a_queue_by_priority() -> None:
    w = World(nodes=[node("n0")], config=NO_OVERCOMMIT)
    # minResources would keep "high" Pending: proportion admits only up to the queue's real capability.
    w.add_job("low", 2, gpu=4, priority=1, min_resources=False)
    w.run(1)
    w.add_job("high", 2, gpu=4, priority=10, min_resources=False)
    result = w.cycle()
    assert sorted(e.pod_key for e in result.evictions) == ["ns/low-0", "ns/low-1"]
    assert {e.reason for e in result.evictions} == {"Preempted"}
    w.cycle()
    assert w.bound("high") == ["n0", "n0"]


def test_equal_priority_is_never_preempted() -> None:
    w = World(nodes=[node("n0")], config=NO_OVERCOMMIT)
    w.add_job("first", 2, gpu=4)
    w.run(1)
    w.add_job("second", 2, gpu=4)
    assert w.cycle().evictions == []


def _racks() -> World:
    nodes = [node(f"n{i}", gpu=4) for i in range(4)]
    w = World(nodes=nodes)
    w.hypernodes = [
        hypernode("rack-0", 1, nodes=["n0", "n1"], tier_name="rack"),
        hypernode("rack-1", 1, nodes=["n2", "n3"], tier_name="rack"),
        hypernode("spine", 2, children=["rack-0", "rack-1"]),
    ]
    return w


def test_hard_topology_gang_lands_inside_one_tier_one_hypernode() -> None:
    w = _racks()
    w.add_job("filler", 1, gpu=4, min_resources=False)  # takes n0: rack-0 has 4 GPUs left, rack-1 has 8
    w.run(1)
    w.add_job("ring", 2, gpu=4, topology={"mode": "hard", "highestTierAllowed": 1})
    w.cycle()
    assert w.bound("ring") in (["n2", "n3"],)
    assert w.phase("ring") == "Running"


def test_hard_topology_gang_waits_rather_than_straddling_racks() -> None:
    w = _racks()
    w.add_job("f0", 1, gpu=4, min_resources=False)
    w.add_job("f2", 1, gpu=4, min_resources=False)
    w.pin("f0", ["n0"])
    w.pin("f2", ["n2"])
    w.add_job("ring", 2, gpu=4, topology={"mode": "hard", "highestTierAllowed": 1}, min_resources=False)
    result = w.cycle()
    assert w.bound("ring") == []
    assert "no HyperNode of tier ≤ 1 can hold the gang" in next(p.message for p in result.pending)
    # tier 2 (the spine) is allowed: now it fits across racks
    w.groups["ns/ring"]["spec"]["networkTopology"]["highestTierAllowed"] = 2
    w.cycle()
    assert len(w.bound("ring")) == 2


def test_tier_name_translates_to_its_number() -> None:
    w = _racks()
    w.add_job("ring", 2, gpu=4, topology={"mode": "hard", "highestTierName": "rack"})
    w.cycle()
    assert w.bound("ring") in (["n0", "n1"], ["n2", "n3"])


def test_soft_topology_prefers_the_tightest_tier_and_falls_back() -> None:
    w = _racks()
    w.add_job("f0", 1, gpu=4, min_resources=False)
    w.add_job("f2", 1, gpu=4, min_resources=False)
    w.pin("f0", ["n0"])
    w.pin("f2", ["n2"])
    w.add_job("ring", 2, gpu=4, topology={"mode": "soft"}, min_resources=False)
    w.cycle()
    assert w.bound("ring") == ["n1", "n3"]


def test_capacity_plugin_borrows_up_to_capability() -> None:
    w = World(nodes=[node("n0"), node("n1")], config=VolcanoConfig(share_policy="capacity"))  # type: ignore[arg-type]
    w.add_queue("a", deserved={"nvidia.com/gpu": "4"}, capability={"nvidia.com/gpu": "12"})
    for i in range(16):
        w.add_job(f"a{i}", 1, queue="a")
    w.run(2)
    assert sum(len(w.bound(f"a{i}")) for i in range(16)) == 12


def test_minimum_member_below_size_starts_the_gang_and_grows() -> None:
    w = World(nodes=[node("n0")])
    w.add_job("elastic", 12, gpu=1, min_member=4)
    w.cycle()
    assert len(w.bound("elastic")) == 8
    assert w.phase("elastic") == "Running"


def test_proportion_starves_a_task_larger_than_every_queue_share() -> None:
    # Upstream behaviour kept: 4 GPUs, a and b each want one 3-GPU task; both deserve 2 and neither runs.
    w = World(nodes=[node("n0", gpu=4)], config=NO_OVERCOMMIT)
    w.add_queue("a")
    w.add_queue("b")
    w.add_job("ja", 1, gpu=3, queue="a", min_resources=False)
    w.add_job("jb", 1, gpu=3, queue="b", min_resources=False)
    result = w.cycle()
    assert result.bindings == []
    assert (
        "queue a at its deserved share nvidia.com/gpu=2, 0 in use, 3 more requested"
        in result.pending[0].message
    )
