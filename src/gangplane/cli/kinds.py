"""Resolving what a user types for a resource type (``trainjobs``, ``trainjob``, ``TrainJob``, ``tj``...)
to a ``ResourceType`` of the catalog, as kubectl's RESTMapper does; pure.

Ambiguous names (``pg`` is a PodGroup of Coscheduling, Volcano and KAI) resolve by match strength (plural,
then singular or kind, then short name), then catalog order; ``<resource>.<group>`` or
``<resource>.<version>.<group>`` picks one explicitly, as in kubectl.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gangplane.store.base import ResourceType
from gangplane.store.catalog import RESOURCE_TYPES


class UnknownKind(ValueError):
    """No served resource type has this name."""


def _strength(rt: ResourceType, name: str) -> int | None:
    """How well ``name`` names ``rt``: 0 plural, 1 singular or kind, 2 short name, None not at all."""
    lowered = name.lower()
    if lowered == rt.plural:
        return 0
    if lowered == rt.kind.lower():
        return 1
    if lowered in rt.short_names:
        return 2
    return None


def _qualified(rt: ResourceType, qualifier: str) -> bool:
    return qualifier in ("", rt.group, f"{rt.version}.{rt.group}" if rt.group else rt.version)


def resolve_kind(text: str, types: Sequence[ResourceType] = RESOURCE_TYPES) -> ResourceType:
    """The resource type ``text`` names; ``UnknownKind`` with kubectl's message when none does."""
    name, _, qualifier = text.partition(".")
    ranked = []
    for order, rt in enumerate(types):
        strength = _strength(rt, name)
        if strength is not None and _qualified(rt, qualifier):
            ranked.append((strength, order, rt))
    if not ranked:
        raise UnknownKind(f'the server doesn\'t have a resource type "{text}"')
    return min(ranked, key=lambda r: (r[0], r[1]))[2]


def split_type_name(args: Iterable[str]) -> tuple[str, list[str]]:
    """``["trainjob/mnist"]`` or ``["trainjob", "mnist"]`` -> ("trainjob", ["mnist"])."""
    args = list(args)
    if not args:
        raise UnknownKind("you must specify the type of resource to get")
    if "/" in args[0]:
        pairs = [a.split("/", 1) for a in args]
        kinds = {p[0] for p in pairs}
        if len(kinds) != 1 or any(len(p) != 2 or not p[1] for p in pairs):
            raise UnknownKind(
                "there is no need to specify a resource type as a separate argument when "
                "passing arguments in resource/name form, and all must share one type"
            )
        return pairs[0][0], [p[1] for p in pairs]
    return args[0], args[1:]


def qualified_name(rt: ResourceType) -> str:
    """``trainjob.trainer.kubeflow.org`` (``pod`` for the core group), as kubectl prints a type."""
    return f"{rt.kind.lower()}.{rt.group}" if rt.group else rt.kind.lower()


def qualified_plural(rt: ResourceType) -> str:
    return f"{rt.plural}.{rt.group}" if rt.group else rt.plural


__all__ = ["UnknownKind", "qualified_name", "qualified_plural", "resolve_kind", "split_type_name"]
