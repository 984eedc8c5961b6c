"""Quota arithmetic in cohort trees: ClusterQueues are leaves, Cohorts inner nodes (kueue.md §2).

Mirrors kueue ``pkg/cache/scheduler/resource_node.go``: per (flavor, resource) every node has a nominal
quota, optional borrowing and lending limits, a ``SubtreeQuota`` and a ``Usage``. The part of a node's quota
kept back by its lending limit (``local_quota``) is never visible to its parent; usage beyond it bubbles up.

A ``QuotaTree`` is mutable only through ``add_usage``/``remove_usage``, which are exact inverses, so a
scheduling cycle can simulate admissions on a copy and undo them (style rule 7). ``KeptView`` keeps that copy
across cycles: it follows the tree by replaying the tree's changes (its journal) and takes back the cycle's
own, so a cycle costs the usage changes since the last one, not a copy of every node.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from gangplane.schedulers.kueue.model import ClusterQueueSpec, CohortSpec, FlavorResource, ResourceQuota


@dataclass(eq=False)
class QuotaNode:
    """One ClusterQueue (``is_cq``) or Cohort. Static quota fields are shared between clones."""

    name: str
    is_cq: bool
    quotas: Mapping[FlavorResource, ResourceQuota]
    weight: float = 1.0
    parent: QuotaNode | None = None
    children: list[QuotaNode] = field(default_factory=list)
    subtree: dict[FlavorResource, int] = field(default_factory=dict)
    local: dict[FlavorResource, int] = field(default_factory=dict)
    usage: dict[FlavorResource, int] = field(default_factory=dict)

    def borrowing_limit(self, fr: FlavorResource) -> int | None:
        quota = self.quotas.get(fr)
        return quota.borrowing_limit if quota else None

    def nominal(self, fr: FlavorResource) -> int:
        quota = self.quotas.get(fr)
        return quota.nominal if quota else 0

    def path_to_root(self) -> Iterator[QuotaNode]:
        """The node's ancestors, parent first."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def root(self) -> QuotaNode:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def height(self) -> int:
        """Distance to the furthest leaf (kueue classical ``getNodeHeight``); a CQ is 0."""
        if self.is_cq:
            return 0
        return max((child.height() + 1 for child in self.children), default=0)


def _cohort_chain_has_cycle(cohorts: Mapping[str, CohortSpec], start: str) -> bool:
    seen: set[str] = set()
    name: str | None = start
    while name is not None and name in cohorts:
        if name in seen:
            return True
        seen.add(name)
        name = cohorts[name].parent
    return False


class QuotaTree:
    """All ClusterQueues and Cohorts with their usage. Cohorts named but not created are implicit (no quota).

    A cohort in a parent cycle is disabled, and so are the ClusterQueues under it (``inactive``).
    """

    def __init__(
        self, cluster_queues: Iterable[ClusterQueueSpec], cohorts: Iterable[CohortSpec] = ()
    ) -> None:
        self.cqs: dict[str, QuotaNode] = {}
        self.cohorts: dict[str, QuotaNode] = {}
        self.inactive: set[str] = set()
        self.journal: list[Change] | None = None
        """Usage changes recorded while not None (``KeptView``), in order."""
        cohort_specs = {c.name: c for c in cohorts}
        cq_specs = list(cluster_queues)
        cyclic = {name for name in cohort_specs if _cohort_chain_has_cycle(cohort_specs, name)}
        for cq in cq_specs:
            node = QuotaNode(cq.name, True, cq.quotas(), cq.fair_weight)
            self.cqs[cq.name] = node
            if cq.cohort is not None:
                if cq.cohort in cyclic:
                    self.inactive.add(cq.name)
                    continue
                self._link(node, self._cohort(cq.cohort, cohort_specs, cyclic))
        for name in sorted(cohort_specs):
            if name not in cyclic:
                self._cohort(name, cohort_specs, cyclic)
        for root in self.roots():
            self._compute_subtree(root)

    def _cohort(self, name: str, specs: Mapping[str, CohortSpec], cyclic: set[str]) -> QuotaNode:
        if (node := self.cohorts.get(name)) is not None:
            return node
        spec = specs.get(name)
        node = QuotaNode(name, False, spec.quotas() if spec else {}, spec.fair_weight if spec else 1.0)
        self.cohorts[name] = node
        if spec is not None and spec.parent is not None and spec.parent not in cyclic:
            self._link(node, self._cohort(spec.parent, specs, cyclic))
        return node

    @staticmethod
    def _link(child: QuotaNode, parent: QuotaNode) -> None:
        child.parent = parent
        parent.children.append(child)

    def roots(self) -> list[QuotaNode]:
        nodes = [*self.cqs.values(), *self.cohorts.values()]
        return [n for n in nodes if n.parent is None]

    def _compute_subtree(self, node: QuotaNode) -> None:
        """``SubtreeQuota(cohort) = own nominal + sum(child.SubtreeQuota - localQuota(child))``."""
        subtree = {fr: q.nominal for fr, q in node.quotas.items()}
        for child in node.children:
            self._compute_subtree(child)
            for fr, quota in child.subtree.items():
                subtree[fr] = subtree.get(fr, 0) + quota - child.local.get(fr, 0)
        node.subtree = subtree
        node.local = {}
        for fr, quota in subtree.items():
            limit = node.quotas[fr].lending_limit if fr in node.quotas else None
            if limit is not None:
                node.local[fr] = max(0, quota - limit)

    # ------------------------------------------------------------ usage

    def clone(self) -> QuotaTree:
        """A copy whose usage can change independently (static quota is shared)."""
        twin = QuotaTree.__new__(QuotaTree)
        twin.inactive = set(self.inactive)
        twin.journal = None
        mapping: dict[int, QuotaNode] = {}
        for node in [*self.cqs.values(), *self.cohorts.values()]:
            mapping[id(node)] = QuotaNode(
                node.name, node.is_cq, node.quotas, node.weight, None, [], node.subtree, node.local,
                dict(node.usage),
            )  # fmt: skip
        for node in [*self.cqs.values(), *self.cohorts.values()]:
            copy = mapping[id(node)]
            copy.parent = mapping[id(node.parent)] if node.parent is not None else None
            copy.children = [mapping[id(c)] for c in node.children]
        twin.cqs = {name: mapping[id(n)] for name, n in self.cqs.items()}
        twin.cohorts = {name: mapping[id(n)] for name, n in self.cohorts.items()}
        return twin

    def add_usage(self, cq: str, usage: Mapping[FlavorResource, int]) -> None:
        self._change(cq, tuple(usage.items()), 1)

    def remove_usage(self, cq: str, usage: Mapping[FlavorResource, int]) -> None:
        self._change(cq, tuple(usage.items()), -1)

    def _change(self, cq: str, amounts: tuple[tuple[FlavorResource, int], ...], sign: int) -> None:
        node = self.cqs[cq]
        for fr, amount in amounts:
            _change_usage(node, fr, sign * amount)
        if self.journal is not None:
            self.journal.append((cq, amounts, sign))

    def replay(self, changes: Iterable[Change], sign: int = 1) -> None:
        """Apply ``changes`` (``sign`` -1: take them back; pass them newest first)."""
        for cq, amounts, change_sign in changes:
            self._change(cq, amounts, sign * change_sign)

    def usage(self, cq: str) -> dict[FlavorResource, int]:
        return dict(self.cqs[cq].usage)


Change = tuple[
    str, tuple[tuple[FlavorResource, int], ...], int
]  # (ClusterQueue, amounts, +1 add / -1 remove)


class KeptView:
    """The cycle's copy of a ``QuotaTree``, kept from cycle to cycle (upstream keeps its cache's snapshot
    the same way rather than building one per cycle). ``begin`` brings it level with the tree by replaying
    the tree's journal; ``end`` takes back what the cycle did to it. A new tree (reconfiguration) is copied
    once."""

    def __init__(self) -> None:
        self._view: QuotaTree | None = None
        self._source: QuotaTree | None = None

    def begin(self, tree: QuotaTree) -> QuotaTree:
        view = self._view
        if view is None or self._source is not tree or tree.journal is None:
            view = self._view = tree.clone()
            self._source = tree
        else:
            view.replay(tree.journal)
        tree.journal = []
        view.journal = []
        return view

    def end(self) -> None:
        view = self._view
        if view is not None and view.journal is not None:
            changes, view.journal = view.journal, None
            view.replay(reversed(changes), -1)


def _contribution(node: QuotaNode, fr: FlavorResource) -> int:
    """What a child's usage adds to its parent's: the part beyond its local (non-lent) quota."""
    return max(0, node.usage.get(fr, 0) - node.local.get(fr, 0))


def _change_usage(node: QuotaNode, fr: FlavorResource, delta: int) -> None:
    while delta:
        before = _contribution(node, fr)
        node.usage[fr] = node.usage.get(fr, 0) + delta
        if node.parent is None:
            return
        delta = _contribution(node, fr) - before
        node = node.parent


# ---------------------------------------------------------------- capacity queries


def local_available(node: QuotaNode, fr: FlavorResource) -> int:
    return max(0, node.local.get(fr, 0) - node.usage.get(fr, 0))


def available(node: QuotaNode, fr: FlavorResource) -> int:
    """How much more ``node`` can use of ``fr`` now: own unlent quota plus what the tree above lends.

    May be negative after a quota shrink.
    """
    if node.parent is None:
        return node.subtree.get(fr, 0) - node.usage.get(fr, 0)
    from_parent = available(node.parent, fr)
    limit = node.borrowing_limit(fr)
    if limit is not None:
        local = node.local.get(fr, 0)
        visible = node.subtree.get(fr, 0) - local
        used_beyond_local = max(0, node.usage.get(fr, 0) - local)
        from_parent = min(from_parent, visible - used_beyond_local + limit)
    return local_available(node, fr) + from_parent


def potential_available(node: QuotaNode, fr: FlavorResource) -> int:
    """The most ``node`` could use of ``fr`` with the rest of the tree idle."""
    if node.parent is None:
        return node.subtree.get(fr, 0)
    total = node.local.get(fr, 0) + potential_available(node.parent, fr)
    limit = node.borrowing_limit(fr)
    if limit is not None:
        total = min(total, node.subtree.get(fr, 0) + limit)
    return total


def borrowing_with(node: QuotaNode, fr: FlavorResource, extra: int) -> bool:
    return node.usage.get(fr, 0) + extra > node.subtree.get(fr, 0)


def is_borrowing(node: QuotaNode, fr: FlavorResource) -> bool:
    return borrowing_with(node, fr, 0)


def is_within_nominal(node: QuotaNode, frs: Iterable[FlavorResource]) -> bool:
    return all(node.usage.get(fr, 0) <= node.subtree.get(fr, 0) for fr in frs)


def lowest_fitting_subtree_height(cq: QuotaNode, fr: FlavorResource, extra: int) -> tuple[int, bool]:
    """The borrow level of ``extra`` more ``fr``: height of the lowest subtree whose quota covers it.

    Second value: that subtree is below the root (reclaiming inside it may help). kueue classical
    ``FindHeightOfLowestSubtreeThatFits``.
    """
    if not borrowing_with(cq, fr, extra) or cq.parent is None:
        return 0, cq.parent is not None
    remaining = extra - local_available(cq, fr)
    for node in cq.path_to_root():
        if not borrowing_with(node, fr, remaining):
            return node.height(), node.parent is not None
        remaining -= local_available(node, fr)
    return cq.root().height(), False


def fits_in_quota(
    node: QuotaNode, requests: Mapping[FlavorResource, int]
) -> tuple[bool, dict[FlavorResource, int]]:
    """Whether ``requests`` fit the node's subtree quota, and what remains to be found above it."""
    fits = all(node.usage.get(fr, 0) + v <= node.subtree.get(fr, 0) for fr, v in requests.items())
    remaining = {fr: max(0, v - local_available(node, fr)) for fr, v in requests.items()}
    return fits, remaining
