"""``NodeApi``: the ``KubeStore`` the node-agent process (``daemon.py``) talks to the API server through, with
the two things a kubelet does so that a pod does not wait on API round trips it need not wait on:

- **Events in the background**, as client-go's event broadcaster sends them: ``create``/``patch`` of an Event
  returns at once and a sender thread writes it (events are best effort: a failure is logged). Each Event
  name always goes to the same sender, so its create comes before its count patches.
- **ConfigMaps, Secrets and ServiceAccounts from watch-based caches**, as the kubelet's default
  ``configMapAndSecretChangeDetectionStrategy: Watch`` reads them: ``get`` answers from an informer once it
  has synced, and asks the server when the cache does not have the object (one created an instant ago).

Everything else goes to the server as ``KubeStore`` sends it.
"""

from __future__ import annotations

import logging
import queue
import threading
import zlib
from collections.abc import Callable
from typing import Any

import httpx2

from gangplane.client.informer import Informer
from gangplane.client.kube import KubeStore
from gangplane.errors import GangplaneError
from gangplane.store.base import Object, ResourceType
from gangplane.store.catalog import CONFIGMAPS, EVENTS, SECRETS, SERVICE_ACCOUNTS

_log = logging.getLogger(__name__)

SENDERS = 4  # Event writes in flight at once
CACHED = (CONFIGMAPS, SECRETS, SERVICE_ACCOUNTS)
_FLUSH_SECONDS = 5.0  # how long ``close`` waits for Events still queued


class _Senders:
    """``SENDERS`` threads, each writing the Events routed to it in order."""

    def __init__(self) -> None:
        self._queues: list[queue.SimpleQueue[Callable[[], Any] | None]] = []
        self._threads: list[threading.Thread] = []

    def send(self, key: str, write: Callable[[], Any]) -> None:
        if not self._queues:
            self._start()
        self._queues[zlib.crc32(key.encode()) % SENDERS].put(write)

    def _start(self) -> None:
        for i in range(SENDERS):
            self._queues.append(queue.SimpleQueue())
            thread = threading.Thread(
                target=self._run, args=(self._queues[i],), name=f"events-{i}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    @staticmethod
    def _run(writes: queue.SimpleQueue[Callable[[], Any] | None]) -> None:
        while (write := writes.get()) is not None:
            try:
                write()
            except (GangplaneError, httpx2.HTTPError) as err:  # ApiError, Unreachable
                _log.warning("event not recorded: %s", err)

    def close(self, timeout: float = _FLUSH_SECONDS) -> None:
        for writes in self._queues:
            writes.put(None)
        for thread in self._threads:
            thread.join(timeout / max(len(self._threads), 1))


class NodeApi(KubeStore):
    def __init__(self, http: httpx2.Client, *, namespace: str = "default") -> None:
        super().__init__(http, namespace=namespace)
        self._senders = _Senders()
        self._caches = {rt.plural: Informer(self, rt) for rt in CACHED}

    def start_caches(self, timeout: float = 30.0) -> None:
        """Start the watch-based caches; ``get`` uses each once it has synced."""
        for cache in self._caches.values():
            cache.start()
        for cache in self._caches.values():
            cache.wait_synced(timeout)

    def get(self, rt: ResourceType, namespace: str, name: str) -> Object:
        cache = self._caches.get(rt.plural) if rt.group == "" else None
        if cache is not None and cache.synced:
            found = cache.get(namespace, name)
            if found is not None:
                return found
        return super().get(rt, namespace, name)

    def create(self, rt: ResourceType, obj: Object, *, dry_run: bool = False) -> Object:
        if rt != EVENTS or dry_run:
            return super().create(rt, obj, dry_run=dry_run)
        meta = obj["metadata"]
        self._senders.send(f"{meta.get('namespace')}/{meta.get('name')}", lambda: self._create_now(rt, obj))
        return obj

    def _create_now(self, rt: ResourceType, obj: Object) -> Object:
        return super().create(rt, obj)

    def patch(
        self, rt: ResourceType, namespace: str, name: str, patch: Any, patch_type: str, **options: Any
    ) -> Object:
        if rt != EVENTS or options.get("dry_run") or options.get("subresource"):
            return super().patch(rt, namespace, name, patch, patch_type, **options)
        self._senders.send(
            f"{namespace}/{name}", lambda: self._patch_now(rt, namespace, name, patch, patch_type)
        )
        return {}

    def _patch_now(self, rt: ResourceType, namespace: str, name: str, patch: Any, patch_type: str) -> Object:
        return super().patch(rt, namespace, name, patch, patch_type)

    def close(self) -> None:
        self._senders.close()
        for cache in self._caches.values():
            cache.stop()
        super().close()


__all__ = ["CACHED", "SENDERS", "NodeApi"]
