"""All-or-nothing gang placement on a snapshot, in one pass and without per-node Python loops.

Members with the same requests and constraints form one *shape*. For a shape, the number of members each
node can still take is ``min over requested resources of free // request`` — one integer division over the
``[nodes, resources]`` free matrix — so a gang costs a handful of array operations regardless of node count.
Shapes are placed largest first; nodes are taken in score order (bin-pack fills a node before the next,
spread deals one member per node per round, which is what repeated single-pod MostAllocated / LeastAllocated
placement converges to). Either at least ``min_member`` members end up assumed, or the snapshot is rolled back
to exactly what it was and the placement says why, with numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gangplane.schedulers.core.fit import Mask, explain, static_mask
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.resources import PODS, Vector
from gangplane.schedulers.core.scoring import Rows, Scores, Strategy
from gangplane.schedulers.core.snapshot import Snapshot

Counts = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Binding:
    """Put pod ``pod_key`` (``"<namespace>/<name>"``) on node ``node``."""

    pod_key: str
    node: str


@dataclass(frozen=True, slots=True)
class GangPlacement:
    """The outcome of ``place_gang``. On success ``bindings`` holds ≥ ``min_member`` members (assumed in the
    snapshot) and ``unplaced`` the members left over; on failure nothing was assumed, ``bindings`` is empty and
    ``message`` says what was needed and the largest placement found (``best``)."""

    ok: bool
    bindings: tuple[Binding, ...]
    unplaced: tuple[str, ...]
    best: int
    message: str = ""


def _shape_key(pod: PodInfo) -> tuple[bytes, tuple[object, ...]]:
    return (pod.requests.tobytes(), pod.constraints)


def shapes(snapshot: Snapshot, pods: Sequence[PodInfo]) -> list[list[PodInfo]]:
    """Members grouped by identical requests and constraints; the largest shape (by summed share of the
    cluster's allocatable) first, ties in first-appearance order."""
    groups: dict[tuple[bytes, tuple[object, ...]], list[PodInfo]] = {}
    for pod in pods:
        groups.setdefault(_shape_key(pod), []).append(pod)
    if len(groups) < 2:  # one shape (most gangs): nothing to order
        return list(groups.values())
    if "capacity" not in snapshot.cache:
        snapshot.cache["capacity"] = np.maximum(snapshot.allocatable.sum(axis=0), 1).astype(np.float64)
    capacity = snapshot.cache["capacity"]
    ordered = sorted(groups.values(), key=lambda g: -float((g[0].requests / capacity).sum()))
    return ordered


def member_capacity(snapshot: Snapshot, requests: Vector, rows: Rows) -> Counts:
    """How many more pods of ``requests`` each node in ``rows`` can take (≥ 0)."""
    cols = np.flatnonzero(requests)
    free = snapshot.allocatable[np.ix_(rows, cols)] - snapshot.requested[np.ix_(rows, cols)]
    per_node: Counts = (free // requests[cols]).min(axis=1, initial=np.iinfo(np.int64).max)
    return np.maximum(per_node, 0)


def _top(scores: Scores, wanted: int) -> Rows:
    """Positions of the ``wanted`` best scores, best first, ties to the lower position; partial sort only."""
    if scores.size > wanted:
        if (levels := _top_levels(scores, wanted)) is not None:
            return levels
        threshold = np.partition(scores, scores.size - wanted)[scores.size - wanted]
        above = np.flatnonzero(scores > threshold)
        tied = np.flatnonzero(scores == threshold)[: wanted - above.size]
        picked: Rows = np.concatenate([above, tied])
    else:
        picked = np.arange(scores.size)
    order: Rows = picked[np.lexsort((picked, -scores[picked]))]
    return order


_LEVELS = 8  # distinct best scores ``_top_levels`` walks before it leaves the answer to the partial sort


def _top_levels(scores: Scores, wanted: int) -> Rows | None:
    """``_top``'s answer read off the few best distinct scores, each level's positions in position order (so
    best first, ties to the lower position, as the partial sort and ``lexsort`` give them); ``None`` when
    more than ``_LEVELS`` levels would be needed or a score is NaN. Scores tie a lot (nodes filled alike),
    where ``np.partition`` is slowest: a gang's best nodes are most often found in a level or two."""
    parts: list[Rows] = []
    rest = scores
    for _ in range(_LEVELS):
        best = rest.max()
        if best != best:  # NaN: the partial sort orders it
            return None
        tied = np.flatnonzero(scores == best)[:wanted]
        parts.append(tied)
        wanted -= tied.size
        if wanted == 0:
            return parts[0] if len(parts) == 1 else np.concatenate(parts)
        rest = rest[rest < best]
    return None


def _binpack_take(capacity: Counts, wanted: int) -> Counts:
    before = np.cumsum(capacity) - capacity
    take: Counts = np.clip(wanted - before, 0, capacity)
    return take


def _spread_take(capacity: Counts, wanted: int) -> Counts:
    rounds = 1
    while np.minimum(capacity, rounds).sum() < wanted and rounds < int(capacity.max()):
        rounds += 1
    full = np.minimum(capacity, rounds - 1)
    extra = np.minimum(capacity, rounds) - full
    room = wanted - int(full.sum())
    take: Counts = full + extra * (np.cumsum(extra) <= room)
    return take


@dataclass(frozen=True, slots=True)
class _Plan:
    """What ``choose_nodes`` reads of one request row besides usage, all static for the snapshot, column by
    column: the requested columns, each one's allocatable over the nodes as floats, the request as floats,
    and for the scored columns (every requested one but ``pods``) their positions among ``cols`` with the
    allocatable's reciprocal over the nodes (``inf`` where zero)."""

    cols: tuple[int, ...]
    alloc: tuple[Floats, ...]
    request: Floats
    scored: tuple[tuple[int, Floats], ...]
    width: int  # how many columns are scored (at least 1: the mean's divisor)


def _plan(snapshot: Snapshot, requests: Vector) -> _Plan:
    """``_Plan`` of ``requests``, cached on the snapshot by the row's bytes (gangs repeat few shapes)."""
    key = ("plan", requests.tobytes())
    found: _Plan | None = snapshot.cache.get(key)
    if found is None:
        cols = np.flatnonzero(requests)
        alloc = snapshot.allocatable[:, cols].astype(np.float64).T
        scored = np.flatnonzero(cols != snapshot.index.position(PODS))
        with np.errstate(divide="ignore"):
            inverse = np.where(alloc > 0, 1.0 / alloc, np.inf)
        request = requests[cols].astype(np.float64)
        found = _Plan(
            tuple(cols.tolist()),
            tuple(np.ascontiguousarray(row) for row in alloc),
            request,
            tuple((at, np.ascontiguousarray(inverse[at])) for at in scored.tolist()),
            max(int(scored.size), 1),
        )
        snapshot.cache[key] = found
    return found


def _capacity(snapshot: Snapshot, plan: _Plan) -> Floats:
    """Per node, how many more members fit: the floor of the least ``free / request`` over the requested
    columns, taken a column at a time (each element as the whole-matrix form computes it, and a minimum is
    exact in any order), which spares the copy of the columns and numpy's slow reduction along a short axis."""
    least: Floats | None = None
    for at, col in enumerate(plan.cols):
        fits = (plan.alloc[at] - snapshot.requested[:, col]) / plan.request[at]
        least = fits if least is None else np.minimum(least, fits, out=least)
    if least is None:  # nothing requested: numpy refuses the minimum of no columns, as it always did
        least = np.empty((len(snapshot), 0)).min(axis=1)
    capacity: Floats = np.floor(least)
    return capacity


_SEQUENTIAL_SUM = 8  # numpy adds a row of fewer columns left to right, and from eight on pairwise


def _utilisation(snapshot: Snapshot, plan: _Plan, rows: Rows) -> Floats:
    """Mean over the scored columns of ``min((used + request) / allocatable, 1)`` on ``rows``, the columns
    added left to right, as numpy sums a row of fewer than eight (``sum(axis=1)``): bit for bit the same."""
    if len(plan.scored) >= _SEQUENTIAL_SUM:  # numpy sums as many columns pairwise: let it do so, as it did
        fractions = [
            np.minimum((snapshot.requested[rows, plan.cols[at]] + plan.request[at]) * inverse[rows], 1.0)
            for at, inverse in plan.scored
        ]
        matrix_form: Floats = np.stack(fractions, axis=1).sum(axis=1) / plan.width
        return matrix_form
    total: Floats | None = None
    for at, inverse in plan.scored:
        part = np.minimum((snapshot.requested[rows, plan.cols[at]] + plan.request[at]) * inverse[rows], 1.0)
        total = part if total is None else np.add(total, part, out=total)
    if total is None:
        total = np.zeros(rows.size)
    utilisation: Floats = total / plan.width
    return utilisation


def choose_nodes(
    snapshot: Snapshot, pod: PodInfo, wanted: int, strategy: Strategy, allowed: Mask | None = None
) -> Rows:
    """Node rows for up to ``wanted`` members shaped like ``pod``, one entry per member, in placement order.

    Float arithmetic is exact here (amounts stay far below 2**53) and much faster than int64 division. Only
    the ``wanted`` best-scored nodes with room are needed (each takes at least one member), so this partially
    sorts instead of sorting every node; a single member takes the best node alone (the first of equals)."""
    mask = static_mask(snapshot, pod) if allowed is None else static_mask(snapshot, pod) & allowed
    plan = _plan(snapshot, pod.requests)
    capacity = _capacity(snapshot, plan)
    rows = np.flatnonzero((capacity >= 1) & mask)
    if rows.size == 0 or wanted <= 0:
        return rows[:0]
    utilisation = _utilisation(snapshot, plan, rows)
    if wanted == 1:  # argmax/argmin take the first of equals: the lower row, as ``_top`` does
        at = int(utilisation.argmax() if strategy is Strategy.BINPACK else utilisation.argmin())
        return rows[at : at + 1]
    best = _top(utilisation if strategy is Strategy.BINPACK else -utilisation, wanted)
    rows = rows[best]
    counts = capacity[rows].astype(np.int64)
    take = _binpack_take(counts, wanted) if strategy is Strategy.BINPACK else _spread_take(counts, wanted)
    chosen: Rows = np.repeat(rows, take)
    return chosen


def shape_text(snapshot: Snapshot, requests: Vector) -> str:
    """``cpu=4, nvidia.com/gpu=1`` (the non-zero requests, ``pods`` left out)."""
    return (
        ", ".join(f"{name}={value}" for name, value in snapshot.index.describe(requests).items()) or "nothing"
    )


def _needs(snapshot: Snapshot, groups: list[list[PodInfo]], min_member: int) -> str:
    size = sum(len(g) for g in groups)
    count = f"{min_member} pods" if min_member == size else f"{min_member} of {size} pods"
    if len(groups) == 1:
        return f"{count} ({shape_text(snapshot, groups[0][0].requests)} each)"
    return f"{count} (" + "; ".join(f"{len(g)} × {shape_text(snapshot, g[0].requests)}" for g in groups) + ")"


def _failure(
    snapshot: Snapshot, groups: list[list[PodInfo]], short: PodInfo, best: int, min_member: int
) -> str:
    counts = explain(snapshot, short)
    return (
        f"gang needs {_needs(snapshot, groups, min_member)}; largest placement found {best}; "
        f"then pod {short.key}: {counts.message()}"
    )


def place_gang(
    snapshot: Snapshot,
    pods: Sequence[PodInfo],
    *,
    min_member: int,
    strategy: Strategy = Strategy.BINPACK,
    allowed: Mask | None = None,
    explain: bool = True,
) -> GangPlacement:
    """Assume as many of ``pods`` as fit (up to all) if that is at least ``min_member``; else change nothing.

    ``allowed`` restricts the nodes (e.g. one topology domain or node pool). Pods already counted in the
    snapshot must not be passed. Deterministic: equal inputs give equal bindings. ``explain=False`` skips
    building the failure message (a per-node filter count, the costly part of a failed try) for callers
    that only need the outcome, such as victim searches and simulators.
    """
    token = snapshot.checkpoint()
    groups = shapes(snapshot, pods)
    bindings: list[Binding] = []
    unplaced: list[str] = []
    short: PodInfo | None = None
    for group in groups:
        rows = choose_nodes(snapshot, group[0], len(group), strategy, allowed)
        for pod, row in zip(group, rows.tolist(), strict=False):
            snapshot.assume(pod, row)
            bindings.append(Binding(pod.key, snapshot.nodes[row].name))
        unplaced.extend(pod.key for pod in group[len(rows) :])
        short = short or (group[len(rows)] if len(rows) < len(group) else None)
    if len(bindings) >= min_member and bindings:
        return GangPlacement(True, tuple(bindings), tuple(unplaced), len(bindings))
    if not explain:
        message = ""
    elif short is None:
        message = f"gang needs {min_member} pods but has {len(pods)}"
    else:  # explained with the placeable members still assumed: why the next one found no node
        message = _failure(snapshot, groups, short, len(bindings), min_member)
    snapshot.rollback(token)
    return GangPlacement(False, (), tuple(pod.key for pod in pods), len(bindings), message)


__all__ = [
    "Binding",
    "GangPlacement",
    "choose_nodes",
    "member_capacity",
    "place_gang",
    "shape_text",
    "shapes",
]
