"""PriorityClass values as schedulers read them, with broken objects set aside instead of failing the pass.

The API server rejects a PriorityClass whose ``value`` is not an int32, but a store written before that check
(or a real cluster reached through a permissive proxy) can still hold one. One such object must not stop every
scheduler: it is listed in ``invalid`` with a message, and only the jobs that name it are held back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INVALID_PRIORITY_CLASS = "InvalidPriorityClass"


@dataclass(frozen=True, slots=True)
class PriorityClasses:
    values: Mapping[str, int] = field(default_factory=dict)
    invalid: Mapping[str, str] = field(default_factory=dict)  # name -> why it cannot be used

    def problem(self, name: str | None) -> str | None:
        """Why a job naming PriorityClass ``name`` cannot be ordered, or ``None``."""
        return self.invalid.get(name) if name else None


def _problem(value: Any) -> str | None:
    if value is None:
        return "value is required"
    if isinstance(value, bool) or not isinstance(value, int):
        return f"value must be an integer, got {value!r}"
    if not INT32_MIN <= value <= INT32_MAX:
        return f"value {value} is outside the int32 range"
    return None


def priority_classes(objs: Iterable[Mapping[str, Any]]) -> PriorityClasses:
    values: dict[str, int] = {}
    invalid: dict[str, str] = {}
    for obj in objs:
        name = str((obj.get("metadata") or {}).get("name") or "")
        problem = _problem(obj.get("value"))
        if problem is None:
            values[name] = int(obj["value"])
        else:
            invalid[name] = f"PriorityClass {name}: {problem}"
    return PriorityClasses(values, invalid)


__all__ = ["INVALID_PRIORITY_CLASS", "PriorityClasses", "priority_classes"]
