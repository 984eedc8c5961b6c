"""Small pure readings of wire objects that every dashboard view shares: names, conditions, ages, owners."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gangplane.api.jobset import JOBSET_NAME_LABEL
from gangplane.clock import parse_rfc3339
from gangplane.store.base import Object


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def key(obj: Mapping[str, Any]) -> str:
    m = meta(obj)
    return f"{m.get('namespace') or ''}/{m.get('name') or ''}"


def timestamp(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return parse_rfc3339(text)
    except ValueError:
        return None


def created(obj: Mapping[str, Any]) -> float:
    return timestamp(meta(obj).get("creationTimestamp")) or 0.0


def age(since: float | None, now: float) -> str:
    """``kubectl``'s short age: ``42s``, ``5m``, ``3h``, ``2d``."""
    if since is None:
        return ""
    seconds = max(0, int(now - since))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def conditions(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list((obj.get("status") or {}).get("conditions") or [])


def condition(obj: Mapping[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in conditions(obj) if c.get("type") == type_), None)


def is_true(obj: Mapping[str, Any], type_: str) -> bool:
    found = condition(obj, type_)
    return found is not None and found.get("status") == "True"


def phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def deleting(obj: Mapping[str, Any]) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def job_of(pod: Mapping[str, Any]) -> str | None:
    """``namespace/trainjob`` of a TrainJob's pod: its JobSet carries the TrainJob's name."""
    name = (meta(pod).get("labels") or {}).get(JOBSET_NAME_LABEL)
    return f"{meta(pod).get('namespace') or ''}/{name}" if name else None


def pods_by_job(pods: Iterable[Object]) -> dict[str, list[Object]]:
    grouped: dict[str, list[Object]] = {}
    for pod in pods:
        job = job_of(pod)
        if job is not None:
            grouped.setdefault(job, []).append(pod)
    return grouped


def by_key(objects: Iterable[Object]) -> dict[str, Object]:
    return {key(o): o for o in objects}


def page(rows: list[Any], number: int, size: int) -> tuple[list[Any], int]:
    """Rows of page ``number`` (0-based, clamped) and the page count."""
    pages = max(1, -(-len(rows) // size))
    number = min(max(0, number), pages - 1)
    return rows[number * size : (number + 1) * size], pages


__all__ = [
    "age",
    "by_key",
    "condition",
    "conditions",
    "created",
    "deleting",
    "is_true",
    "job_of",
    "key",
    "meta",
    "page",
    "phase",
    "pods_by_job",
    "timestamp",
]
