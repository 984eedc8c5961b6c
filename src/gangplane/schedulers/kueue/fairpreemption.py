"""Fair-sharing preemption (kueue.md §7), as upstream's ``pkg/scheduler/preemption/preemption.go``
(``fairPreemptions``, ``runFirstFsStrategy``, ``runSecondFsStrategy``, ``fillBackWorkloads``) and
``preemption/fairsharing/`` (``ordering.go``, ``target.go``, ``least_common_ancestor.go``).

- Candidates: the preemptor's own admitted workloads its ``withinClusterQueue`` policy allows, and those of
  ClusterQueues in its cohort tree that borrow one of the contested flavor-resources, under
  ``reclaimWithinCohort``; only workloads using a contested flavor-resource; in candidate order.
- Target order: from the root, descend into the child (ClusterQueue or Cohort) with the highest DRS that
  borrows (or is on the preemptor's path), Cohorts winning ties; equal ClusterQueues go by their first
  candidate. The preemptor's usage is counted while shares are computed.
- Shares compared are those of the two nodes just below the lowest common ancestor of the preemptor and
  the target ClusterQueue, not the ClusterQueues' own (hierarchical cohorts).
- While the preemptor stays within nominal quota on the contested flavor-resources, any candidate is taken
  (``InCohortReclamation``); otherwise the first strategy (default ``LessThanOrEqualToFinalShare``) decides
  per candidate, and the candidates it refused are retried, in their original order, with rule S2-b
  (``LessThanInitialShare``): at most the first candidate of each ClusterQueue.
- Finally, victims that are not needed are given back, latest first but one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from gangplane.api.scheduling.kueue import PreemptionPolicy
from gangplane.api.scheduling.kueue_workload import PreemptionReason
from gangplane.schedulers.kueue.admitted import AdmittedIndex
from gangplane.schedulers.kueue.fairsharing import (
    DEFAULT_STRATEGIES,
    NEGATIVE_DRS,
    Drs,
    PreemptionStrategy,
    drs,
)
from gangplane.schedulers.kueue.model import ClusterQueueSpec, FlavorResource
from gangplane.schedulers.kueue.preemption import Preemptor, Target, candidate_order
from gangplane.schedulers.kueue.quota import QuotaNode, QuotaTree, available, is_borrowing
from gangplane.schedulers.kueue.workloads import WorkloadState

Admitted = AdmittedIndex


@dataclass
class _Search:
    """One preemption search: the view (with the preemptor's usage added) and the victims taken so far."""

    tree: QuotaTree
    node: QuotaNode
    requests: Mapping[FlavorResource, int]
    own: str
    chosen: list[Target] = field(default_factory=list)

    def take(self, victim: WorkloadState, reason: PreemptionReason) -> bool:
        """Remove ``victim`` from the view; True once the preemptor fits (``workloadFitsForFairSharing``)."""
        self.tree.remove_usage(victim.cluster_queue, victim.usage)
        self.chosen.append(Target(victim, reason))
        self.tree.remove_usage(self.own, self.requests)
        try:
            return fits(self.node, self.requests)
        finally:
            self.tree.add_usage(self.own, self.requests)


def fits(node: QuotaNode, requests: Mapping[FlavorResource, int]) -> bool:
    return all(amount <= available(node, fr) for fr, amount in requests.items())


# ---------------------------------------------------------------- target ClusterQueue ordering


class _Ordering:
    """``TargetClusterQueueOrdering``: which ClusterQueue to take the next candidate from."""

    def __init__(self, preemptor: QuotaNode, candidates: Sequence[WorkloadState]) -> None:
        self.preemptor = preemptor
        self.ancestors = set(map(id, preemptor.path_to_root()))
        self.by_cq: dict[str, list[WorkloadState]] = {}
        for candidate in candidates:
            self.by_cq.setdefault(candidate.cluster_queue, []).append(candidate)
        self.pruned_cqs: set[str] = set()
        self.pruned_cohorts: set[int] = set()

    def has(self, cq: QuotaNode) -> bool:
        return bool(self.by_cq.get(cq.name))

    def pop(self, cq: QuotaNode) -> WorkloadState:
        return self.by_cq[cq.name].pop(0)

    def drop(self, cq: QuotaNode) -> None:
        self.pruned_cqs.add(cq.name)

    def __iter__(self) -> Iterator[QuotaNode]:
        own = self.preemptor
        if own.parent is None:
            while own.name not in self.pruned_cqs and self.has(own):
                yield own
            return
        root = own.parent.root()
        while id(root) not in self.pruned_cohorts:
            target = self._next(root)
            if target is not None:
                yield target

    def _next(self, cohort: QuotaNode) -> QuotaNode | None:
        best_cq, best_cq_drs = None, NEGATIVE_DRS
        for cq in (c for c in cohort.children if c.is_cq and c.name not in self.pruned_cqs):
            share = drs(cq)
            if (not share.borrowing and cq is not self.preemptor) or not self.has(cq):
                self.pruned_cqs.add(cq.name)
            elif best_cq is not None and share.key == best_cq_drs.key:
                if candidate_order(self.by_cq[cq.name][0], self.preemptor.name) < candidate_order(
                    self.by_cq[best_cq.name][0], self.preemptor.name
                ):
                    best_cq = cq
            elif share.key > best_cq_drs.key:
                best_cq, best_cq_drs = cq, share
        best_cohort, best_cohort_drs = None, NEGATIVE_DRS
        for child in (c for c in cohort.children if not c.is_cq and id(c) not in self.pruned_cohorts):
            share = drs(child)
            if not share.borrowing and id(child) not in self.ancestors:
                self.pruned_cohorts.add(id(child))
            elif share.key >= best_cohort_drs.key:
                best_cohort, best_cohort_drs = child, share
        if best_cohort is None and best_cq is None:
            self.pruned_cohorts.add(id(cohort))
            return None
        if best_cohort is not None and best_cohort_drs.key >= best_cq_drs.key:
            return self._next(best_cohort)
        return best_cq

    # ------------------------------------------------------------ shares below the lowest common ancestor

    def _almost_lcas(self, target: QuotaNode) -> tuple[QuotaNode, QuotaNode]:
        lca = next(a for a in target.path_to_root() if id(a) in self.ancestors)
        return _below(self.preemptor, lca), _below(target, lca)

    def shares(self, target: QuotaNode) -> tuple[Drs, Drs]:
        """(preemptor's new share, target's old share), each of the node just below their common ancestor."""
        mine, theirs = self._almost_lcas(target)
        return drs(mine), drs(theirs)

    def share_after(self, tree: QuotaTree, target: QuotaNode, victim: WorkloadState) -> Drs:
        tree.remove_usage(victim.cluster_queue, victim.usage)
        try:
            return drs(self._almost_lcas(target)[1])
        finally:
            tree.add_usage(victim.cluster_queue, victim.usage)


def _below(node: QuotaNode, lca: QuotaNode) -> QuotaNode:
    """The node on ``node``'s path to the root whose parent is ``lca`` (``node`` itself, or a Cohort)."""
    below = node
    for ancestor in node.path_to_root():
        if ancestor is lca:
            return below
        below = ancestor
    raise ValueError(f"{lca.name} is not above {node.name}")


# ---------------------------------------------------------------- the two strategies


def _passes(strategy: PreemptionStrategy, mine: Drs, theirs_before: Drs, theirs_after: Drs) -> bool:
    if strategy == PreemptionStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE:
        return mine.key <= theirs_after.key
    return mine.key < theirs_before.key


def _first(search: _Search, candidates: Sequence[WorkloadState], strategy: PreemptionStrategy,
           frs: frozenset[FlavorResource]) -> tuple[bool, list[WorkloadState]]:  # fmt: skip
    """``runFirstFsStrategy``: (fits, candidates to retry with rule S2-b)."""
    ordering = _Ordering(search.node, candidates)
    within_nominal = not any(is_borrowing(search.node, fr) for fr in frs)
    retry: list[WorkloadState] = []
    for target in ordering:
        if target is search.node or within_nominal:
            reason = (
                PreemptionReason.IN_CLUSTER_QUEUE
                if target is search.node
                else PreemptionReason.IN_COHORT_RECLAMATION
            )
            if search.take(ordering.pop(target), reason):
                return True, []
            continue
        mine, theirs = ordering.shares(target)
        if mine.share == float("inf") and theirs.share != float("inf"):  # no candidate here can pass
            retry.extend(ordering.by_cq.pop(target.name))
            continue
        while ordering.has(target):
            victim = ordering.pop(target)
            after = ordering.share_after(search.tree, target, victim)
            if not _passes(strategy, mine, theirs, after):
                retry.append(victim)
                continue
            if search.take(victim, PreemptionReason.IN_COHORT_FAIR_SHARING):
                return True, []
            break  # shares changed: choose the target ClusterQueue again
    return False, retry


def _second(search: _Search, retry: Sequence[WorkloadState]) -> bool:
    """``runSecondFsStrategy`` (rule S2-b): per ClusterQueue, its first refused candidate, if the
    preemptor's share stays below the target's initial share."""
    ordering = _Ordering(search.node, retry)
    for target in ordering:
        mine, theirs = ordering.shares(target)
        victim = ordering.pop(target)
        if mine.key < theirs.key and search.take(victim, PreemptionReason.IN_COHORT_FAIR_SHARING):
            return True
        ordering.drop(target)
    return False


# ---------------------------------------------------------------- entry point


def _candidates(preemptor: Preemptor, spec: ClusterQueueSpec, tree: QuotaTree, frs: frozenset[FlavorResource],
                admitted: Admitted) -> list[WorkloadState]:  # fmt: skip
    """``findCandidates`` sorted by ``CandidatesOrdering``."""
    node = tree.cqs[spec.name]
    pools: list[tuple[str, PreemptionPolicy]] = []
    if spec.preemption.within_cluster_queue != PreemptionPolicy.NEVER:
        pools.append((spec.name, spec.preemption.within_cluster_queue))
    if node.parent is not None and spec.preemption.reclaim_within_cohort != PreemptionPolicy.NEVER:
        root = node.root()
        for name, other in tree.cqs.items():
            if other is not node and other.root() is root and any(is_borrowing(other, fr) for fr in frs):
                pools.append((name, spec.preemption.reclaim_within_cohort))
    found = [
        w
        for name, policy in pools
        for w in admitted.allowed(name, policy, preemptor.priority, preemptor.queue_time)
        if frs & w.usage.keys()
    ]
    return sorted(found, key=lambda w: candidate_order(w, spec.name))


def find_fair_targets(
    preemptor: Preemptor, spec: ClusterQueueSpec, tree: QuotaTree, requests: Mapping[FlavorResource, int],
    frs: frozenset[FlavorResource], admitted: Admitted,
    strategies: Sequence[PreemptionStrategy] = DEFAULT_STRATEGIES,
) -> list[Target]:  # fmt: skip
    """Fair-sharing victims for ``requests`` on the contested ``frs``; [] when none make it fit. The view is
    left as it was."""
    candidates = _candidates(preemptor, spec, tree, frs, admitted)
    if not candidates:
        return []
    search = _Search(tree, tree.cqs[spec.name], requests, spec.name)
    tree.add_usage(spec.name, requests)  # shares include the incoming workload
    try:
        found, retry = _first(search, candidates, strategies[0], frs)
        if not found and len(strategies) > 1:
            found = _second(search, retry)
    finally:
        tree.remove_usage(spec.name, requests)
    try:
        return _fill_back(search) if found else []
    finally:
        for target in search.chosen:
            tree.add_usage(target.workload.cluster_queue, target.workload.usage)


def _fill_back(search: _Search) -> list[Target]:
    """``fillBackWorkloads``: from the last but one backwards, give back each victim not needed to fit."""
    chosen = list(search.chosen)
    for target in reversed(search.chosen[:-1]):
        search.tree.add_usage(target.workload.cluster_queue, target.workload.usage)
        if fits(search.node, search.requests):
            chosen.remove(target)
        else:
            search.tree.remove_usage(target.workload.cluster_queue, target.workload.usage)
    search.chosen[:] = chosen
    return chosen
