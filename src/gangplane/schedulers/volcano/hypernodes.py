"""The HyperNode tree: which nodes each HyperNode spans, its tier, and the search gradients of a
topology-constrained job (volcano.md §4, §9; upstream ``pkg/scheduler/api/hyper_node_info.go``).

A virtual root one tier above the highest real tier holds every node, so soft topology ("tightest tier
first, fall back up to the whole cluster") is hard topology up to that root. A HyperNode claimed by two
parents, or a parent cycle, marks the tree not ready: topology-constrained jobs then wait (upstream skips
them). Pure: built from wire dicts and node names/labels.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from gangplane.api.scheduling import volcano as vc
from gangplane.schedulers.core.objects import NodeInfo

Mask = npt.NDArray[np.bool_]
CLUSTER_ROOT = "<cluster-top-hypernode>"


@dataclass(frozen=True, slots=True)
class HyperNodeInfo:
    name: str
    tier: int
    nodes: Mask  # over the snapshot's node rows


@dataclass(frozen=True, slots=True)
class HyperNodeTree:
    hypernodes: Mapping[str, HyperNodeInfo]
    tier_names: Mapping[str, int]
    root_tier: int
    ready: bool = True
    problem: str = ""

    def eligible(self, highest_tier: int) -> list[list[HyperNodeInfo]]:
        """HyperNodes of tier ≤ ``highest_tier`` grouped by tier, tightest first, names sorted."""
        tiers = sorted({h.tier for h in self.hypernodes.values() if h.tier <= highest_tier})
        return [
            sorted((h for h in self.hypernodes.values() if h.tier == tier), key=lambda h: h.name)
            for tier in tiers
        ]

    def containing(self, rows: Sequence[int], highest_tier: int) -> list[HyperNodeInfo]:
        """HyperNodes of tier ≤ ``highest_tier`` holding all of ``rows`` (a running job's anchor)."""
        return [
            h for tier in self.eligible(highest_tier) for h in tier if all(bool(h.nodes[row]) for row in rows)
        ]


def _label_match(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or ():
        present, values = expr.get("key") in labels, expr.get("values") or []
        value = labels.get(expr.get("key", ""))
        ok = {
            "In": present and value in values,
            "NotIn": not present or value not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(expr.get("operator", ""), False)
        if not ok:
            return False
    return True


def _node_member(selector: Mapping[str, Any], node: NodeInfo) -> bool:
    if (exact := selector.get("exactMatch")) is not None:
        return bool(exact.get("name") == node.name)
    if (regex := selector.get("regexMatch")) is not None:
        try:
            return re.fullmatch(regex.get("pattern") or "", node.name) is not None
        except re.error:
            return False
    if (labels := selector.get("labelMatch")) is not None:
        return _label_match(labels, node.labels)
    return False


@dataclass(slots=True)
class _Raw:
    tier: int
    direct: Mask
    children: list[str]


def _parse(objs: Sequence[Mapping[str, Any]], nodes: Sequence[NodeInfo]) -> dict[str, _Raw]:
    raw: dict[str, _Raw] = {}
    for obj in sorted(objs, key=lambda o: o["metadata"]["name"]):
        spec = obj.get("spec") or {}
        direct = np.zeros(len(nodes), dtype=bool)
        children: list[str] = []
        for member in spec.get("members") or ():
            selector = member.get("selector") or {}
            if member.get("type") == vc.MemberType.HYPER_NODE:
                if (exact := selector.get("exactMatch")) is not None:
                    children.append(exact.get("name", ""))
                continue
            direct |= np.array([_node_member(selector, n) for n in nodes], dtype=bool)
        raw[obj["metadata"]["name"]] = _Raw(int(spec.get("tier") or 0), direct, children)
    return raw


def _problem(raw: Mapping[str, _Raw]) -> str:
    parents: dict[str, str] = {}
    for name, info in raw.items():
        for child in info.children:
            if child in parents and parents[child] != name:
                return f"HyperNode {child} has two parents ({parents[child]}, {name})"
            parents[child] = name
    for start in raw:
        seen, at = {start}, start
        while (at := parents.get(at, "")) and at in raw:
            if at in seen:
                return f"HyperNodes {', '.join(sorted(seen))} form a cycle"
            seen.add(at)
    return ""


def _span(name: str, raw: Mapping[str, _Raw], memo: dict[str, Mask]) -> Mask:
    if name not in memo:
        mask = raw[name].direct.copy()
        for child in raw[name].children:
            if child in raw:
                mask |= _span(child, raw, memo)
        memo[name] = mask
    return memo[name]


def build_tree(objs: Sequence[Mapping[str, Any]], nodes: Sequence[NodeInfo]) -> HyperNodeTree:
    raw = _parse(objs, nodes)
    tier_names = {
        str(o["spec"]["tierName"]): int(o["spec"].get("tier") or 0)
        for o in objs
        if (o.get("spec") or {}).get("tierName")
    }
    root_tier = max((r.tier for r in raw.values()), default=0) + 1
    everything = np.ones(len(nodes), dtype=bool)
    if problem := _problem(raw):
        root = HyperNodeInfo(CLUSTER_ROOT, root_tier, everything)
        return HyperNodeTree({CLUSTER_ROOT: root}, tier_names, root_tier, ready=False, problem=problem)
    memo: dict[str, Mask] = {}
    infos = {name: HyperNodeInfo(name, r.tier, _span(name, raw, memo)) for name, r in raw.items()}
    infos[CLUSTER_ROOT] = HyperNodeInfo(CLUSTER_ROOT, root_tier, everything)
    return HyperNodeTree(infos, tier_names, root_tier)
