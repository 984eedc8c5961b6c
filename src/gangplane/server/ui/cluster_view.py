"""Nodes as dashboard rows: allocation bars (requested vs allocatable), who runs where, taints, cordons and
the nodes Slurm places pods on. Pure.

Requests are what kube-scheduler counts (``effective_requests``: containers, init containers, sidecars and
overhead) over the pods bound to the node that have not finished.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gangplane.api.scheduling.slurm import EXTERNAL_NODE_LABEL, MANAGED_NODE_TAINT, SLURM_NODE_NAME_LABEL
from gangplane.schedulers.core.objects import TERMINAL_PHASES, effective_requests
from gangplane.schedulers.core.resources import CPU, GPU, MEMORY, amounts
from gangplane.server.ui import facts
from gangplane.store.base import Object

BAR_RESOURCES = (CPU, MEMORY, GPU)
_GIB = 1024**3


@dataclass(frozen=True, slots=True)
class Bar:
    resource: str
    requested: int
    allocatable: int

    @property
    def percent(self) -> int:
        if self.allocatable <= 0:
            return 100 if self.requested else 0
        return min(100, round(100 * self.requested / self.allocatable))

    @property
    def text(self) -> str:
        return f"{show(self.resource, self.requested)} / {show(self.resource, self.allocatable)}"


@dataclass(frozen=True, slots=True)
class Placement:
    """The pods of one TrainJob (``job`` empty: pods of no TrainJob) on one node."""

    job: str
    pods: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NodeRow:
    name: str
    ready: bool
    cordoned: bool
    slurm: bool
    taints: tuple[str, ...]
    bars: tuple[Bar, ...]
    placements: tuple[Placement, ...]
    pod_count: int


def show(resource: str, amount: int) -> str:
    """An amount in the unit people read: cores, GiB, whole devices."""
    if resource == CPU:
        cores = amount / 1000
        return f"{cores:g}" if cores == int(cores) or cores >= 10 else f"{cores:.1f}"
    if resource == MEMORY:
        gib = amount / _GIB
        return f"{gib:.0f}Gi" if gib == int(gib) or gib >= 10 else f"{gib:.1f}Gi"
    return str(amount)


def _taints(node: Mapping[str, Any]) -> tuple[str, ...]:
    taints = (node.get("spec") or {}).get("taints") or []
    return tuple(
        f"{t.get('key')}{'=' + str(t['value']) if t.get('value') else ''}:{t.get('effect') or 'NoSchedule'}"
        for t in taints
    )


def _ready(node: Mapping[str, Any]) -> bool:
    found = facts.condition(node, "Ready")
    return found is None or found.get("status") == "True"


def is_slurm_node(node: Mapping[str, Any]) -> bool:
    """A node Slurm places pods on (the Slurm Bridge's label or taint, or Slinky's external-node label)."""
    labels = facts.meta(node).get("labels") or {}
    taints = (node.get("spec") or {}).get("taints") or []
    return (
        SLURM_NODE_NAME_LABEL in labels
        or EXTERNAL_NODE_LABEL in labels
        or any(t.get("key") == MANAGED_NODE_TAINT for t in taints)
    )


def _allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    status = node.get("status") or {}
    return amounts(status.get("allocatable") or status.get("capacity") or {})


def _placements(pods: list[Object]) -> tuple[Placement, ...]:
    grouped: dict[str, list[str]] = {}
    for pod in pods:
        grouped.setdefault(facts.job_of(pod) or "", []).append(str(facts.meta(pod).get("name")))
    return tuple(Placement(job, tuple(sorted(names))) for job, names in sorted(grouped.items()))


def node_row(node: Object, pods: list[Object]) -> NodeRow:
    requested: dict[str, int] = {}
    for pod in pods:
        for name, amount in effective_requests(pod.get("spec") or {}).items():
            requested[name] = requested.get(name, 0) + amount
    allocatable = _allocatable(node)
    bars = tuple(
        Bar(r, requested.get(r, 0), allocatable.get(r, 0))
        for r in BAR_RESOURCES
        if r != GPU or allocatable.get(r) or requested.get(r)
    )
    return NodeRow(
        name=str(facts.meta(node).get("name") or ""),
        ready=_ready(node),
        cordoned=bool((node.get("spec") or {}).get("unschedulable")),
        slurm=is_slurm_node(node),
        taints=_taints(node),
        bars=bars,
        placements=_placements(pods),
        pod_count=len(pods),
    )


def node_rows(nodes: Iterable[Object], pods: Iterable[Object]) -> list[NodeRow]:
    """One row per node, by name, with the unfinished pods bound to it."""
    on_node: dict[str, list[Object]] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and facts.phase(pod) not in TERMINAL_PHASES:
            on_node.setdefault(str(node), []).append(pod)
    rows = [node_row(n, on_node.get(str(facts.meta(n).get("name")), [])) for n in nodes]
    return sorted(rows, key=lambda r: r.name)


def totals(rows: Iterable[NodeRow]) -> list[Bar]:
    """The whole cluster's bars: sums over the nodes."""
    requested: dict[str, int] = {}
    allocatable: dict[str, int] = {}
    for row in rows:
        for bar in row.bars:
            requested[bar.resource] = requested.get(bar.resource, 0) + bar.requested
            allocatable[bar.resource] = allocatable.get(bar.resource, 0) + bar.allocatable
    return [Bar(r, requested.get(r, 0), allocatable[r]) for r in BAR_RESOURCES if r in allocatable]


__all__ = [
    "BAR_RESOURCES",
    "Bar",
    "NodeRow",
    "Placement",
    "is_slurm_node",
    "node_row",
    "node_rows",
    "show",
    "totals",
]
