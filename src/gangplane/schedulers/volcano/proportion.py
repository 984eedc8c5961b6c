"""Volcano's queue entitlements: the ``proportion`` plugin's weighted water-filling of ``deserved`` and the
``capacity`` plugin's per-resource deserved with parent queues (volcano.md §8).

Pure functions over ``QueuePolicy`` values and resource vectors; the per-cycle mutable accounting that uses
them lives in ``book.py``. Upstream: ``pkg/scheduler/plugins/proportion/proportion.go`` (``OnSessionOpen``
deserved loop) and ``pkg/scheduler/plugins/capacity/capacity.go`` (``buildQueueAttrs`` /
``buildHierarchicalQueueAttrs``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from gangplane.schedulers.volcano import vec
from gangplane.schedulers.volcano.vec import Vec

ROOT = "root"
_EPS = vec.EPS


class QueueState(StrEnum):
    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"
    UNKNOWN = "Unknown"


@dataclass(frozen=True, slots=True)
class QueuePolicy:
    """A Queue's spec as the share plugins read it; vectors are in the cycle's dimension order.

    ``capability`` is ``inf`` where unbounded; ``deserved`` is ``None`` for a best-effort queue (capacity).
    ``order`` is the (creationTimestamp, uid) tie-breaker of the queue order.
    """

    name: str
    capability: Vec
    guarantee: Vec
    weight: int = 1
    deserved: Vec | None = None
    reclaimable: bool = True
    priority: int = 0
    state: QueueState = QueueState.OPEN
    parent: str | None = None
    order: tuple[str, str] = ("", "")
    annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_open(self) -> bool:
        return self.state == QueueState.OPEN


def real_capabilities(total: Vec, policies: Sequence[QueuePolicy]) -> dict[str, Vec]:
    """``(total − Σ guarantee) + guarantee(q)``, then capped by ``capability(q)`` (flat queues)."""
    guaranteed = sum((p.guarantee for p in policies), start=vec.zeros(len(total)))
    return {p.name: np.minimum(total - guaranteed + p.guarantee, p.capability) for p in policies}


Rounds = list[tuple[list[float], list[float]]]  # per round a queue took part in: its reach, its new deserved


def proportion_deserved(
    total: Vec,
    policies: Sequence[QueuePolicy],
    requests: Mapping[str, Vec],
    rounds: dict[str, Rounds] | None = None,
) -> dict[str, Vec]:
    """Water-fill ``total`` over the queues by weight, each capped by its real capability and its request
    and raised to its guarantee; a queue leaves the loop once its request is met or it stops moving.

    On Python floats, one dimension at a time: a handful of dimensions and queues, where numpy's per-call
    cost was most of a pass. Each value goes through the same IEEE operations in the same order as the
    vector form, so the result is the same to the bit. A dimension no queue asks for or is guaranteed
    stays 0 in every round and never stops the loop, so only the others are filled (``active``).
    ``rounds``, if given, receives per queue what each round computed on those dimensions before its
    request capped it and after (``same_rounds`` reads it)."""
    zero = [0.0] * len(total)
    asked = {p.name: requests[p.name].tolist() if p.name in requests else zero for p in policies}
    guarantees = {p.name: p.guarantee.tolist() for p in policies}
    on = active([*asked.values(), *guarantees.values()], len(total))
    return fill_deserved(total, policies, (asked, guarantees, on), real_capabilities(total, policies), rounds)


def fill_deserved(
    total: Vec,
    policies: Sequence[QueuePolicy],
    lists: tuple[Mapping[str, list[float]], Mapping[str, list[float]], list[int]],
    capabilities: Mapping[str, Vec],
    rounds: dict[str, Rounds] | None = None,
) -> dict[str, Vec]:
    """``proportion_deserved`` from the requests and guarantees as lists, the ``active`` dimensions of those
    lists, and ``real_capabilities``."""
    asked, guarantees, on = lists
    caps = {name: pick(cap.tolist(), on) for name, cap in capabilities.items()}
    left = total.tolist()
    filled = water_fill(
        policies,
        {n: pick(v, on) for n, v in asked.items()},
        (caps, {n: pick(g, on) for n, g in guarantees.items()}),
        (pick(left, on), idle_beyond(left, on)),
        rounds,
    )
    return spread(filled, on, len(total))


def idle_beyond(left: list[float], on: list[int]) -> bool:
    """Whether a dimension outside ``on`` has more than nothing to give (the loop never takes from it)."""
    return any(left[d] > _EPS for d in range(len(left)) if d not in on)


def spread(filled: Mapping[str, list[float]], on: list[int], dims: int) -> dict[str, Vec]:
    """The filled values on the ``on`` dimensions as full vectors, +0.0 elsewhere: the rows of one array
    (never changed in place: a queue's deserved is replaced, not updated)."""
    names = list(filled)
    rows = np.zeros((len(names), dims), dtype=np.float64)
    for at, d in enumerate(on):  # a column at a time: plain slices, not a fancy index
        rows[:, d] = [filled[name][at] for name in names]
    return dict(zip(names, rows, strict=True))


def active(vectors: Sequence[Sequence[float]], dims: int) -> list[int]:
    """The dimensions where some vector (the queues' requests and guarantees) is not +0.0 (a -0.0 request
    would cap to -0.0: kept active). On lists: called every pass, where stacking arrays cost more."""
    return [d for d in range(dims) if any(v[d] != 0.0 or math.copysign(1.0, v[d]) < 0 for v in vectors)]


def pick(values: list[float], on: list[int]) -> list[float]:
    return [values[d] for d in on]


def water_fill(
    policies: Sequence[QueuePolicy],
    asked: Mapping[str, list[float]],
    bounds: tuple[Mapping[str, list[float]], Mapping[str, list[float]]],
    start: tuple[list[float], bool],
    rounds: dict[str, Rounds] | None,
) -> dict[str, list[float]]:
    """The water-filling loop over the active dimensions (``asked``, ``bounds``: capabilities and
    guarantees, and ``start``: what is left to give, all on those dimensions only); ``idle``: some
    inactive dimension keeps more than nothing to give, so the loop never stops for want of anything left.
    The queues still short of their request are kept in a list (in policy order, as the loop visits them),
    so a round costs only those."""
    if len(start[0]) == 1:
        return _water_fill_one(policies, asked, bounds, start, rounds)
    caps, guarantees = bounds
    remaining, idle = start
    dims = range(len(remaining))
    deserved = {p.name: [0.0] * len(dims) for p in policies}
    live = [(p.name, p.weight, asked[p.name], caps[p.name], guarantees[p.name]) for p in policies]
    for _ in range(len(policies) + 64):  # converges in ≤ len(policies) rounds in practice
        weight = sum(entry[1] for entry in live)
        if weight == 0:
            break
        increased, decreased = [0.0] * len(dims), [0.0] * len(dims)
        still = []
        for entry in live:
            name, share, request, cap, guarantee = entry
            old = deserved[name]
            reach = [min(o + r * share / weight, c) for o, r, c in zip(old, remaining, cap, strict=True)]
            new = [max(min(x, q), g) for x, q, g in zip(reach, request, guarantee, strict=True)]
            deserved[name] = new
            if rounds is not None:
                rounds.setdefault(name, []).append((reach, new))
            if not (_le(request, new) or (_le(new, old) and _le(old, new))):
                still.append(entry)
            for d in dims:
                increased[d] += max(new[d] - old[d], 0.0)
                decreased[d] += max(old[d] - new[d], 0.0)
        live = still
        before = remaining
        remaining = [max(r - i + c, 0.0) for r, i, c in zip(remaining, increased, decreased, strict=True)]
        empty = not idle and all(r <= _EPS for r in remaining)
        if empty or (_le(remaining, before) and _le(before, remaining)):
            break
    return deserved


def _water_fill_one(
    policies: Sequence[QueuePolicy],
    asked: Mapping[str, list[float]],
    bounds: tuple[Mapping[str, list[float]], Mapping[str, list[float]]],
    start: tuple[list[float], bool],
    rounds: dict[str, Rounds] | None,
) -> dict[str, list[float]]:
    """``water_fill`` over one active dimension (every queue asks for one resource alone, as on a GPU
    trace) on plain floats: the same operations on each value in the same order (``_le`` written out),
    without a list per value. Every queue takes part in the first round, so each has its ``rounds``."""
    caps, guarantees = bounds
    (remaining,), idle = start
    deserved = dict.fromkeys((p.name for p in policies), 0.0)
    live = [
        (p.name, p.weight, asked[p.name][0], caps[p.name][0], guarantees[p.name][0],
         None if rounds is None else rounds.setdefault(p.name, []))
        for p in policies
    ]  # fmt: skip
    weight = sum(p.weight for p in policies)
    for _ in range(len(policies) + 64):
        if weight == 0:
            break
        increased = decreased = 0.0
        still, still_weight = [], 0
        for entry in live:
            name, share, request, cap, guarantee, track = entry
            old = deserved[name]
            reach = min(old + remaining * share / weight, cap)
            new = deserved[name] = max(min(reach, request), guarantee)
            if track is not None:
                track.append(([reach], [new]))
            top = new + _EPS * max(1.0, abs(new))
            if not (request <= top or (new <= old + _EPS * max(1.0, abs(old)) and old <= top)):
                still.append(entry)
                still_weight += share
            increased += max(new - old, 0.0)
            decreased += max(old - new, 0.0)
        live, weight = still, still_weight
        before = remaining
        remaining = max(remaining - increased + decreased, 0.0)
        empty = not idle and remaining <= _EPS
        if empty or (
            remaining <= before + _EPS * max(1.0, abs(before))
            and before <= remaining + _EPS * max(1.0, abs(remaining))
        ):
            break
    return {name: [value] for name, value in deserved.items()}


def same_rounds(rounds: Rounds, old: list[float], new: list[float]) -> bool:
    """Whether a queue's request ``new`` leaves every round it took part in as request ``old`` did: each
    round's request cap gives the same values and the same "request met" answer. Then the whole filling is
    the same (no other queue reads this request), so it need not be redone."""
    if len(old) == 1 and len(new) == 1:
        return _same_rounds_one(rounds, old[0], new[0])
    for reach, got in rounds:
        if _le(old, got) != _le(new, got):
            return False
        if any(min(x, o) != min(x, n) for x, o, n in zip(reach, old, new, strict=True)):
            return False
    return True


def _same_rounds_one(rounds: Rounds, old: float, new: float) -> bool:
    """``same_rounds`` over one active dimension on plain floats (the same comparisons, ``_le`` written out):
    asked every pass of a GPU trace for the queue whose request moved."""
    for (reach,), (got,) in rounds:
        top = got + _EPS * max(1.0, abs(got))
        if (old <= top) != (new <= top) or min(reach, old) != min(reach, new):
            return False
    return True


Span = tuple[float, bool, float | None, float | None, float | None]  # old, exact, above, from, up to


def rounds_span(rounds: Rounds, old: float) -> Span | None:
    """The one-dimension requests ``new`` for which ``_same_rounds_one(rounds, old, new)`` holds, as bounds
    taken once for the rounds: ``new == old`` (exact: some round left ``old`` under its reach, so the cap
    gave ``old`` itself), else ``new`` above each top ``old`` is above, from each reach ``old`` is at or
    above, up to each top ``old`` is under. ``None`` when a value is NaN (then the loop answers). The same
    span stands for any ``new`` inside it (it compares as ``old`` in every round)."""
    exact, above, start, upto = False, None, None, None
    for (reach,), (got,) in rounds:
        top = got + _EPS * max(1.0, abs(got))
        if math.isnan(top) or math.isnan(reach) or math.isnan(old):
            return None
        if old <= top:
            upto = top if upto is None or top < upto else upto
        else:
            above = top if above is None or top > above else above
        if old < reach:
            exact = True
        else:
            start = reach if start is None or reach > start else start
    return (old, exact, above, start, upto)


def in_span(span: Span, new: float) -> bool | None:
    """``_same_rounds_one`` for ``new`` from its span (``None`` for a NaN ``new``: the loop answers)."""
    if math.isnan(new):
        return None
    old, exact, above, start, upto = span
    if exact:
        return new == old
    return (
        (above is None or new > above) and (start is None or new >= start) and (upto is None or new <= upto)
    )


def _le(a: list[float], b: list[float]) -> bool:
    """``vec.le`` on lists (a loop: called a few times per queue and round of every filling)."""
    for x, y in zip(a, b, strict=True):  # noqa: SIM110 (a loop: no generator per call)
        if not x <= y + _EPS * max(1.0, abs(y)):
            return False
    return True


# ---------------------------------------------------------------- capacity


def capacity_deserved(policy: QueuePolicy, real_capability: Vec) -> Vec:
    """``max(min(spec.deserved, realCapability), guarantee)``; best-effort (no deserved) gets the guarantee."""
    entitled = policy.deserved if policy.deserved is not None else vec.zeros(len(real_capability))
    return np.maximum(np.minimum(entitled, real_capability), policy.guarantee)


def hierarchy(policies: Sequence[QueuePolicy]) -> dict[str, list[str]]:
    """Children by parent name; a queue without ``parent`` hangs under ``root``. Raises ``ValueError`` for an
    unknown parent or a cycle (upstream then refuses to schedule the whole cycle)."""
    names = {p.name for p in policies} | {ROOT}
    children: dict[str, list[str]] = {name: [] for name in names}
    for policy in policies:
        if policy.name == ROOT:
            continue
        parent = policy.parent or ROOT
        if parent not in names:
            raise ValueError(f"queue {policy.name!r} names unknown parent queue {parent!r}")
        children[parent].append(policy.name)
    _check_acyclic(children, len(names))
    return children


def _check_acyclic(children: Mapping[str, list[str]], count: int) -> None:
    seen: set[str] = set()
    stack = [ROOT]
    while stack:
        name = stack.pop()
        seen.add(name)
        stack.extend(children[name])
    if len(seen) != count:
        cyclic = sorted(set(children) - seen)
        raise ValueError(f"queues {', '.join(cyclic)} form a parent cycle")


def hierarchical_capabilities(total: Vec, policies: Sequence[QueuePolicy]) -> dict[str, Vec]:
    """Top-down: a child's real capability is ``(parent's − Σ sibling guarantees) + own guarantee``, capped
    by its capability, where dimensions it leaves unbounded inherit the parent's."""
    by_name = {p.name: p for p in policies}
    children = hierarchy(policies)
    result = {ROOT: total.copy()}
    caps = {ROOT: by_name[ROOT].capability if ROOT in by_name else vec.unbounded(len(total))}
    queue = [ROOT]
    while queue:
        parent = queue.pop(0)
        kids = [by_name[name] for name in sorted(children[parent])]
        guaranteed = sum((k.guarantee for k in kids), start=vec.zeros(len(total)))
        for kid in kids:
            caps[kid.name] = np.where(np.isinf(kid.capability), caps[parent], kid.capability)
            reach = result[parent] - guaranteed + kid.guarantee
            result[kid.name] = np.minimum(reach, caps[kid.name])
            queue.append(kid.name)
    return result
