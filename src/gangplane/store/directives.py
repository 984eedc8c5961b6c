"""The shape of strategic-merge-patch directives, checked before the patch is applied.

Upstream (``apimachinery/pkg/util/strategicpatch``) refuses a ``$patch`` other than ``replace``, ``merge``
or ``delete``, and ``$retainKeys``, ``$setElementOrder/<list>`` and ``$deleteFromPrimitiveList/<list>``
values that are not lists (the API server answers 400, ``interpretStrategicMergePatchError``). The patch
logic itself (``patch.py``) ignores what it does not use; this walk makes sure nothing malformed is taken
silently. Iterative, so a deep body cannot exhaust the stack.
"""

from __future__ import annotations

from typing import Any

from gangplane.errors import BadRequest

PATCH_DIRECTIVES = ("replace", "merge", "delete")
_LIST_DIRECTIVES = ("$setElementOrder/", "$deleteFromPrimitiveList/")


def _problem(key: str, value: Any) -> str | None:
    if key == "$patch" and value not in PATCH_DIRECTIVES:
        return f"invalid patch type {value!r}: $patch must be one of {', '.join(PATCH_DIRECTIVES)}"
    if key == "$retainKeys" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return "$retainKeys must be a list of strings"
    if key.startswith(_LIST_DIRECTIVES) and not isinstance(value, list):
        return f"{key} must be a list"
    return None


def check(patch: Any) -> None:
    """Raise 400 ``BadRequest`` for the first malformed directive anywhere in ``patch``."""
    if not isinstance(patch, dict):
        raise BadRequest("a strategic merge patch must be a JSON object")
    stack: list[Any] = [patch]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            for key, value in item.items():
                problem = _problem(str(key), value)
                if problem is not None:
                    raise BadRequest(f"the strategic merge patch is malformed: {problem}")
                stack.append(value)
