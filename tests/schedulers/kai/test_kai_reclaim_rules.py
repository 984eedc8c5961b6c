"""KAI reclaim and allocation-order rules checked against upstream (kai.md §6, §7; issue #16)."""

from __future__ import annotations

from kaiworld import World, node, under_root

_world = under_root


def _b_borrows_everything(w: World) -> None:
    for i in range(4):
        w.add_job(f"b{i}", 1, gpu=4, queue="b")
    w.run(1)
    assert sum(len(w.bound(f"b{i}")) for i in range(4)) == 4


def test_non_preemptible_job_reclaims_within_its_deserved_quota() -> None:
    # CanReclaimResources: allocatedNonPreemptible (0) + request (8) <= deserved (8).
    w = _world(a=8, b=8)
    _b_borrows_everything(w)
    w.add_job("inf", 2, gpu=4, queue="a", priority_class="inference")
    result = w.cycle()
    assert {e.reason for e in result.evictions} == {"Reclaimed"} and len(result.evictions) == 2
    w.cycle()
    assert len(w.bound("inf")) == 2


def test_non_preemptible_job_beyond_its_quota_does_not_reclaim_and_says_why() -> None:
    w = _world(a=4, b=8)
    _b_borrows_everything(w)
    w.add_job("inf", 2, gpu=4, queue="a", priority_class="inference")
    result = w.cycle()
    assert result.evictions == []
    reason = next(p for p in result.pending if p.group == "ns/inf")
    assert reason.reason == "NonPreemptibleOverQuota"
    assert reason.message == "queue a at its quota of 4 GPUs: 0 in use, 8 more requested"


def test_queue_over_its_share_with_one_large_job_is_reclaimed_from() -> None:
    # MaintainFairShare reads the victim queue before subtracting the victim: b holds 12 of 16 GPUs in one
    # job (fair share 8), so a (no quota, fair share 8) may take it, although b would be left with 0.
    w = _world(a=0, b=0)
    w.add_job("big", 3, gpu=4, queue="b")
    w.run(1)
    assert len(w.bound("big")) == 3
    w.add_job("small", 2, gpu=4, queue="a")
    result = w.cycle()
    assert sorted(e.pod_key for e in result.evictions) == ["ns/big-0", "ns/big-1", "ns/big-2"]


def test_allocation_compares_departments_before_leaves() -> None:
    # d2 is within its deserved quota and d1 is not, so d2's leaf b goes first, although leaf a2 has the
    # higher queue priority and would win a leaf-only comparison. Room for one 4-GPU pod only.
    w = World(nodes=[node("n0"), node("n1")])
    w.add_queue("d1", 4)
    w.add_queue("d2", 8)
    w.add_queue("a1", 0, parent="d1")
    w.add_queue("a2", 0, parent="d1", priority=200)
    w.add_queue("b", 0, parent="d2")
    w.add_job("run", 3, gpu=4, queue="a1")
    w.pin("run", ["n0", "n0", "n1"])
    w.add_job("wa2", 1, gpu=4, queue="a2")
    w.add_job("wb", 1, gpu=4, queue="b")
    w.cycle()
    assert w.bound("wb") == ["n1"] and w.bound("wa2") == []
