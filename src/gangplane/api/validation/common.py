"""Shared pieces of the validators: the result type, field paths and the OpenAPI-style checks.

Messages follow the Kubernetes API server's wording for the CRD schema keywords (``maxLength``, ``maxItems``,
``minimum``, ``enum``, list-map keys) so that a denial reads the same as on a real cluster.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic.alias_generators import to_snake

from gangplane.errors import CauseType, FieldError

Errors = list[FieldError]

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
HTTP_PATH = re.compile(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$")


@dataclass
class Validation:
    """Every field error and every warning of one validation; ``ok`` when there are no errors."""

    errors: Errors = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def extend(self, other: Validation) -> Validation:
        self.errors.extend(other.errors)
        self.warnings.extend(other.warnings)
        return self


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def max_length(path: str, value: str | None, limit: int) -> Errors:
    if value is None or len(value) <= limit:
        return []
    return [FieldError(path, CauseType.TOO_LONG, f"may not be more than {limit} bytes", value)]


def length_between(path: str, value: str | None, low: int, high: int) -> Errors:
    if value is not None and len(value) < low:
        return [FieldError(path, CauseType.INVALID, f"should be at least {low} chars long", value)]
    return max_length(path, value, high)


def max_items(path: str, items: Sequence[Any] | None, limit: int) -> Errors:
    if items is None or len(items) <= limit:
        return []
    return [FieldError(path, CauseType.TOO_MANY, f"must have at most {limit} items", len(items))]


def minimum(path: str, value: int | None, low: int, detail: str | None = None) -> Errors:
    if value is None or value >= low:
        return []
    return [FieldError(path, CauseType.INVALID, detail or f"should be greater than or equal to {low}", value)]


def one_of(path: str, value: str | None, allowed: Sequence[str]) -> Errors:
    if value is None or value in allowed:
        return []
    shown = ", ".join(f'"{a}"' for a in allowed)
    return [FieldError(path, CauseType.NOT_SUPPORTED, f"supported values: {shown}", value)]


def unique_by(path: str, items: Iterable[Any] | None, key: Callable[[Any], Any], key_name: str) -> Errors:
    """List-map semantics: the second and later items with an already-seen key are duplicates."""
    seen: set[Any] = set()
    errors: Errors = []
    for i, item in enumerate(items or []):
        value = key(item)
        if value in seen:
            duplicate = FieldError(index(path, i), CauseType.DUPLICATE, "Duplicate value", {key_name: value})
            errors.append(duplicate)
        seen.add(value)
    return errors


def key_of(item: Any, key: str) -> Any:
    """The wire field ``key`` of a model or a dict (None when absent)."""
    return item.get(key) if isinstance(item, dict) else getattr(item, to_snake(key), None)


def list_map(path: str, items: Sequence[Any] | None, limit: int, key: str = "name") -> Errors:
    """``maxItems`` plus ``x-kubernetes-list-type: map`` keyed by ``key`` (required, unique)."""
    errors = max_items(path, items, limit)
    for i, item in enumerate(items or []):
        if isinstance(item, dict) and key not in item:
            errors.append(FieldError(child(index(path, i), key), CauseType.REQUIRED, "Required value"))
    return errors + unique_by(path, items, lambda item: key_of(item, key), key)


def dns1123_subdomain(path: str, value: str) -> Errors:
    """``metadata.name`` of most objects (apimachinery ``IsDNS1123Subdomain``)."""
    if len(value) > 253:
        return [FieldError(path, CauseType.INVALID, "must be no more than 253 characters", value)]
    if DNS1123_SUBDOMAIN.match(value):
        return []
    detail = (
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
        "and must start and end with an alphanumeric character (e.g. 'example.com')"
    )
    return [FieldError(path, CauseType.INVALID, detail, value)]


def domain_prefixed_path(path: str, value: str) -> Errors:
    """apimachinery ``IsDomainPrefixedPath``: ``<DNS-1123 subdomain>/<HTTP path>``, e.g. ``example.com/x``."""
    if not value:
        return [FieldError(path, CauseType.REQUIRED, "Required value")]
    host, slash, rest = value.partition("/")
    if not slash or not host or not rest:
        detail = 'must be a domain-prefixed path (such as "acme.io/foo")'
        return [FieldError(path, CauseType.INVALID, detail, value)]
    errors = dns1123_subdomain(path, host)
    if not HTTP_PATH.match(rest):
        detail = "must be a valid HTTP path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"
        errors.append(FieldError(path, CauseType.INVALID, detail, rest))
    return errors
