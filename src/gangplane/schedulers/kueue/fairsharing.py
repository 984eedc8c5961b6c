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

from gangplane.api.scheduling.kueue_workload import PreemptionReason
from gangplane.schedulers.kueue.model import ClusterQueueSpec, FlavorResource, Usage
from gangplane.schedulers.kueue.preemption import Preemptor, Target, candidate_order, satisfies_policy
from gangplane.schedulers.kueue.quota import (
    QuotaNode,
    QuotaTree,
    available,
    is_borrowing,
    potential_available,
)
from gangplane.schedulers.kueue.workloads import WorkloadState


class PreemptionStrategy(StrEnum):
    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
    LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"


DEFAULT_STRATEGIES = (
    PreemptionStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
    PreemptionStrategy.LESS_THAN_INITIAL_SHARE,
)


def dominant_resource_share(node: QuotaNode, extra: Mapping[FlavorResource, int] | None = None) -> float:
    """DRS of ``node`` if ``extra`` more were used by it; 0 for roots and non-borrowers, inf with weight 0."""
    if node.parent is None:
        return 0.0
    extra = extra or {}
    borrowed: dict[str, int] = {}
    lendable: dict[str, int] = {}
    for fr in node.subtree.keys() | extra.keys():
        over = node.usage.get(fr, 0) + extra.get(fr, 0) - node.subtree.get(fr, 0)
        borrowed[fr[1]] = borrowed.get(fr[1], 0) + max(0, over)
        lendable[fr[1]] = lendable.get(fr[1], 0) + potential_available(node.parent, fr)
    ratio = max(
        (b * 1000 / lendable[r] for r, b in borrowed.items() if b > 0 and lendable[r] > 0), default=0.0
    )
    if not any(borrowed.values()):
        return 0.0
    if node.weight == 0:
        return math.inf
    return ratio / node.weight


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
    return any(node.usage.get(fr, 0) + v > node.subtree.get(fr, 0) for fr, v in usage.items())


def _winner(
    tree: QuotaTree, node: QuotaNode, by_cq: Mapping[str, Contender]
) -> tuple[Contender, QuotaNode] | None:  # fmt: skip
    """The best contender in ``node``'s subtree and the child of ``node`` it came through."""
    if node.is_cq:
        found = by_cq.get(node.name)
        return (found, node) if found is not None else None
    best: tuple[tuple[int, float, int, float], Contender, QuotaNode] | None = None
    for child in node.children:
        sub = _winner(tree, child, by_cq)
        if sub is None:
            continue
        contender = sub[0]
        key = (
            1 if _borrows_after(child, contender.usage) else 0,
            dominant_resource_share(child, contender.usage),
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


# ---------------------------------------------------------------- fair preemption


def _drs_path_choice(
    node: QuotaNode, own: QuotaNode, candidates: Mapping[str, list[WorkloadState]]
) -> QuotaNode | None:  # fmt: skip
    """Descend into the child with the highest DRS that is borrowing (or is ``own``) and has candidates."""
    if node.is_cq:
        return node if candidates.get(node.name) else None
    for child in sorted(node.children, key=lambda c: (-dominant_resource_share(c), c.name)):
        if child is not own and not is_borrowing_any(child):
            continue
        if child.is_cq and candidates.get(child.name):
            return child
        if not child.is_cq and (found := _drs_path_choice(child, own, candidates)) is not None:
            return found
    return None


def is_borrowing_any(node: QuotaNode) -> bool:
    return any(is_borrowing(node, fr) for fr in node.subtree.keys() | node.usage.keys())


def _fits(node: QuotaNode, requests: Mapping[FlavorResource, int]) -> bool:
    """With the preemptor's usage already added: nothing on its path is overcommitted."""
    return all(available(node, fr) >= 0 for fr in requests)


def _accepts(strategy: PreemptionStrategy, preemptor_node: QuotaNode, target_node: QuotaNode,
             victim: WorkloadState) -> bool:  # fmt: skip
    mine = dominant_resource_share(preemptor_node)
    if strategy == PreemptionStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE:
        after = dominant_resource_share(target_node, {fr: -v for fr, v in victim.usage.items()})
        return mine <= after
    return mine < dominant_resource_share(target_node)


def _fair_candidates(
    preemptor: Preemptor, spec: ClusterQueueSpec, tree: QuotaTree,
    frs: frozenset[FlavorResource], admitted: Mapping[str, Mapping[str, WorkloadState]],
) -> dict[str, list[WorkloadState]]:  # fmt: skip
    root = tree.cqs[spec.name].root()
    found: dict[str, list[WorkloadState]] = {}
    for name, node in tree.cqs.items():
        if node.root() is not root or (name != spec.name and not is_borrowing_any(node)):
            continue
        policy = (
            spec.preemption.within_cluster_queue
            if name == spec.name
            else spec.preemption.reclaim_within_cohort
        )
        usable = [
            w
            for w in admitted.get(name, {}).values()
            if frs & w.usage.keys() and satisfies_policy(policy, preemptor, w)
        ]
        if usable:
            found[name] = sorted(usable, key=lambda w: candidate_order(w, spec.name), reverse=True)
    return found


def find_fair_targets(
    preemptor: Preemptor, spec: ClusterQueueSpec, tree: QuotaTree, requests: Mapping[FlavorResource, int],
    frs: frozenset[FlavorResource], admitted: Mapping[str, Mapping[str, WorkloadState]],
    strategies: Sequence[PreemptionStrategy] = DEFAULT_STRATEGIES,
) -> list[Target]:  # fmt: skip
    """Fair-sharing victims for ``requests`` (the view is restored before returning)."""
    node = tree.cqs[spec.name]
    tree.add_usage(spec.name, requests)
    candidates = _fair_candidates(preemptor, spec, tree, frs, admitted)
    chosen: list[Target] = []
    try:
        for strategy in strategies:
            if _run_strategy(tree, node, requests, candidates, strategy, chosen):
                return _minimal(tree, node, requests, chosen)
        return []
    finally:
        for target in chosen:
            tree.add_usage(target.workload.cluster_queue, target.workload.usage)
        tree.remove_usage(spec.name, requests)


def _run_strategy(tree: QuotaTree, node: QuotaNode, requests: Mapping[FlavorResource, int],
                  candidates: dict[str, list[WorkloadState]], strategy: PreemptionStrategy,
                  chosen: list[Target]) -> bool:  # fmt: skip
    retry: dict[str, list[WorkloadState]] = {}
    pool = {k: list(v) for k, v in candidates.items()}
    while not _fits(node, requests):
        target_node = _drs_path_choice(node.root(), node, pool)
        if target_node is None:
            candidates.clear()
            candidates.update(retry)
            return False
        victim = pool[target_node.name].pop()
        take = _take(tree, node, target_node, victim, strategy)
        if take is None:
            retry.setdefault(target_node.name, []).append(victim)
            continue
        tree.remove_usage(victim.cluster_queue, victim.usage)
        chosen.append(Target(victim, take))
    return True


def _take(tree: QuotaTree, node: QuotaNode, target_node: QuotaNode, victim: WorkloadState,
          strategy: PreemptionStrategy) -> PreemptionReason | None:  # fmt: skip
    if target_node is node:
        return PreemptionReason.IN_CLUSTER_QUEUE
    within_nominal = all(node.usage.get(fr, 0) <= node.subtree.get(fr, 0) for fr in node.usage)
    if within_nominal:
        return PreemptionReason.IN_COHORT_RECLAMATION
    if _accepts(strategy, node, target_node, victim):
        return PreemptionReason.IN_COHORT_FAIR_SHARING
    return None


def _minimal(tree: QuotaTree, node: QuotaNode, requests: Mapping[FlavorResource, int],
             chosen: list[Target]) -> list[Target]:  # fmt: skip
    for target in reversed(chosen[:-1]):
        tree.add_usage(target.workload.cluster_queue, target.workload.usage)
        if _fits(node, requests):
            chosen.remove(target)
        else:
            tree.remove_usage(target.workload.cluster_queue, target.workload.usage)
    return list(chosen)
