"""Volcano and KAI queues as trees of rows, from the Queue objects the embedded schedulers keep. Pure.

Volcano: ``spec.deserved`` / ``status.allocated`` / ``spec.capability`` and the weight, under ``spec.parent``
(``root`` when unset). KAI: per resource ``quota`` / ``overQuotaWeight`` / ``limit``, ``status.allocated``
and the fair share, under ``spec.parentQueue``. KAI does not store fair shares; they are recomputed here
with KAI's own division (``schedulers/kai/book.py``) from the ready nodes and the usage the scheduler last
wrote into the leaf queues' status, so they match its last cycle. Quantities are shown as written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from gangplane.api.scheduling import kai, volcano
from gangplane.schedulers.core.resources import CPU, GPU, MEMORY, amounts
from gangplane.schedulers.kai.book import KaiBook
from gangplane.schedulers.kai.model import Res, queue_of
from gangplane.server.ui import facts
from gangplane.store.base import Object

KAI_RESOURCES = ("gpu", "cpu", "memory")


@dataclass(frozen=True, slots=True)
class VolcanoQueueRow:
    name: str
    depth: int
    state: str
    weight: int
    deserved: str
    allocated: str
    capability: str
    counts: str


@dataclass(frozen=True, slots=True)
class KaiResource:
    resource: str
    quota: str
    over_quota_weight: str
    limit: str
    allocated: str
    fair_share: str


@dataclass(frozen=True, slots=True)
class KaiQueueRow:
    name: str
    depth: int
    priority: str
    resources: tuple[KaiResource, ...]


def resource_text(resources: Mapping[str, Any] | None) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted((resources or {}).items())) or "-"


def tree_order(objects: Iterable[Object], parent_of: Any, root: str | None) -> list[tuple[Object, int]]:
    """Objects depth-first under their parents (by name); ones whose parent is missing start a tree."""
    by_name = {str(facts.meta(o).get("name")): o for o in objects}
    children: dict[str | None, list[str]] = {}
    for name, obj in by_name.items():
        parent = parent_of(obj)
        parent = parent if parent in by_name and parent != name else None
        children.setdefault(parent, []).append(name)
    ordered: list[tuple[Object, int]] = []
    seen: set[str] = set()

    def walk(name: str, depth: int) -> None:
        if name in seen:
            return
        seen.add(name)
        ordered.append((by_name[name], depth))
        for child in sorted(children.get(name, [])):
            walk(child, depth + 1)

    for top in sorted(children.get(None, []), key=lambda n: (n != root, n)):
        walk(top, 0)
    for name in sorted(by_name):  # parent cycles: still shown, flat
        walk(name, 0)
    return ordered


def _volcano_parent(queue: Mapping[str, Any]) -> str:
    return str((queue.get("spec") or {}).get("parent") or volcano.ROOT_QUEUE)


def _counts(status: Mapping[str, Any]) -> str:
    parts = [f"{status[k]} {k}" for k in ("pending", "inqueue", "running", "completed") if status.get(k)]
    return ", ".join(parts) or "-"


def volcano_rows(queues: Iterable[Object]) -> list[VolcanoQueueRow]:
    rows = []
    for queue, depth in tree_order(queues, _volcano_parent, volcano.ROOT_QUEUE):
        spec, status = queue.get("spec") or {}, queue.get("status") or {}
        rows.append(
            VolcanoQueueRow(
                str(facts.meta(queue).get("name")),
                depth,
                str(status.get("state") or "Open"),
                int(spec.get("weight") or 1),
                resource_text(spec.get("deserved")),
                resource_text(status.get("allocated")),
                resource_text(spec.get("capability")),
                _counts(status),
            )
        )
    return rows


def _text(value: Any) -> str:
    return "-" if value is None else str(value)


def kai_units(resources: Mapping[str, Any] | None) -> Res:
    """A resource list as KAI's vector: (GPUs, CPU millicores, memory MB)."""
    found = amounts(resources or {})
    return np.array([found.get(GPU, 0), found.get(CPU, 0), found.get(MEMORY, 0) / 1e6], dtype=np.float64)


def _ready(node: Mapping[str, Any]) -> bool:
    ready = facts.condition(node, "Ready")
    return ready is None or ready.get("status") == "True"


def kai_fair_shares(queues: list[Object], nodes: Iterable[Object]) -> dict[str, Res]:
    """Each KAI queue's fair share (GPUs, millicores, MB) out of the ready nodes' allocatable."""
    total = sum(
        (kai_units((n.get("status") or {}).get("allocatable")) for n in nodes if _ready(n)), start=np.zeros(3)
    )
    parents = {(q.get("spec") or {}).get("parentQueue") for q in queues}
    usage = {}
    for q in queues:
        name, status = str(facts.meta(q).get("name")), q.get("status") or {}
        if name not in parents:  # leaves: the book rolls their usage up the tree itself
            usage[name] = (
                kai_units(status.get("allocated")),
                kai_units(status.get("allocatedNonPreemptible")),
                kai_units(status.get("requested")),
            )
    book = KaiBook(total, [queue_of(q) for q in queues], usage)
    return {name: state.fair for name, state in book.states.items()}


def _share_text(resource: str, amount: float) -> str:
    if resource == "cpu":
        return f"{amount / 1000:g}"
    return f"{amount:.0f}M" if resource == "memory" else f"{amount:g}"


def kai_rows(queues: Iterable[Object], nodes: Iterable[Object] = ()) -> list[KaiQueueRow]:
    queues = list(queues)
    fair = kai_fair_shares(queues, nodes)
    rows = []
    for queue, depth in tree_order(queues, lambda q: (q.get("spec") or {}).get("parentQueue"), None):
        name, spec, status = (
            str(facts.meta(queue).get("name")),
            queue.get("spec") or {},
            queue.get("status") or {},
        )
        allocated = status.get("allocated") or {}
        resources = tuple(
            KaiResource(
                r,
                _text(q.get("quota")),
                _text(q.get("overQuotaWeight")),
                _text(q.get("limit")),
                _text(allocated.get("nvidia.com/gpu" if r == "gpu" else r)),
                _share_text(r, float(fair[name][i])),
            )
            for i, r in enumerate(KAI_RESOURCES)
            if (q := (spec.get("resources") or {}).get(r) or {})
            or allocated.get("nvidia.com/gpu" if r == "gpu" else r)
        )
        priority = spec.get("priority")
        shown = f"{kai.DEFAULT_QUEUE_PRIORITY} (default)" if priority is None else str(priority)
        rows.append(KaiQueueRow(name, depth, shown, resources))
    return rows


__all__ = [
    "KaiQueueRow",
    "KaiResource",
    "VolcanoQueueRow",
    "kai_fair_shares",
    "kai_rows",
    "resource_text",
    "tree_order",
    "volcano_rows",
]
