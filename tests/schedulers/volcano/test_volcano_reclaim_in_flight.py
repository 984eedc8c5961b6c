"""Reclaim while its victims are still leaving: the next session counts them Releasing and evicts nothing
more (the over-reclaim KAI had, ``tests/schedulers/kai/test_kai_reclaim_in_flight.py``).

The shell writes a session's evictions pod by pod while the next session may already run, and the Job
controller replaces a deleting pod at once, so the next session can see any mix of a victim's pods: not
marked yet, deleting, gone, replaced. Upstream Volcano's cache sets an evicted task Releasing at once
(``pkg/scheduler/cache/cache.go`` ``Evict``, for the evictions the session's statement commits), so a gang
half seen as deleting is still wholly releasing. Checked with the kept session (the simulator's, ``explain``
off) and the plain one.
"""

from __future__ import annotations

import pytest
from vcworld import World, node

from gangplane.schedulers.core.evicting import EVICTION_IN_FLIGHT_S
from gangplane.schedulers.volcano import VolcanoConfig, VolcanoScheduler
from inflight_views import VIEWS, back_pending, gone

CONFIGS = {
    "plain": VolcanoConfig(overcommit_factor=None),
    "kept": VolcanoConfig(overcommit_factor=None, explain=False),
}


def queue_a_fills_the_cluster(config: VolcanoConfig) -> tuple[World, list[str]]:
    """2 nodes x 4 GPUs; queue a runs two gangs of 2 x 2 GPUs, queue b (the same weight) submits one: the
    reclaim evicts one gang of a. The world and the victims' pod keys, their pods put back as the view shows
    them while the evictions are being written."""
    w = World(nodes=[node("n0", 4), node("n1", 4)], config=config)
    w.scheduler = VolcanoScheduler(config)  # kept across sessions, as the live loop keeps it
    w.add_queue("a")
    w.add_queue("b")
    w.add_job("over-0", 2, gpu=2, queue="a")
    w.add_job("over-1", 2, gpu=2, queue="a")
    w.run(2)
    assert w.bound("over-0") + w.bound("over-1") == ["n0", "n0", "n1", "n1"]
    w.add_job("within", 2, gpu=2, queue="b")
    victims = sorted(e.pod_key for e in w.cycle().evictions)
    assert victims == ["ns/over-0-0", "ns/over-0-1"]
    for key in victims:
        w.pods[key] = w.evicted_pods.pop(key)
    w.evicted.clear()
    return w, victims


@pytest.mark.parametrize("config", CONFIGS, ids=list(CONFIGS))
@pytest.mark.parametrize("view", VIEWS, ids=list(VIEWS))
def test_the_next_session_evicts_nothing_more(view: str, config: str) -> None:
    w, victims = queue_a_fills_the_cluster(CONFIGS[config])
    VIEWS[view](w, victims)
    result = w.cycle()
    assert result.evictions == []
    assert result.bindings == []
    # the victims leave: queue b's gang binds where they were, and the other gang of a keeps running
    for key in [k for k in victims if k in w.pods]:
        gone(w, key)
    result = w.cycle()
    assert result.evictions == []
    assert w.bound("within") == ["n0", "n0"]
    assert w.bound("over-1") == ["n1", "n1"]


@pytest.mark.parametrize("config", CONFIGS, ids=list(CONFIGS))
def test_an_eviction_never_seen_is_decided_again_after_the_in_flight_window(config: str) -> None:
    # a lost eviction write: the victims still run, unmarked; inside the window nothing more is evicted,
    # past it reclaim decides again, the same
    w, victims = queue_a_fills_the_cluster(CONFIGS[config])
    assert w.cycle().evictions == []
    w.now += EVICTION_IN_FLIGHT_S
    assert sorted(e.pod_key for e in w.cycle().evictions) == victims


@pytest.mark.parametrize("config", CONFIGS, ids=list(CONFIGS))
def test_a_pod_back_pending_under_its_evicted_key_is_not_releasing(config: str) -> None:
    w, victims = queue_a_fills_the_cluster(CONFIGS[config])
    back_pending(w, victims)
    result = w.cycle()
    assert result.evictions == []
    assert w.bound("within") == ["n0", "n0"]
    assert w.bound("over-0") == []
