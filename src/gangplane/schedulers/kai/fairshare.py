"""KAI's hierarchical fair share: each level's amount of one resource divided among sibling queues — quota
first, then the surplus by over-quota weight within priority buckets, capped by limit (kai.md §7).

Pure, one resource at a time, in KAI units (GPU devices, CPU millicores, memory MB), so the whole-unit
rounding of the over-quota pass means what it means upstream. Upstream:
``pkg/scheduler/plugins/proportion/resource_division/resource_division.go``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gangplane.schedulers.kai.model import RESOURCES, KaiQueue, Res

UNLIMITED = -1.0
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class ShareInput:
    """One queue's numbers for one resource. ``deserved``/``limit`` of ``-1`` mean unlimited; ``request`` is
    the pending plus running demand of the queue's whole subtree; ``order`` breaks ties, older first."""

    name: str
    deserved: float
    limit: float
    weight: float
    priority: int
    request: float
    order: tuple[str, str] = ("", "")


def max_allowed(queue: ShareInput) -> float:
    return math.inf if queue.limit == UNLIMITED else max(queue.limit, 0.0)


def requestable(queue: ShareInput) -> float:
    return min(queue.request, max_allowed(queue))


def divide(
    total: float,
    queues: Sequence[ShareInput],
    k_value: float = 1.0,
    usage: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """The fair share of each sibling queue out of ``total`` (one resource)."""
    fair = {q.name: 0.0 for q in queues}
    left = total
    for q in queues:  # in-quota first
        quota = total if q.deserved == UNLIMITED else max(q.deserved, 0.0)
        given = min(quota, requestable(q))
        fair[q.name] = given
        left -= given
    if left <= _EPS or all(requestable(q) - fair[q.name] <= _EPS for q in queues):
        return fair  # nothing left to give, or nobody wants more: the over-quota passes give nothing
    buckets = _priority_buckets(queues)
    leftovers: dict[str, float] = {}
    for bucket in buckets:
        left = _water_fill(left, bucket, fair, leftovers, k_value, usage or {})
    for bucket in buckets:
        left = _hand_out_remainders(left, bucket, fair, leftovers)
    return fair


def _priority_buckets(queues: Sequence[ShareInput]) -> list[list[ShareInput]]:
    priorities = sorted({q.priority for q in queues}, reverse=True)
    return [sorted((q for q in queues if q.priority == p), key=lambda q: q.name) for p in priorities]


def _weights(
    unsatisfied: Sequence[ShareInput], k_value: float, usage: Mapping[str, float]
) -> dict[str, float]:
    """``max(0, nw + k × (nw − usage))`` with ``nw`` the weight normalised over the unsatisfied queues."""
    total = sum(max(q.weight, 0.0) for q in unsatisfied)
    if total <= 0:
        return {}
    weights = {}
    for q in unsatisfied:
        normalised = max(q.weight, 0.0) / total
        weights[q.name] = max(0.0, normalised + k_value * (normalised - usage.get(q.name, 0.0)))
    return weights


def _water_fill(
    left: float,
    bucket: Sequence[ShareInput],
    fair: dict[str, float],
    leftovers: dict[str, float],
    k_value: float,
    usage: Mapping[str, float],
) -> float:
    while left > _EPS:
        unsatisfied = [q for q in bucket if requestable(q) - fair[q.name] > _EPS]
        weights = {name: w for name, w in _weights(unsatisfied, k_value, usage).items() if w > 0}
        total = sum(weights.values())
        if total <= 0:
            return left
        budget, someone_needed_less = left, False
        for q in (q for q in unsatisfied if q.name in weights):
            share = budget * weights[q.name] / total
            need = requestable(q) - fair[q.name]
            if need <= share + _EPS:
                given, someone_needed_less = need, True
                leftovers.pop(q.name, None)
            else:
                given = math.floor(share + _EPS)
                leftovers[q.name] = share - given
            fair[q.name] += given
            left -= given
        if not someone_needed_less:
            return left
    return left


def _hand_out_remainders(
    left: float, bucket: Sequence[ShareInput], fair: dict[str, float], leftovers: Mapping[str, float]
) -> float:
    """The rounded-down fractions go out one unit at a time: largest leftover, then older, then name."""
    ranked = sorted(bucket, key=lambda q: (-leftovers.get(q.name, 0.0), q.order, q.name))
    for q in ranked:
        if left <= _EPS:
            break
        need = requestable(q) - fair[q.name]
        if need <= _EPS or q.weight <= 0:
            continue
        given = min(1.0, left, need)
        fair[q.name] += given
        left -= given
    return left


# ---------------------------------------------------------------- the queue tree


@dataclass(frozen=True, slots=True)
class TreeQueue:
    """A queue in the tree with its ``ShareInput`` for one resource; ``parent`` ``None`` for a top queue."""

    share: ShareInput
    parent: str | None


def divide_tree(
    total: float, queues: Sequence[TreeQueue], k_value: float = 1.0, usage: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Top-down: the top queues divide ``total``; every queue's fair share is divided among its children.
    ``request`` of each input must already be the subtree sum."""
    children: dict[str | None, list[ShareInput]] = {}
    for q in queues:
        children.setdefault(q.parent, []).append(q.share)
    fair: dict[str, float] = {}
    pending: list[tuple[str | None, float]] = [(None, total)]
    while pending:
        parent, amount = pending.pop(0)
        kids = sorted(children.get(parent, []), key=lambda s: s.name)
        for name, value in divide(amount, kids, k_value, usage).items():
            fair[name] = value
            pending.append((name, value))
    return fair


def queue_fair_shares(
    total: Res,
    queues: Mapping[str, KaiQueue],
    children: Mapping[str | None, list[str]],
    requested: Mapping[str, Res],
    k_value: float,
) -> dict[str, Res]:
    """Every queue's fair share of each resource (``divide_tree`` per resource): ``requested`` is each queue's
    subtree demand, ``children`` the tree (``None``: the top queues)."""
    fair = {name: np.zeros(len(RESOURCES)) for name in queues}
    for r in range(len(RESOURCES)):
        if not any(asked[r] > 0 for asked in requested.values()):
            continue  # nobody asks for it: every level's division gives each queue nothing
        if all(q.quota[r] == UNLIMITED for q in queues.values()):
            wanted = {n: min(float(requested[n][r]), float(q.max_allowed()[r])) for n, q in queues.items()}
            for name, value in _without_quotas(float(total[r]), children, wanted).items():
                fair[name][r] = value
            continue
        tree = [
            TreeQueue(
                ShareInput(q.name, float(q.quota[r]), float(q.limit[r]), float(q.weight[r]), q.priority,
                           float(requested[q.name][r]), q.order),
                q.parent if q.parent in queues else None,
            )
            for q in queues.values()
        ]  # fmt: skip
        for name, value in divide_tree(float(total[r]), tree, k_value).items():
            fair[name][r] = value
    return fair


def _without_quotas(
    amount: float, children: Mapping[str | None, list[str]], wanted: Mapping[str, float]
) -> dict[str, float]:
    """One resource where no queue sets a quota: ``divide``'s in-quota pass gives each queue what it may
    request (``wanted``: ``min(request, limit)``) capped by the amount its level divides (the quota being the
    whole amount), after which nothing is left or nobody wants more, so that is each queue's fair share."""
    fair: dict[str, float] = {}
    levels: list[tuple[str | None, float]] = [(None, amount)]
    while levels:
        parent, amount = levels.pop()
        for name in children.get(parent, []):
            fair[name] = value = min(amount, wanted[name])
            levels.append((name, value))
    return fair
