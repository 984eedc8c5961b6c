"""KAI gang thresholds: a PodGroup's SubGroup tree (leaves need ``minMember`` pods, inner nodes
``minSubGroup`` satisfied children; kai.md §4.1) and the smallest set of pending pods that satisfies it.

Pure: counts in, pod choices out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

ROOT = ""


@dataclass(slots=True)
class SubGroupNode:
    """One tree node. ``min_member`` for leaves, ``min_sub_group`` for inner nodes (the root may carry
    either, as a flat PodGroup's ``minMember`` or a JobSet PodGroup's ``minSubGroup``)."""

    name: str
    min_member: int | None = None
    min_sub_group: int | None = None
    children: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class GangTree:
    nodes: Mapping[str, SubGroupNode]

    def is_leaf(self, name: str) -> bool:
        return not self.nodes[name].children

    def leaf_of(self, subgroup: str) -> str:
        """Pods name their leaf; a pod without a known SubGroup belongs to the root."""
        return subgroup if subgroup in self.nodes and self.is_leaf(subgroup) else ROOT


def build_tree(
    min_member: int | None, min_sub_group: int | None, sub_groups: Sequence[Mapping[str, object]]
) -> GangTree:
    nodes = {ROOT: SubGroupNode(ROOT, min_member, min_sub_group)}
    for given in sub_groups:
        name = str(given.get("name") or "")
        nodes[name] = SubGroupNode(name, _int(given.get("minMember")), _int(given.get("minSubGroup")))
    for given in sub_groups:
        parent = str(given.get("parent") or ROOT)
        nodes.get(parent, nodes[ROOT]).children.append(str(given.get("name") or ""))
    for node in nodes.values():
        node.children.sort()
    return GangTree(nodes)


def _int(value: object) -> int | None:
    return None if value is None else int(str(value))


def satisfied(tree: GangTree, placed: Mapping[str, int], name: str = ROOT) -> bool:
    """Leaf: ``placed[leaf] ≥ minMember``; inner: ≥ ``minSubGroup`` satisfied children (all if unset)."""
    node = tree.nodes[name]
    if not node.children:
        return placed.get(name, 0) >= (node.min_member or 0)
    done = sum(1 for child in node.children if satisfied(tree, placed, child))
    own = placed.get(name, 0) >= (node.min_member or 0)
    wanted = len(node.children) if node.min_sub_group is None else node.min_sub_group
    return done >= wanted and own


def above_minimum(tree: GangTree, placed: Mapping[str, int]) -> bool:
    """Has any leaf more pods placed than its ``minMember`` (an elastic job growing past its gang)?"""
    return any(
        placed.get(name, 0) > (node.min_member or 0) for name, node in tree.nodes.items() if not node.children
    )


def shortfall(tree: GangTree, placed: Mapping[str, int], pending: Mapping[str, int]) -> dict[str, int] | None:
    """Per leaf, how many more pods to place so the root is satisfied — the cheapest children first —
    or ``None`` when the pending pods cannot get there."""
    return _need(tree, ROOT, placed, pending)


def _need(
    tree: GangTree, name: str, placed: Mapping[str, int], pending: Mapping[str, int]
) -> dict[str, int] | None:
    node = tree.nodes[name]
    missing_own = max((node.min_member or 0) - placed.get(name, 0), 0)
    if missing_own > pending.get(name, 0):
        return None
    plan = {name: missing_own} if missing_own else {}
    if not node.children:
        return plan
    options = [(child, _need(tree, child, placed, pending)) for child in node.children]
    feasible = sorted(
        ((sum(p.values()), child, p) for child, p in options if p is not None), key=lambda x: (x[0], x[1])
    )
    wanted = len(node.children) if node.min_sub_group is None else node.min_sub_group
    if len(feasible) < wanted:
        return None
    for _, _, child_plan in feasible[:wanted]:
        plan.update({leaf: count for leaf, count in child_plan.items() if count})
    return plan
