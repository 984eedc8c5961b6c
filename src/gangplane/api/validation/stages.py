"""Every stage's errors in one answer: schema (types, unknown fields, required values) and then the rules that
need a parsed object (names, minimums, CEL rules), instead of stopping at the first stage.

A wire object with schema errors has no model, so the later rules could not run. Here the fields the schema
rejected are set aside (removed; a missing required field takes its parent with it) and the rest is parsed
again, a few rounds at most, so the rules still judge everything else. Errors under a field that was set aside
are not reported twice. Upstream's API server skips CEL rules once a type error is found ("some validation
rules were not checked"); gangplane reports them too, so one fix round is enough (README, "every problem at
once").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gangplane.api.base import ApiModel
from gangplane.api.jsondata import clone
from gangplane.errors import CauseType, FieldError, Invalid

_ROUNDS = 6
_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def path_parts(path: str) -> list[str | int]:
    """``spec.trainer.env[2].name`` -> ``["spec", "trainer", "env", 2, "name"]``."""
    return [int(m[2]) if m[2] is not None else m[1] for m in _PART.finditer(path)]


def _holds(obj: Any, part: str | int) -> bool:
    if isinstance(part, int):
        return isinstance(obj, list) and part < len(obj)
    return isinstance(obj, dict) and part in obj


def _remove(obj: Any, parts: list[str | int]) -> bool:
    """Remove the value at ``parts``; False when the path does not lead to one."""
    if not parts:
        return False
    for part in parts[:-1]:
        if not _holds(obj, part):
            return False
        obj = obj[part]
    if not _holds(obj, parts[-1]):
        return False
    del obj[parts[-1]]
    return True


def _set_aside(error: FieldError) -> list[str | int]:
    """What to remove for ``error``: the field itself, or for a missing required field its parent."""
    parts = path_parts(error.path)
    return parts[:-1] if error.type == CauseType.REQUIRED else parts


def _order(parts: list[str | int]) -> list[str]:
    return [f"{p:09d}" if isinstance(p, int) else p for p in parts]


@dataclass
class Parsed:
    """The model of what the schema accepted (None when nothing could be kept), its errors, and the paths of
    the fields set aside to get there."""

    model: ApiModel | None
    errors: list[FieldError] = field(default_factory=list)
    aside: list[str] = field(default_factory=list)

    def with_rules(self, rule_errors: list[FieldError]) -> list[FieldError]:
        """Schema errors, then the rule errors not about a field set aside (its schema error says why)."""
        kept = [e for e in rule_errors if not any(_under(e.path, a) for a in self.aside)]
        return [*self.errors, *kept]


def _under(path: str, aside: str) -> bool:
    return path == aside or path.startswith((f"{aside}.", f"{aside}["))


def parse_all(obj: dict[str, Any], parse: Callable[[dict[str, Any]], ApiModel]) -> Parsed:
    """Parse ``obj``, setting aside what the schema rejects (later indices first, so earlier ones hold)."""
    current, found = clone(obj), Parsed(None)
    for _ in range(_ROUNDS):
        try:
            found.model = parse(current)
            return found
        except Invalid as exc:
            found.errors += [e for e in exc.causes if e not in found.errors]
            removable = sorted((_set_aside(e) for e in exc.causes), key=_order, reverse=True)
            removed = [p for p in removable if len(p) > 1 and _remove(current, p)]  # never a top-level field
            if not removed:
                break
            found.aside += [_joined(p) for p in removed]
    return found


def _joined(parts: list[str | int]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


__all__ = ["Parsed", "parse_all", "path_parts"]
