"""Shapes shared by several scheduling CRDs (label selectors), and the key renaming of version conversions."""

from __future__ import annotations

from typing import Any

from gangplane.api.base import OpenModel


class LabelSelectorRequirement(OpenModel):
    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist
    values: list[str] | None = None


class LabelSelector(OpenModel):
    """``metav1.LabelSelector``: ``{}`` selects everything, while a missing selector is the caller's call."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


def rename_key(data: Any, old: str, new: str) -> Any:
    """Move ``old`` to ``new`` in a wire mapping unless ``new`` is set already; non-mappings pass through.

    For ``mode="before"`` validators reading an older API version: the input is never mutated.
    """
    if isinstance(data, dict) and old in data:
        data = dict(data)
        value = data.pop(old)
        data.setdefault(new, value)
    return data
