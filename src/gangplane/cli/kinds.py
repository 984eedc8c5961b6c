"""Resolving what a user types for a resource type (``trainjobs``, ``trainjob``, ``TrainJob``, ``tj``...)
to a ``ResourceType`` of the catalog, as kubectl's RESTMapper does; pure.

Ambiguous names (``pg`` is a PodGroup of Coscheduling, Volcano and KAI) resolve by match strength (plural,
then singular or kind, then short name), then catalog order; ``<resource>.<group>`` or
``<resource>.<version>.<group>`` picks one explicitly, as in kubectl.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gangplane.server.resources import default_registry
from gangplane.store.base import ResourceType

# What the API server serves, storage versions first (so ``clusterqueues`` is v1beta2), then the older
# versions it still presents (``clusterqueues.v1beta1.kueue.x-k8s.io``).
SERVED_TYPES: tuple[ResourceType, ...] = tuple(s.rt for s in default_registry().served)
PREFERRED_TYPES: tuple[ResourceType, ...] = tuple(s.rt for s in default_registry().served if not s.is_alias)


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


def resolve_kind(text: str, types: Sequence[ResourceType] = SERVED_TYPES) -> ResourceType:
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


@dataclass(frozen=True, slots=True)
class Request:
    """One resource type and the names asked for (none: every object of the type)."""

    rt: ResourceType
    names: tuple[str, ...] = ()


def expand(text: str, types: Sequence[ResourceType] = SERVED_TYPES) -> list[ResourceType]:
    """The types ``text`` names: a category (``all``) first, as kubectl expands categories before aliases,
    else one resource type."""
    in_category = [rt for rt in types if text.lower() in rt.categories]
    return in_category or [resolve_kind(text, types)]


def _slashed(args: Sequence[str], types: Sequence[ResourceType]) -> list[Request]:
    requests: list[Request] = []
    for arg in args:
        if "/" not in arg:
            raise UnknownKind(
                "there is no need to specify a resource type as a separate argument when passing "
                "arguments in resource/name form (e.g. 'gangplane get resource/<resource_name>' instead "
                "of 'gangplane get resource resource/<resource_name>')"
            )
        kind, _, name = arg.partition("/")
        if not kind or not name or "/" in name:
            raise UnknownKind("arguments in resource/name form must have a single resource and name")
        rt = resolve_kind(kind, types)
        if requests and requests[-1].rt == rt:
            requests[-1] = Request(rt, (*requests[-1].names, name))
        else:
            requests.append(Request(rt, (name,)))
    return requests


def parse_resources(
    args: Sequence[str], verb: str = "get", types: Sequence[ResourceType] = SERVED_TYPES
) -> list[Request]:
    """kubectl's resource arguments: ``TYPE[,TYPE...] [NAME...]`` or ``TYPE/NAME...``, where a TYPE may be
    a plural, singular, kind, short name, ``<resource>.<group>`` or a category such as ``all``."""
    if not args:
        raise UnknownKind(
            f"you must specify the type of resource to {verb}. "
            'Use "gangplane api-resources" for a complete list of supported resources.'
        )
    if any("/" in a for a in args):
        return _slashed(args, types)
    names = tuple(args[1:])
    found: list[ResourceType] = []
    for text in (t for t in args[0].split(",") if t):
        found += [rt for rt in expand(text, types) if rt not in found]
    if not found:
        raise UnknownKind(f'the server doesn\'t have a resource type "{args[0]}"')
    return [Request(rt, names) for rt in found]


def qualified_name(rt: ResourceType) -> str:
    """``trainjob.trainer.kubeflow.org`` (``pod`` for the core group), as kubectl prints a type."""
    return f"{rt.kind.lower()}.{rt.group}" if rt.group else rt.kind.lower()


def qualified_plural(rt: ResourceType) -> str:
    return f"{rt.plural}.{rt.group}" if rt.group else rt.plural


__all__ = [
    "PREFERRED_TYPES",
    "SERVED_TYPES",
    "Request",
    "UnknownKind",
    "expand",
    "parse_resources",
    "qualified_name",
    "qualified_plural",
    "resolve_kind",
]
