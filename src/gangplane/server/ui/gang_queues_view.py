"""Volcano and KAI queues as trees of rows, from the Queue objects the embedded schedulers keep. Pure.

Volcano: ``spec.deserved`` / ``status.allocated`` / ``spec.capability`` and the weight, under ``spec.parent``
(``root`` when unset). KAI: per resource ``quota`` / ``overQuotaWeight`` / ``limit`` and ``status.allocated``,
under ``spec.parentQueue``. Quantities are shown as written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gangplane.api.scheduling import volcano
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


def kai_rows(queues: Iterable[Object]) -> list[KaiQueueRow]:
    rows = []
    for queue, depth in tree_order(queues, lambda q: (q.get("spec") or {}).get("parentQueue"), None):
        spec, status = queue.get("spec") or {}, queue.get("status") or {}
        allocated = status.get("allocated") or {}
        resources = tuple(
            KaiResource(
                r,
                _text(q.get("quota")),
                _text(q.get("overQuotaWeight")),
                _text(q.get("limit")),
                _text(allocated.get("nvidia.com/gpu" if r == "gpu" else r)),
            )
            for r in KAI_RESOURCES
            if (q := (spec.get("resources") or {}).get(r) or {}) or allocated
        )
        rows.append(
            KaiQueueRow(str(facts.meta(queue).get("name")), depth, _text(spec.get("priority")), resources)
        )
    return rows


__all__ = [
    "KaiQueueRow",
    "KaiResource",
    "VolcanoQueueRow",
    "kai_rows",
    "resource_text",
    "tree_order",
    "volcano_rows",
]
