"""Kubernetes resource quantities: parsing through lightkube, canonical formatting here.

Sums are written in Kubernetes canonical form (``750m``, ``34``, ``132Gi``) so rendered PodGroups read like
the ones a real cluster shows. Parsing is lightkube's ``parse_quantity`` (a bare ``Decimal`` in base units).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Annotated, Any

from lightkube.utils.quantity import parse_quantity as _lightkube_parse
from pydantic import BeforeValidator

_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_DECIMAL = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


def parse(text: str | int | float) -> Decimal:
    """The value of a quantity in base units; ``ValueError`` when it is not a quantity."""
    value = _parse_text(str(text))
    if value is None:
        raise ValueError(f"quantities must match the regular expression of Kubernetes: {text!r}")
    return value


@functools.lru_cache(maxsize=4096)
def _parse_text(text: str) -> Decimal | None:
    """Every pod create validates a dozen quantities, nearly always the same few strings; lightkube compiles
    its regular expression on each call. (``Decimal`` is immutable, so cached values are safe to share.)"""
    return _lightkube_parse(text)


def is_binary(text: str | int) -> bool:
    return str(text).rstrip().endswith("i")


def format_quantity(value: Decimal, *, binary: bool = False) -> str:
    """Canonical form: the largest suffix that keeps an integer mantissa; milli-units below one."""
    if value != value.to_integral_value():
        milli = (value * 1000).to_integral_value()
        return f"{int(milli)}m" if milli % 1000 else str(int(milli // 1000))
    whole = int(value)
    for suffix, factor in (*_BINARY, *_DECIMAL) if binary else _DECIMAL:
        if whole and whole % factor == 0:
            return f"{whole // factor}{suffix}"
    return str(whole)


def _check(value: Any) -> str | int:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError("quantities must be strings or numbers")
    parse(value)
    return value if isinstance(value, int) else str(value)


Quantity = Annotated[str | int, BeforeValidator(_check)]
"""A quantity kept as written: ``2`` stays an integer (the CRDs say int-or-string), ``32Gi`` a string."""

ResourceList = dict[str, Quantity]


def add_lists(lists: Iterable[Mapping[str, str | int]], scale: Iterable[int] | None = None) -> dict[str, str]:
    """Sum resource lists (optionally each times a count), keeping each resource's binary/decimal style."""
    totals: dict[str, Decimal] = {}
    binary: dict[str, bool] = {}
    counts = list(scale) if scale is not None else None
    for i, resources in enumerate(lists):
        factor = counts[i] if counts is not None else 1
        for name, text in resources.items():
            totals[name] = totals.get(name, Decimal(0)) + parse(text) * factor
            binary.setdefault(name, is_binary(text))
    return {name: format_quantity(totals[name], binary=binary[name]) for name in sorted(totals)}
