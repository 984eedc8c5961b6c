"""Reclaim while its victims are still leaving: the next cycle pipelines the reclaimer onto the releasing room
and evicts nothing more (the CI over-reclaim of ``test_kai_reclaims_over_quota_work_for_a_queue_within_its_
quota``: team-b's gang took both team-a gangs where one freed enough).

The shell writes a cycle's evictions pod by pod while the next cycle may already run, and the Job controller
replaces a deleting pod at once, so the next cycle can see any mix of a victim's pods: not marked yet,
deleting, gone, replaced. Upstream pipelines the evicting job onto Releasing pods (``framework/session.go``
``Evict`` marks them Releasing; ``actions/allocate`` pipelines a job that fits on idle + releasing room).
"""

from __future__ import annotations

import pytest
from kaiworld import World, node

from gangplane.schedulers.kai import KaiScheduler
from gangplane.schedulers.kai.gangs import build_tree
from gangplane.schedulers.kai.memo import EVICTION_IN_FLIGHT_S
from gangplane.schedulers.kai.model import KaiJob, Member, needed_members
from inflight_views import VIEWS, back_pending, gone, replaced


def team_a_fills_the_cluster() -> tuple[World, list[str]]:
    """2 nodes x 4 GPUs; team-a (quota 4) runs two gangs of 2 x 2 GPUs, team-b (quota 4) submits one: the
    first cycle evicts one team-a gang. The world and the victims' pod keys (their pods put back, as the
    view shows them while the evictions are being written)."""
    w = World(nodes=[node("n0", 4), node("n1", 4)])
    w.scheduler = KaiScheduler(w.config)  # kept across cycles, as the live loop keeps it
    w.add_queue("dept", -1)
    w.add_queue("team-a", 4, parent="dept")
    w.add_queue("team-b", 4, parent="dept")
    w.add_job("over-0", 2, 2, queue="team-a")
    w.add_job("over-1", 2, 2, queue="team-a")
    w.cycle()
    assert w.bound("over-0") + w.bound("over-1") == ["n0", "n0", "n1", "n1"]
    w.add_job("within", 2, 2, queue="team-b")
    assert len(w.cycle().evictions) == 2
    victims = list(w.evicted)
    for key in victims:
        w.pods[key] = w.evicted_pods.pop(key)
    w.evicted.clear()
    return w, victims


def _both_gone_and_replaced(w: World, v: list[str]) -> None:
    for key in v:
        gone(w, key)
        replaced(w, key)


@pytest.mark.parametrize("view", VIEWS, ids=list(VIEWS))
def test_the_next_cycle_pipelines_the_reclaimer_and_evicts_nothing_more(view: str) -> None:
    w, victims = team_a_fills_the_cluster()
    VIEWS[view](w, victims)
    result = w.cycle()
    assert result.evictions == []
    assert result.bindings == []
    reasons = {r.group: r.reason for r in result.pending}
    assert reasons["ns/within"] == "Pipelined"
    # the victims leave: team-b's gang binds where they were, and the other team-a gang keeps running
    _both_gone_and_replaced(w, [k for k in victims if k in w.pods])
    result = w.cycle()
    assert result.evictions == []
    assert w.bound("within") == ["n1", "n1"]
    assert w.bound("over-0") == ["n0", "n0"]


def test_an_eviction_never_seen_is_decided_again_after_the_in_flight_window() -> None:
    # a lost eviction write: the victims still run, unmarked, past the window; reclaim decides again, the same
    w, victims = team_a_fills_the_cluster()
    w.now += EVICTION_IN_FLIGHT_S
    result = w.cycle()
    assert sorted(e.pod_key for e in result.evictions) == sorted(victims)


def test_a_pod_back_pending_under_its_evicted_key_is_not_releasing() -> None:
    w, victims = team_a_fills_the_cluster()
    back_pending(w, victims)
    result = w.cycle()
    assert result.evictions == []
    assert w.bound("within") == ["n1", "n1"]
    assert {r.group for r in result.pending} == {"ns/over-1"}


def _member(name: str, running: bool, releasing: bool = False) -> Member:
    pod = type("Pod", (), {"gated": False, "key": f"ns/{name}"})()
    return Member(pod, "", running, releasing)  # type: ignore[arg-type]


def test_a_gang_with_releasing_pods_is_short_of_its_minimum() -> None:
    # upstream counts active allocated tasks, which leave Releasing out (``pod_status.go``): a replacement
    # of a gang being deleted is not an elastic extra to place on its own
    job = KaiJob("ns/g", "ns", "g", "q", 50, True, build_tree(2, None, []), {}, ("", ""), None)
    job.members = [
        _member("a", True, releasing=True),
        _member("b", True, releasing=True),
        _member("c", False),
    ]
    assert needed_members(job) is None
    job.members[1].releasing = False
    assert [m.pod.key for m in needed_members(job) or []] == ["ns/c"]
