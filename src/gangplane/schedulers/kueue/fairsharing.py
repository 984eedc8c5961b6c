"""Fair sharing: dominant resource share (DRS), the admission tournament, and fair preemption (kueue.md §7).

After kueue ``pkg/cache/scheduler/fair_sharing.go`` and ``pkg/scheduler/preemption/fairsharing/``. A node's
DRS is the largest, over resource names, of what it borrows beyond its subtree quota per thousand of what its
parent could lend, divided by its weight; roots and non-borrowers have 0, a zero weight while borrowing is
infinite. Cross-cohort order, random in Go, is fixed here by root name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from gangplane.schedulers.kueue.model import FlavorResource, Usage
from gangplane.schedulers.kueue.quota import (
    QuotaNode,
    QuotaTree,
    potential_available,
)


class PreemptionStrategy(StrEnum):
    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
    LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"


DEFAULT_STRATEGIES = (
    PreemptionStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
    PreemptionStrategy.LESS_THAN_INITIAL_SHARE,
)


@dataclass(frozen=True)
class Drs:
    """kueue ``DRS``: the largest borrowed-per-thousand-lendable ratio over resource names, the node's weight,
    and whether it borrows at all."""

    ratio: float
    weight: float
    borrowing: bool

    @property
    def share(self) -> float:
        if self.ratio == 0:
            return 0.0
        return math.inf if self.weight == 0 else self.ratio / self.weight

    @property
    def key(self) -> tuple[int, float]:
        """Orders as ``CompareDRS``: zero-weight borrowers above all others, among themselves by ratio."""
        return (1, self.ratio) if self.weight == 0 and self.ratio != 0 else (0, self.share)


NEGATIVE_DRS = Drs(-1.0, 1.0, False)


def drs(node: QuotaNode, extra: Mapping[FlavorResource, int] | None = None) -> Drs:
    """``dominantResourceShare`` of ``node`` if ``extra`` more were used by it; roots never borrow."""
    if node.parent is None:
        return Drs(0.0, node.weight, False)
    extra = extra or {}
    borrowed: dict[str, int] = {}
    for fr, quota in node.subtree.items():
        over = node.usage.get(fr, 0) + extra.get(fr, 0) - quota
        if over > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + over
    if not borrowed:
        return Drs(0.0, node.weight, False)
    lendable: dict[str, int] = {}  # what the parent could lend, over every flavor of the whole tree
    for fr in node.root().subtree:
        lendable[fr[1]] = lendable.get(fr[1], 0) + potential_available(node.parent, fr)
    ratio = max((b * 1000 / lendable[r] for r, b in borrowed.items() if lendable.get(r, 0) > 0), default=0.0)
    return Drs(ratio, node.weight, True)


def dominant_resource_share(node: QuotaNode, extra: Mapping[FlavorResource, int] | None = None) -> float:
    """DRS of ``node`` if ``extra`` more were used by it; 0 for roots and non-borrowers, inf with weight 0."""
    return drs(node, extra).share


def weighted_share(node: QuotaNode) -> int:
    """``status.fairSharing.weightedShare``: ceil of the DRS; the largest int64 for an infinite share."""
    share = dominant_resource_share(node)
    return 2**63 - 1 if math.isinf(share) else math.ceil(share)


# ---------------------------------------------------------------- admission tournament


@dataclass(frozen=True)
class Contender:
    """One cycle entry as the tournament sees it."""

    cluster_queue: str
    usage: Usage
    priority: int
    queue_time: float


def _borrows_after(node: QuotaNode, usage: Usage) -> bool:
    """Borrowing on a flavor-resource the entry asks for (upstream ``DRS.IsBorrowingOn``: a zero request does
    not count, even where the node already borrows)."""
    return any(v > 0 and node.usage.get(fr, 0) + v > node.subtree.get(fr, 0) for fr, v in usage.items())


def _winner(
    tree: QuotaTree, node: QuotaNode, by_cq: Mapping[str, Contender]
) -> tuple[Contender, QuotaNode] | None:  # fmt: skip
    """The best contender in ``node``'s subtree and the child of ``node`` it came through."""
    if node.is_cq:
        found = by_cq.get(node.name)
        return (found, node) if found is not None else None
    best: tuple[tuple[int, tuple[int, float], int, float], Contender, QuotaNode] | None = None
    for child in node.children:
        sub = _winner(tree, child, by_cq)
        if sub is None:
            continue
        contender = sub[0]
        key = (
            1 if _borrows_after(child, contender.usage) else 0,
            drs(child, contender.usage).key,  # CompareDRS: zero-weight borrowers compare by ratio
            -contender.priority,
            contender.queue_time,
        )
        if best is None or key < best[0]:
            best = (key, contender, child)
    return (best[1], best[2]) if best is not None else None


def next_fair_entry(tree: QuotaTree, contenders: Sequence[Contender]) -> Contender:
    """The contender to process next: the tournament winner of the first root (by name) holding one."""
    by_cq = {c.cluster_queue: c for c in contenders}
    roots = sorted({tree.cqs[c.cluster_queue].root().name for c in contenders})
    for root_name in roots:
        root = tree.cohorts.get(root_name) or tree.cqs[root_name]
        found = _winner(tree, root, by_cq)
        if found is not None:
            return found[0]
    raise ValueError("no contender")
