"""The explicit table of served resources: every kind the API server knows, in one place.

Scopes, short names and status subresources follow the upstream CustomResourceDefinitions and the Kubernetes
built-ins. Kueue's deprecated ``v1beta1`` is a second *presentation* of the ``v1beta2`` objects: both versions
address the same stored objects, only ``apiVersion`` differs on the wire. Nothing here performs I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from gangplane.store.base import ResourceType
from gangplane.store.catalog import RESOURCE_TYPES

_KUEUE = "kueue.x-k8s.io"
_KUEUE_ALIAS_VERSION = "v1beta1"


@dataclass(frozen=True, slots=True)
class Served:
    """A resource as addressed on the wire (``rt``) and the type the store keeps it under (``storage``)."""

    rt: ResourceType
    storage: ResourceType

    @property
    def is_alias(self) -> bool:
        return self.rt != self.storage


@dataclass(frozen=True, slots=True)
class GroupInfo:
    name: str
    versions: tuple[str, ...]  # preferred first

    @property
    def preferred(self) -> str:
        return self.versions[0]


class Registry:
    """Lookup over the served resources, keyed by (group, version, plural) and by (apiVersion, kind)."""

    def __init__(self, served: Iterable[Served]) -> None:
        self.served = tuple(served)
        self._by_plural = {(s.rt.group, s.rt.version, s.rt.plural): s for s in self.served}
        self._by_kind = {(s.rt.api_version, s.rt.kind): s for s in self.served}
        if len(self._by_plural) != len(self.served):
            raise ValueError("duplicate served resource")

    def find(self, group: str, version: str, plural: str) -> Served | None:
        return self._by_plural.get((group, version, plural))

    def find_kind(self, api_version: str, kind: str) -> Served | None:
        return self._by_kind.get((api_version, kind))

    def in_group_version(self, group: str, version: str) -> list[Served]:
        return [s for s in self.served if (s.rt.group, s.rt.version) == (group, version)]

    def has_group_version(self, group: str, version: str) -> bool:
        return any((s.rt.group, s.rt.version) == (group, version) for s in self.served)

    def groups(self) -> list[GroupInfo]:
        """Named groups (not the core group) in table order, each with its versions, storage version first."""
        versions: dict[str, list[str]] = {}
        for s in sorted(self.served, key=lambda s: s.is_alias):
            seen = versions.setdefault(s.rt.group, [])
            if s.rt.version not in seen:
                seen.append(s.rt.version)
        return [GroupInfo(g, tuple(v)) for g, v in versions.items() if g]


def _with_aliases(types: Iterable[ResourceType]) -> list[Served]:
    served = [Served(rt, rt) for rt in types]
    aliases = [Served(replace(rt, version=_KUEUE_ALIAS_VERSION), rt) for rt in types if rt.group == _KUEUE]
    return served + aliases


def default_registry() -> Registry:
    """Every resource gangplane serves, with Kueue's v1beta1 presentation of the v1beta2 objects."""
    return Registry(_with_aliases(RESOURCE_TYPES))


__all__ = ["RESOURCE_TYPES", "GroupInfo", "Registry", "Served", "default_registry"]
