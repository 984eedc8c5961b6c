"""Read-only access to cluster objects for the build and status phases.

Plugins never write: the only thing they may do with the cluster is read through a ``Reader``. ``StaticReader``
serves a fixed set of objects (the manifests given to ``gangplane render``, or a test table); the store and the
real-cluster client provide their own.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Protocol

from gangplane.api.jsondata import Object as Object  # re-exported: the one alias


class Reader(Protocol):
    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Object | None:
        """The object, or ``None`` when it does not exist. ``namespace`` is ``""`` for cluster-scoped kinds."""
        ...

    def list(self, api_version: str, kind: str, namespace: str | None = None) -> list[Object]: ...


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


class StaticReader:
    """A ``Reader`` over a fixed list of objects; versions of one group are interchangeable."""

    def __init__(self, objects: Iterable[Object] = ()) -> None:
        self._objects: dict[tuple[str, str, str, str], Object] = {}
        for obj in objects:
            self.add(obj)

    def add(self, obj: Object) -> None:
        meta = obj.get("metadata") or {}
        key = (
            _group(obj.get("apiVersion", "")),
            obj.get("kind", ""),
            meta.get("namespace") or "",
            meta["name"],
        )
        self._objects[key] = obj

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Object | None:
        found = self._objects.get((_group(api_version), kind, namespace, name))
        return copy.deepcopy(found) if found is not None else None

    def list(self, api_version: str, kind: str, namespace: str | None = None) -> list[Object]:
        group = _group(api_version)
        return [
            copy.deepcopy(obj)
            for (g, k, ns, _), obj in sorted(self._objects.items())
            if g == group and k == kind and (namespace is None or ns == namespace)
        ]
