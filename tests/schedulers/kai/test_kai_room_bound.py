"""The room bound (``placement.may_fit``) checked before a gang's node-by-node search: it never turns away
a gang the search would place, and it turns away one that asks for more than the free room of every node
together, without a search."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kaiworld import World
from kaiworld import node as kai_node

from gangplane.schedulers.core.gang import place_gang
from gangplane.schedulers.kai import placement
from gangplane.schedulers.kai.session import KaiConfig
from schedulers.kube_builders import node, pod, snapshot

nodes_st = st.lists(st.tuples(st.integers(1, 8), st.integers(0, 8)), min_size=1, max_size=5)
members_st = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3)), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(nodes=nodes_st, members=members_st, bound=st.lists(st.tuples(st.integers(0, 4), st.integers(1, 6))),
       minimum=st.integers(0, 6))  # fmt: skip
def test_the_bound_never_turns_away_a_gang_that_fits(
    nodes: list[tuple[int, int]], members: list[tuple[int, int]], bound: list[tuple[int, int]], minimum: int
) -> None:
    node_dicts = [node(f"n{i}", cpu=str(cpu), gpu=gpu) for i, (cpu, gpu) in enumerate(nodes)]
    held = [
        pod(f"b{i}", cpu=None, gpu=gpu, node_name=f"n{at % len(nodes)}") for i, (at, gpu) in enumerate(bound)
    ]  # may over-commit a node: its negative room must not hide another node's
    gang = [pod(f"m{i}", cpu=str(cpu), gpu=gpu) for i, (cpu, gpu) in enumerate(members)]
    snap, pods = snapshot(node_dicts, held, gang)
    minimum = min(minimum, len(pods))
    placed = place_gang(snap, pods, min_member=minimum, explain=False)
    if placed.ok:
        for binding in placed.bindings:
            snap.forget(binding.pod_key)
        assert placement.may_fit(snap, pods, minimum)


def test_a_gang_larger_than_the_free_room_is_turned_away_without_a_search(monkeypatch: Any) -> None:
    snap, pods = snapshot([node("n0", gpu=8), node("n1", gpu=8)], [], [pod(f"m{i}", gpu=8) for i in range(3)])
    assert not placement.may_fit(snap, pods, 3)
    assert placement.may_fit(snap, pods, 2)  # two of the three fit: the smallest two are counted


@pytest.mark.parametrize("explain", [False, True])
def test_allocate_searches_a_gang_beyond_the_room_only_for_its_message(
    explain: bool, monkeypatch: Any
) -> None:
    world = World(config=KaiConfig(explain=explain), nodes=[kai_node("n0"), kai_node("n1")])
    world.add_queue("default-queue", gpu_quota=-1)
    world.add_job("big", 3, gpu=8)
    searched: list[int] = []

    def counted(*args: Any, **kw: Any) -> Any:
        searched.append(len(args[1]))
        return place_gang(*args, **kw)

    monkeypatch.setattr(placement, "place_gang", counted)
    world.cycle()
    assert world.bound("big") == []
    assert searched == ([3] if explain else [])  # explained: the search says which pod found no node
