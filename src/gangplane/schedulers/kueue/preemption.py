"""Classical preemption: which admitted workloads to evict so a preemptor fits (kueue.md §6).

Follows kueue ``pkg/scheduler/preemption/`` (``classical/``, ``common/ordering.go``): candidates come from the
preemptor's own ClusterQueue (``withinClusterQueue``) and from ClusterQueues above nominal elsewhere in the
cohort tree (``reclaimWithinCohort``); each gets a variant that says under which condition it may go. The
search removes candidates one by one from the cycle view until the preemptor fits, then re-adds all but the
last that are not needed (a minimal set). The view is restored before returning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from gangplane.api.scheduling.kueue import PreemptionPolicy
from gangplane.api.scheduling.kueue_workload import PreemptionReason
from gangplane.schedulers.kueue.admitted import AdmittedIndex
from gangplane.schedulers.kueue.model import (
    ClusterQueueSpec,
    FlavorMode,
    FlavorResource,
    PreemptionVariant,
)
from gangplane.schedulers.kueue.quota import (
    QuotaNode,
    QuotaTree,
    available,
    fits_in_quota,
    is_within_nominal,
    lowest_fitting_subtree_height,
)
from gangplane.schedulers.kueue.workloads import WorkloadState


@dataclass(frozen=True)
class Target:
    """A workload to evict and why (the ``Preempted`` condition's reason)."""

    workload: WorkloadState
    reason: PreemptionReason


@dataclass(frozen=True)
class Preemptor:
    key: str
    cluster_queue: str
    priority: int
    queue_time: float


@dataclass(frozen=True)
class _Candidate:
    workload: WorkloadState
    variant: PreemptionVariant
    lca: QuotaNode | None


_REASONS = {
    PreemptionVariant.WITHIN_CQ: PreemptionReason.IN_CLUSTER_QUEUE,
    PreemptionVariant.HIERARCHICAL_RECLAIM: PreemptionReason.IN_COHORT_RECLAMATION,
    PreemptionVariant.RECLAIM_WITHOUT_BORROWING: PreemptionReason.IN_COHORT_RECLAMATION,
    PreemptionVariant.RECLAIM_WHILE_BORROWING: PreemptionReason.IN_COHORT_RECLAIM_WHILE_BORROWING,
}


_HUMAN_REASONS: dict[str, str] = {
    PreemptionReason.IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    PreemptionReason.IN_COHORT_RECLAMATION: "reclamation within the cohort",
    PreemptionReason.IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    PreemptionReason.IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}


def queue_path(tree: QuotaTree, cq: str) -> str:
    """``/root/.../cohort/cq`` (upstream ``buildCQPath``); "" for a ClusterQueue not in the tree."""
    node = tree.cqs.get(cq)
    if node is None:
        return ""
    return "/" + "/".join([*(a.name for a in reversed(list(node.path_to_root()))), cq])


def preemption_message(uid: str, job_uid: str, reason: str, preemptor_path: str, preemptee_path: str) -> str:
    """The victim's ``Evicted`` / ``Preempted`` message, as upstream's ``preemptionMessage``."""
    return (
        f"Preempted to accommodate a workload (UID: {uid or 'UNKNOWN'}, JobUID: {job_uid or 'UNKNOWN'}) due to "
        f"{_HUMAN_REASONS.get(reason, 'UNKNOWN')}; preemptor path: {preemptor_path or 'UNKNOWN'}; "
        f"preemptee path: {preemptee_path or 'UNKNOWN'}"
    )


def satisfies_policy(policy: PreemptionPolicy, preemptor: Preemptor, candidate: WorkloadState) -> bool:
    if policy == PreemptionPolicy.ANY:
        return True
    if policy == PreemptionPolicy.LOWER_PRIORITY:
        return candidate.priority < preemptor.priority
    if policy == PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY:
        newer = candidate.priority == preemptor.priority and candidate.queue_time > preemptor.queue_time
        return candidate.priority < preemptor.priority or newer
    return False


def candidate_order(candidate: WorkloadState, own_cq: str) -> tuple[int, int, float, str]:
    """Other ClusterQueues first, then lower priority, then most recently reserved, then UID."""
    own = 1 if candidate.cluster_queue == own_cq else 0
    return own, candidate.priority, -(candidate.reserved_at or 0.0), candidate.request.uid or candidate.key


# ---------------------------------------------------------------- candidates


@dataclass(frozen=True)
class _Context:
    preemptor: Preemptor
    spec: ClusterQueueSpec
    tree: QuotaTree
    frs: frozenset[FlavorResource]
    requests: Mapping[FlavorResource, int]
    admitted: AdmittedIndex

    @property
    def node(self) -> QuotaNode:
        return self.tree.cqs[self.spec.name]

    def uses_contested(self, workload: WorkloadState) -> bool:
        return any(fr in self.frs for fr in workload.usage)

    def allowed(self, cq: str, policy: PreemptionPolicy) -> Iterable[WorkloadState]:
        """``cq``'s admitted workloads ``policy`` lets the preemptor evict, from the priority index."""
        p = self.preemptor
        return self.admitted.allowed(cq, policy, p.priority, p.queue_time)


def _variant(ctx: _Context, workload: WorkloadState, hierarchical: bool) -> PreemptionVariant:
    own = workload.cluster_queue == ctx.spec.name
    policy = ctx.spec.preemption.within_cluster_queue if own else ctx.spec.preemption.reclaim_within_cohort
    if not ctx.uses_contested(workload) or not satisfies_policy(policy, ctx.preemptor, workload):
        return PreemptionVariant.NEVER
    if own:
        return PreemptionVariant.WITHIN_CQ
    if hierarchical:
        return PreemptionVariant.HIERARCHICAL_RECLAIM
    bwc = ctx.spec.preemption
    if bwc.borrow_within_cohort == PreemptionPolicy.NEVER or workload.priority >= ctx.preemptor.priority:
        return PreemptionVariant.RECLAIM_WITHOUT_BORROWING
    threshold = bwc.max_priority_threshold
    if threshold is not None and workload.priority > threshold:
        return PreemptionVariant.RECLAIM_WITHOUT_BORROWING
    return PreemptionVariant.RECLAIM_WHILE_BORROWING


def _subtree_cqs(ctx: _Context, cohort: QuotaNode, skip: QuotaNode | None) -> Iterable[QuotaNode]:
    """ClusterQueues above nominal under ``cohort``, not descending into subtrees within their quota."""
    for child in cohort.children:
        if child is skip or child is ctx.node or is_within_nominal(child, ctx.frs):
            continue
        if child.is_cq:
            yield child
        else:
            yield from _subtree_cqs(ctx, child, skip)


def _cohort_candidates(ctx: _Context) -> tuple[list[_Candidate], list[_Candidate]]:
    """(hierarchical, priority) candidates from other ClusterQueues; kueue ``collectHierarchicalReclaimCQs``."""
    hierarchy: list[_Candidate] = []
    priority: list[_Candidate] = []
    if ctx.node.parent is None or ctx.spec.preemption.reclaim_within_cohort == PreemptionPolicy.NEVER:
        return hierarchy, priority
    advantage, remaining = fits_in_quota(ctx.node, ctx.requests)
    previous: QuotaNode | None = None
    for subtree in ctx.node.path_to_root():
        for cq in _subtree_cqs(ctx, subtree, previous):
            for workload in ctx.allowed(cq.name, ctx.spec.preemption.reclaim_within_cohort):
                variant = _variant(ctx, workload, advantage)
                if variant != PreemptionVariant.NEVER:
                    (hierarchy if advantage else priority).append(_Candidate(workload, variant, subtree))
        fits, remaining = fits_in_quota(subtree, remaining)
        advantage = advantage or fits
        previous = subtree
    return hierarchy, priority


def _own_candidates(ctx: _Context) -> list[_Candidate]:
    policy = ctx.spec.preemption.within_cluster_queue
    found = (_Candidate(w, _variant(ctx, w, False), None) for w in ctx.allowed(ctx.spec.name, policy))
    return [c for c in found if c.variant != PreemptionVariant.NEVER]


# ---------------------------------------------------------------- search


def _fits(ctx: _Context, allow_borrowing: bool) -> bool:
    for fr, amount in ctx.requests.items():
        if amount > available(ctx.node, fr):
            return False
        if not allow_borrowing and ctx.node.usage.get(fr, 0) + amount > ctx.node.subtree.get(fr, 0):
            return False
    return True


def _still_reclaimable(ctx: _Context, candidate: _Candidate) -> bool:
    """A cross-queue candidate counts only while its queue and ancestors below the LCA are above nominal."""
    if candidate.lca is None:
        return True
    node: QuotaNode | None = ctx.tree.cqs[candidate.workload.cluster_queue]
    while node is not None and node is not candidate.lca:
        if is_within_nominal(node, ctx.frs):
            return False
        node = node.parent
    return True


def _minimal_set(ctx: _Context, removed: list[_Candidate], allow_borrowing: bool) -> list[_Candidate]:
    """Re-add removed candidates, newest choice first but the last, keeping out only those still needed."""
    chosen = [removed[-1]]
    for candidate in reversed(removed[:-1]):
        ctx.tree.add_usage(candidate.workload.cluster_queue, candidate.workload.usage)
        if _fits(ctx, allow_borrowing):
            continue
        ctx.tree.remove_usage(candidate.workload.cluster_queue, candidate.workload.usage)
        chosen.append(candidate)
    return chosen


def _restore(ctx: _Context, gone: Iterable[_Candidate]) -> None:
    for candidate in gone:
        ctx.tree.add_usage(candidate.workload.cluster_queue, candidate.workload.usage)


def _search(ctx: _Context, candidates: Sequence[_Candidate], allow_borrowing: bool) -> list[_Candidate]:
    removed: list[_Candidate] = []
    for candidate in candidates:
        if allow_borrowing and candidate.variant == PreemptionVariant.RECLAIM_WITHOUT_BORROWING:
            continue
        if not _still_reclaimable(ctx, candidate):
            continue
        ctx.tree.remove_usage(candidate.workload.cluster_queue, candidate.workload.usage)
        removed.append(candidate)
        if _fits(ctx, allow_borrowing):
            chosen = _minimal_set(ctx, removed, allow_borrowing)
            _restore(ctx, chosen)
            return chosen
    _restore(ctx, removed)
    return []


def _strictly_under_nominal(ctx: _Context) -> bool:
    return all(ctx.node.usage.get(fr, 0) < ctx.node.subtree.get(fr, 0) for fr in ctx.frs)


def _borrowing_attempts(ctx: _Context, hierarchy: list[_Candidate], priority: list[_Candidate]) -> list[bool]:
    forbidden = ctx.spec.preemption.borrow_within_cohort == PreemptionPolicy.NEVER
    if not hierarchy and not priority:
        return [True]
    if forbidden and not _strictly_under_nominal(ctx):
        return [True]
    if forbidden and not hierarchy:
        return [False, True]
    return [True, False]


def find_targets(
    preemptor: Preemptor, spec: ClusterQueueSpec, tree: QuotaTree, requests: Mapping[FlavorResource, int],
    frs: Iterable[FlavorResource], admitted: AdmittedIndex,
) -> list[Target]:  # fmt: skip
    """The minimal victim set letting ``requests`` fit ``spec``'s ClusterQueue in ``tree``; [] when none."""
    ctx = _Context(preemptor, spec, tree, frozenset(frs), requests, admitted)
    hierarchy, priority = _cohort_candidates(ctx)
    own = _own_candidates(ctx)
    ordered = [
        *sorted(hierarchy, key=lambda c: candidate_order(c.workload, spec.name)),
        *sorted(priority, key=lambda c: candidate_order(c.workload, spec.name)),
        *sorted(own, key=lambda c: candidate_order(c.workload, spec.name)),
    ]
    for allow_borrowing in _borrowing_attempts(ctx, hierarchy, priority):
        if chosen := _search(ctx, ordered, allow_borrowing):
            return [Target(c.workload, _REASONS[c.variant]) for c in chosen]
    return []


def oracle_for(
    spec: ClusterQueueSpec, tree: QuotaTree, find: Callable[[FlavorResource, int], list[Target]]
) -> Callable[[FlavorResource, int], tuple[FlavorMode, int]]:  # fmt: skip
    """Flavor assignment's preemption oracle (kueue ``PreemptionOracle.SimulatePreemption``): the mode, and the
    borrowing level ``amount`` of ``fr`` would need once the victims ``find`` chooses are gone."""
    node = tree.cqs[spec.name]

    def simulate(fr: FlavorResource, amount: int) -> tuple[FlavorMode, int]:
        targets = find(fr, amount)
        if not targets:
            return FlavorMode.NO_CANDIDATES, lowest_fitting_subtree_height(node, fr, amount)[0]
        for target in targets:
            tree.remove_usage(target.workload.cluster_queue, target.workload.usage)
        borrow = lowest_fitting_subtree_height(node, fr, amount)[0]
        for target in targets:
            tree.add_usage(target.workload.cluster_queue, target.workload.usage)
        own = any(t.workload.cluster_queue == spec.name for t in targets)
        return (FlavorMode.PREEMPT if own else FlavorMode.RECLAIM), borrow

    return simulate
