"""A Job's conditions as pure functions: whether it finished, setting a ``JobCondition`` as upstream's
``ensureJobConditionStatus`` does, and its success policy (``matchSuccessPolicy``)."""

from __future__ import annotations

from typing import Any

from gangplane.controllers.job_pods import parse_indexes
from gangplane.controllers.objects import find_condition, spec_of, status_of
from gangplane.store.base import Object


def finished(job: Object) -> bool:
    conditions = status_of(job).get("conditions") or []
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in conditions)


def set_job_condition(
    status: dict[str, Any], type_: str, value: str, reason_message: tuple[str, str], now: str
) -> bool:
    """Add or update a JobCondition; the transition time moves only when the status changes."""
    conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
    reason, message = reason_message
    old = find_condition(conditions, type_)
    if old is not None and (old.get("status"), old.get("reason"), old.get("message")) == (
        value,
        reason,
        message,
    ):
        return False
    since = old["lastTransitionTime"] if old is not None and old.get("status") == value else now
    new = {"type": type_, "status": value, "lastProbeTime": now, "lastTransitionTime": since,
           "reason": reason, "message": message}  # fmt: skip
    status["conditions"] = [new if c is old else c for c in conditions] if old else [*conditions, new]
    return True


def success_policy_met(job: Object, done: set[int]) -> str | None:
    """``matchSuccessPolicy``: the first rule whose ``succeededIndexes`` all succeeded, or of which (or of
    all indexes, without ``succeededIndexes``) at least ``succeededCount`` did; its message, else None."""
    rules = (spec_of(job).get("successPolicy") or {}).get("rules") or []
    for i, rule in enumerate(rules):
        wanted = rule.get("succeededIndexes")
        hit = done & parse_indexes(str(wanted)) if wanted is not None else done
        count = rule.get("succeededCount")
        if (count is not None and len(hit) >= int(count)) or (
            count is None and wanted is not None and hit == parse_indexes(str(wanted))
        ):
            return f"Matched rules at index {i}"
    return None


__all__ = ["finished", "set_job_condition", "success_policy_met"]
