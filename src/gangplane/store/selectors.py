"""Label and field selectors in Kubernetes syntax, parsed once and matched many times.

Parsing is strict: anything the API server would reject raises ``errors.Invalid`` so a typo never silently
matches everything. Matching is pure and never mutates the object.

Label selectors: ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x,y)``, ``a`` (exists), ``!a``
(does not exist), comma-separated and ANDed. Field selectors: ``=``, ``==``, ``!=`` on the fields in
``FIELDS``; a missing field compares as ``""`` (so ``spec.nodeName=`` selects unscheduled pods).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gangplane.errors import CauseType, FieldError, Invalid

_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_SET_REQ = re.compile(r"^(?P<key>\S+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_EQ_REQ = re.compile(r"^(?P<key>[^=!\s]+)\s*(?P<op>==|!=|=)\s*(?P<value>\S*)$")

FIELDS: Mapping[str, tuple[str, ...]] = {
    "metadata.name": ("metadata", "name"),
    "metadata.namespace": ("metadata", "namespace"),
    "spec.nodeName": ("spec", "nodeName"),
    "status.phase": ("status", "phase"),
}


class Op(StrEnum):
    EQUALS = "="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: Op
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op is Op.EXISTS:
            return present
        if self.op is Op.DOES_NOT_EXIST:
            return not present
        if self.op in (Op.EQUALS, Op.IN):
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values


@dataclass(frozen=True, slots=True)
class Selector:
    """A conjunction of requirements; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


def _invalid(field: str, text: str, detail: str) -> Invalid:
    return Invalid("ListOptions", "", [FieldError(field, CauseType.INVALID, detail, text)])


def split_terms(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            terms.append(text[start:i].strip())
            start = i + 1
    terms.append(text[start:].strip())
    return terms


def _check_key(key: str, text: str) -> str:
    if not _KEY.match(key) or len(key.split("/")[-1]) > 63:
        raise _invalid("labelSelector", text, f"invalid label key {key!r}")
    return key


def _check_values(values: list[str], text: str) -> frozenset[str]:
    for value in values:
        if len(value) > 63 or not _VALUE.match(value):
            raise _invalid("labelSelector", text, f"invalid label value {value!r}")
    return frozenset(values)


def _parse_requirement(term: str, text: str) -> Requirement:
    if m := _SET_REQ.match(term):
        values = [v.strip() for v in m["values"].split(",")] if m["values"].strip() else []
        if not values:
            raise _invalid("labelSelector", text, f"{m['op']} needs at least one value")
        op = Op.IN if m["op"] == "in" else Op.NOT_IN
        return Requirement(_check_key(m["key"], text), op, _check_values(values, text))
    if m := _EQ_REQ.match(term):
        op = Op.NOT_EQUALS if m["op"] == "!=" else Op.EQUALS
        return Requirement(_check_key(m["key"], text), op, _check_values([m["value"]], text))
    if term.startswith("!"):
        return Requirement(_check_key(term[1:].strip(), text), Op.DOES_NOT_EXIST)
    return Requirement(_check_key(term, text), Op.EXISTS)


def parse_label_selector(text: str) -> Selector:
    """Parse ``text``; raises ``Invalid`` on any syntax error."""
    if not text.strip():
        return Selector()
    terms = split_terms(text)
    if any(not t for t in terms):
        raise _invalid("labelSelector", text, "empty requirement")
    return Selector(tuple(_parse_requirement(t, text) for t in terms))


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    path: tuple[str, ...]
    value: str
    equal: bool

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return (_field_value(obj, self.path) == self.value) == self.equal


def _field_value(obj: Mapping[str, Any], path: tuple[str, ...]) -> str:
    node: Any = obj
    for part in path:
        node = node.get(part) if isinstance(node, Mapping) else None
    return "" if node is None else str(node)


def _parse_field_term(term: str, text: str) -> FieldRequirement:
    m = _EQ_REQ.match(term)
    if not m:
        raise _invalid("fieldSelector", text, f"invalid field selector term {term!r}")
    if m["key"] not in FIELDS:
        raise _invalid("fieldSelector", text, f"field label not supported: {m['key']}")
    return FieldRequirement(FIELDS[m["key"]], m["value"], m["op"] != "!=")


def parse_field_selector(text: str) -> tuple[FieldRequirement, ...]:
    """Parse ``text``; raises ``Invalid`` for unsupported fields or syntax."""
    if not text.strip():
        return ()
    return tuple(_parse_field_term(t, text) for t in split_terms(text))


@dataclass(frozen=True, slots=True)
class ObjectFilter:
    """Namespace, label and field filters together: what list, watch and deletecollection select."""

    namespace: str | None
    labels: Selector
    fields: tuple[FieldRequirement, ...]

    def matches(self, obj: Mapping[str, Any]) -> bool:
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace", "") != self.namespace:
            return False
        if not self.labels.empty and not self.labels.matches(meta.get("labels") or {}):
            return False
        return all(f.matches(obj) for f in self.fields)


def build_filter(namespace: str | None, label_selector: str, field_selector: str) -> ObjectFilter:
    return ObjectFilter(namespace, parse_label_selector(label_selector), parse_field_selector(field_selector))
