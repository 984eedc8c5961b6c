"""``choose_nodes`` against a plain per-node reference: each node's room is ``min(free // request)`` over the
requested columns, its score the mean of ``min((used + request) / allocatable, 1)`` over the requested
columns but ``pods``; bin-pack fills the best-scored nodes in turn, spread deals one member per node per
round; equal scores go to the lower row. The fast paths (a cached plan per request row, a single member
taking the best node alone) must give the same rows, in the same order, on random clusters and usage."""

from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane.schedulers.core import Strategy
from gangplane.schedulers.core.gang import choose_nodes
from gangplane.schedulers.core.resources import PODS
from schedulers.kube_builders import node, pod, snapshot

node_shapes = st.tuples(st.integers(0, 16), st.sampled_from([0, 1, 2, 4, 8]), st.integers(0, 12))
pod_shapes = st.tuples(st.sampled_from(["250m", "1", "2", "4"]), st.sampled_from([0, 1, 2]))


def _room(snap, row: int, request) -> int:
    counts = [
        (int(snap.allocatable[row, c]) - int(snap.requested[row, c])) // int(request[c])
        for c in range(len(request))
        if request[c]
    ]
    return max(min(counts), 0)


def _score(snap, row: int, request) -> float:
    """In floats as the documented formula reads, term by term (a node with room has allocatable > 0)."""
    cols = [c for c in range(len(request)) if request[c] and c != snap.index.position(PODS)]
    total = 0.0
    for c in cols:
        total += min(
            (int(snap.requested[row, c]) + int(request[c])) * (1.0 / int(snap.allocatable[row, c])), 1.0
        )
    return total / max(len(cols), 1)


def reference(snap, info, wanted: int, strategy: Strategy) -> list[int]:
    room = {r: _room(snap, r, info.requests) for r in range(len(snap)) if _room(snap, r, info.requests) >= 1}
    sign = -1 if strategy is Strategy.BINPACK else 1
    order = sorted(room, key=lambda r: (sign * _score(snap, r, info.requests), r))[: max(wanted, 0)]
    if strategy is Strategy.BINPACK:
        taken = []
        for row in order:
            taken += [row] * min(room[row], wanted - len(taken))
        return taken
    per_row = dict.fromkeys(order, 0)
    while sum(per_row.values()) < wanted and any(per_row[r] < room[r] for r in order):
        for row in order:
            if sum(per_row.values()) < wanted and per_row[row] < room[row]:
                per_row[row] += 1
    return [row for row in order for _ in range(per_row[row])]


@settings(max_examples=300, deadline=None)
@given(
    shapes=st.lists(node_shapes, min_size=1, max_size=8),
    used=st.lists(st.tuples(st.integers(0, 7), pod_shapes), max_size=12),
    shape=pod_shapes,
    wanted=st.one_of(st.just(1), st.integers(0, 9)),
    strategy=st.sampled_from(list(Strategy)),
)
def test_choose_nodes_matches_the_plain_rule(shapes, used, shape, wanted, strategy) -> None:
    nodes = [node(f"n{i}", cpu=str(c), gpu=g, pods=p) for i, (c, g, p) in enumerate(shapes)]
    bound = [
        pod(f"b{i}", cpu=cpu, gpu=gpu, node_name=f"n{at % len(nodes)}")
        for i, (at, (cpu, gpu)) in enumerate(used)
    ]
    snap, pending = snapshot(nodes, bound=bound, pending=[pod("w", cpu=shape[0], gpu=shape[1])])
    for _ in range(2):  # the second call reads the cached plan
        chosen = choose_nodes(snap, pending[0], wanted, strategy).tolist()
        assert chosen == reference(snap, pending[0], wanted, strategy)
