"""Where reconcilers read from: the manager's informer caches, or (for the rare read that must be live, and
for the synchronous test harness) the store itself.

controller-runtime's split (reference/scheduler-internals.md §3): its ``client.Client`` answers ``Get`` and
``List`` from the shared informer cache, starting an informer the first time a kind is read, and sends only
writes to the API server; ``APIReader`` reads live. ``CacheReads`` and ``LiveReads`` are the two halves here,
behind one ``Reads`` protocol, so a steady-state reconcile over a synced cache costs no API request at all.

Cached objects are shared with every reader (in-process, they are the store's own committed dicts):
``Reads`` results are read-only by contract, and the test suite enforces it (``client/readonly.py``). ``StoreReader``
adapts any ``Reads`` to the runtime plugins' ``Reader`` (apiVersion/kind addressing) and hands them copies.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from gangplane.api import serde
from gangplane.api.jsondata import clone
from gangplane.client.controller import Manager
from gangplane.client.informer import Informer
from gangplane.errors import NotFound
from gangplane.store import catalog, parse_label_selector
from gangplane.store.base import ListOptions, Object, ResourceType, Store

SYNC_TIMEOUT = 30.0


class Reads(Protocol):
    def get(self, rt: ResourceType, namespace: str, name: str) -> Object | None:
        """The object, or ``None`` when absent. ``namespace`` is ignored for cluster-scoped kinds."""
        ...

    def list(self, rt: ResourceType, namespace: str | None = None, selector: str = "") -> list[Object]:
        """The objects of ``namespace`` (every one when ``None``) matching the label ``selector``."""
        ...


class LiveReads:
    """Reads straight from the store: one request each against a real API server."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, rt: ResourceType, namespace: str, name: str) -> Object | None:
        with contextlib.suppress(NotFound):
            return self.store.get(rt, namespace if rt.namespaced else "", name)
        return None

    def list(self, rt: ResourceType, namespace: str | None = None, selector: str = "") -> list[Object]:
        return self.store.list(rt, ListOptions(namespace=namespace, label_selector=selector)).items


def _everything(_: ResourceType) -> bool:
    return True


class CacheReads:
    """Reads from ``manager``'s shared informers; the first read of a kind starts its informer and waits for it
    to sync. ``options`` narrows a kind's informer (a label selector, as controller-runtime's ``ByObject``);
    a kind ``served`` rejects reads as absent (an informer on a missing CRD would never sync)."""

    def __init__(
        self,
        manager: Manager,
        *,
        options: Mapping[ResourceType, ListOptions] | None = None,
        served: Callable[[ResourceType], bool] = _everything,
        timeout: float = SYNC_TIMEOUT,
    ) -> None:
        self.manager, self.served, self.timeout = manager, served, timeout
        self._options = dict(options or {})

    def informer(self, rt: ResourceType) -> Informer | None:
        if not self.served(rt):
            return None
        informer = self.manager.informer(rt, self._options.get(rt))
        if not informer.synced and not informer.wait_synced(self.timeout):
            raise TimeoutError(f"the {rt.plural} cache did not sync within {self.timeout}s")
        return informer

    def get(self, rt: ResourceType, namespace: str, name: str) -> Object | None:
        informer = self.informer(rt)
        return None if informer is None else informer.get(namespace if rt.namespaced else "", name)

    def list(self, rt: ResourceType, namespace: str | None = None, selector: str = "") -> list[Object]:
        informer = self.informer(rt)
        if informer is None:
            return []
        wanted = parse_label_selector(selector)
        return [
            o
            for o in informer.list(namespace)
            if wanted.matches((o.get("metadata") or {}).get("labels") or {})
        ]


class StoreReader:
    """A runtime ``Reader`` (apiVersion/kind addressing) over ``Reads``: any served version of a group finds the
    stored object. Plugins get copies, so a plugin's edit can never reach a shared cache."""

    def __init__(self, reads: Reads, types: Iterable[ResourceType] = catalog.RESOURCE_TYPES) -> None:
        self.reads = reads
        self._types = {(rt.group, rt.kind): rt for rt in types}

    def _type(self, api_version: str, kind: str) -> ResourceType | None:
        return self._types.get((serde.group_of(api_version), kind))

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Object | None:
        rt = self._type(api_version, kind)
        return None if rt is None else clone(self.reads.get(rt, namespace, name))

    def list(self, api_version: str, kind: str, namespace: str | None = None) -> list[Object]:
        rt = self._type(api_version, kind)
        return [] if rt is None else clone(self.reads.list(rt, namespace))


__all__ = ["CacheReads", "LiveReads", "Reads", "StoreReader"]
