"""Invariants of the scheduling core under random clusters and random operation sequences."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane.schedulers.core import Strategy, find_victims, place_gang
from schedulers.kube_builders import node, pod, snapshot

node_shapes = st.tuples(st.integers(1, 16), st.sampled_from([0, 1, 2, 4, 8]), st.integers(2, 12))
pod_shapes = st.tuples(st.sampled_from(["250m", "1", "2", "4"]), st.sampled_from([0, 0, 1, 2]))


def _cluster(shapes: list) -> list[dict]:
    return [node(f"n{i}", cpu=str(c), gpu=g, pods=p) for i, (c, g, p) in enumerate(shapes)]


@st.composite
def gangs(draw, max_gangs: int = 6) -> list[list[dict]]:
    out = []
    for g in range(draw(st.integers(1, max_gangs))):
        cpu, gpu = draw(pod_shapes)
        size = draw(st.integers(1, 6))
        out.append([pod(f"g{g}-{i}", cpu=cpu, gpu=gpu, group=f"g{g}", priority=g % 3) for i in range(size)])
    return out


def _state(snap) -> tuple:
    return snap.requested.tobytes(), sorted((p.key, snap.location(p.key)) for p in snap.pods())


def _not_overcommitted(snap) -> bool:
    return bool((snap.requested <= snap.allocatable).all())


@settings(max_examples=80, deadline=None)
@given(
    shapes=st.lists(node_shapes, min_size=1, max_size=6),
    gang_specs=gangs(),
    ops=st.lists(
        st.tuples(st.sampled_from(["place", "checkpoint", "rollback"]), st.integers(0, 99)), max_size=25
    ),
    strategy=st.sampled_from(list(Strategy)),
)
def test_random_sequences_keep_invariants(shapes, gang_specs, ops, strategy) -> None:
    snap, pending = snapshot(_cluster(shapes), pending=[p for g in gang_specs for p in g])
    by_gang: dict[str, list] = {}
    for info in pending:
        by_gang.setdefault(info.group, []).append(info)
    tokens: list[tuple[int, tuple]] = []
    for op, arg in ops:
        if op == "place":
            members = [p for p in by_gang[f"ml/g{arg % len(by_gang)}"] if snap.location(p.key) is None]
            before = _state(snap)
            need = max(1, (arg % 7) or len(members))
            placement = place_gang(snap, members, min_member=need, strategy=strategy)
            if placement.ok:  # all or nothing: at least min_member assumed, exactly the bound ones
                assert len(placement.bindings) >= need
                assert all(snap.location(b.pod_key) is not None for b in placement.bindings)
            else:
                assert _state(snap) == before
        elif op == "checkpoint":
            tokens.append((snap.checkpoint(), _state(snap)))
        elif tokens:
            token, state = tokens.pop(arg % len(tokens))
            tokens = [t for t in tokens if t[0] <= token]
            snap.rollback(token)
            assert _state(snap) == state  # rollback restores exactly
        assert _not_overcommitted(snap)


@settings(max_examples=40, deadline=None)
@given(shapes=st.lists(node_shapes, min_size=1, max_size=6), gang_specs=gangs(4))
def test_identical_inputs_give_identical_bindings(shapes, gang_specs) -> None:
    runs = []
    for _ in range(2):
        snap, pending = snapshot(_cluster(shapes), pending=[p for g in gang_specs for p in g])
        runs.append(
            [
                place_gang(snap, [p for p in pending if p.group == f"ml/g{i}"], min_member=1).bindings
                for i in range(len(gang_specs))
            ]
        )
    assert runs[0] == runs[1]


@settings(max_examples=40, deadline=None)
@given(shapes=st.lists(node_shapes, min_size=1, max_size=5), bound_specs=gangs(4), preemptor=pod_shapes)
def test_victims_make_room_and_leave_snapshot_unchanged(shapes, bound_specs, preemptor) -> None:
    nodes = _cluster(shapes)
    snap, pending = snapshot(nodes, pending=[p for g in bound_specs for p in g])
    for i in range(len(bound_specs)):
        place_gang(snap, [p for p in pending if p.group == f"ml/g{i}"], min_member=1)
    _, [high] = snapshot(nodes, pending=[pod("high", cpu=preemptor[0], gpu=preemptor[1], priority=10)])
    before = _state(snap)
    victims = find_victims(snap, high, lambda v: v.priority < 10)
    assert _state(snap) == before
    if victims is None:
        return
    for victim in victims:
        snap.forget(victim.key)
    assert place_gang(snap, [high], min_member=1).ok
    assert np.all(snap.requested <= snap.allocatable)
