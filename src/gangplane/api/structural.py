"""Structural defaulting and pruning: a CRD's ``default:`` values applied to a custom object, and the fields
its schema does not declare found and dropped, as kube-apiserver does.

After k8s.io/apiextensions-apiserver ``pkg/apiserver/schema/defaulting/algorithm.go`` (``Default``): in an
object, every property whose schema has a ``default`` and that is absent, or ``null`` without
``nullable: true``, gets a copy of the default; then every property present (defaults included, so a default
``{}`` picks up its own fields' defaults) is defaulted by its schema, other keys by ``additionalProperties``;
every array item by ``items``; a map value or an item that is a non-nullable ``null`` first takes its schema's
default. Structural schemas allow no ``default`` under ``allOf`` / ``anyOf`` / ``oneOf``
or ``not``, so those are not read.

The schema is compiled once into a tree holding only the nodes with a default at or below them
(``compile_defaults``), so an object is walked only where a default can apply. Pure: the caller hands in the
schema it serves (the API server's generated CRD schemas); nothing here reads a file.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_NONE = object()  # no default declared


@dataclass(frozen=True)
class Defaults:
    """One schema node that has a default, or a default somewhere below it."""

    default: Any = _NONE
    """Its own ``default`` (never mutated: each use is a deep copy)."""
    nullable: bool = False
    properties: Mapping[str, Defaults] = field(default_factory=dict)
    """Only the properties with a default at or below them."""
    declared: frozenset[str] = frozenset()
    """Every property the schema declares: other keys are ``additional``'s."""
    additional: Defaults | None = None
    items: Defaults | None = None

    def fills(self, value: Any) -> bool:
        """Whether this node's default replaces ``value`` where it stands (a non-nullable ``null``)."""
        return value is None and not self.nullable and self.default is not _NONE

    def child(self, name: str) -> Defaults | None:
        return self.properties.get(name) if name in self.declared else self.additional


def compile_defaults(schema: Mapping[str, Any]) -> Defaults | None:
    """The defaulting tree of ``schema``; None when nothing at or below it has a default."""
    properties = schema.get("properties") or {}
    children = {
        name: found for name, sub in properties.items() if (found := compile_defaults(sub)) is not None
    }
    additional, items = schema.get("additionalProperties"), schema.get("items")
    extra = compile_defaults(additional) if isinstance(additional, Mapping) else None
    each = compile_defaults(items) if isinstance(items, Mapping) else None
    if "default" not in schema and not (children or extra or each):
        return None
    return Defaults(schema.get("default", _NONE), bool(schema.get("nullable")), children, frozenset(properties),
                    extra, each)  # fmt: skip


def apply_defaults(value: Any, defaults: Defaults | None) -> bool:
    """Default ``value`` in place; True when anything was added."""
    if defaults is None:
        return False
    changed = False
    if isinstance(value, dict):
        for name, prop in defaults.properties.items():
            if prop.default is not _NONE and (name not in value or prop.fills(value[name])):
                value[name] = copy.deepcopy(prop.default)
                changed = True
        for name, sub in value.items():
            changed = _apply_at(value, name, sub, defaults.child(name)) or changed
    elif isinstance(value, list):
        for index, item in enumerate(value):
            changed = _apply_at(value, index, item, defaults.items) or changed
    return changed


def _apply_at(parent: Any, key: Any, value: Any, defaults: Defaults | None) -> bool:
    """A map value or list item: a non-nullable ``null`` takes its schema's default, then is defaulted."""
    if defaults is not None and defaults.fills(value):
        parent[key] = value = copy.deepcopy(defaults.default)
        apply_defaults(value, defaults)
        return True
    return apply_defaults(value, defaults)


def lacks_defaults(value: Any, defaults: Defaults | None) -> bool:
    """Whether ``apply_defaults`` would add anything; reads only."""
    if defaults is None:
        return False
    if isinstance(value, dict):
        for name, prop in defaults.properties.items():
            if prop.default is not _NONE and (name not in value or prop.fills(value[name])):
                return True
        return any(_lacks_at(sub, defaults.child(name)) for name, sub in value.items())
    if isinstance(value, list):
        return any(_lacks_at(item, defaults.items) for item in value)
    return False


def _lacks_at(value: Any, defaults: Defaults | None) -> bool:
    return defaults is not None and (defaults.fills(value) or lacks_defaults(value, defaults))


# ---------------------------------------------------------------- unknown fields (pruning)

_ROOT_FIELDS = frozenset({"apiVersion", "kind", "metadata"})  # a resource's own, checked as ObjectMeta


def prune_unknown(value: Any, schema: Mapping[str, Any]) -> list[str]:
    """Remove from a custom object, in place, the fields its schema does not declare, and return their paths
    (``spec.trainer.bogus``, ``spec.podSets[0].x``), as kube-apiserver prunes them (apiextensions-apiserver
    ``pkg/apiserver/schema/pruning/algorithm.go``): a key is kept where the schema declares it, where
    ``additionalProperties`` allows any key, or under ``x-kubernetes-preserve-unknown-fields``; the resource's
    (and an ``x-kubernetes-embedded-resource``'s) ``apiVersion``, ``kind`` and ``metadata`` are its own."""
    found: list[str] = []
    _prune(value, schema, "", found, root=True)
    return found


def _prune(value: Any, schema: Mapping[str, Any], path: str, found: list[str], root: bool = False) -> None:
    if isinstance(value, list):
        items = schema.get("items")
        for index, item in enumerate(value):
            if isinstance(items, Mapping):
                _prune(item, items, f"{path}[{index}]", found)
        return
    if not isinstance(value, dict):
        return
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    own = _ROOT_FIELDS if root or schema.get("x-kubernetes-embedded-resource") else frozenset()
    for name in list(value):
        if name in own:
            continue
        where = f"{path}.{name}" if path else name
        sub = properties.get(name)
        if sub is None and isinstance(additional, Mapping):
            sub = additional
        if sub is not None:
            _prune(value[name], sub, where, found)
        elif not (additional is True or preserve):
            del value[name]
            found.append(where)


__all__ = ["Defaults", "apply_defaults", "compile_defaults", "lacks_defaults", "prune_unknown"]
