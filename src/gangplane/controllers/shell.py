"""Store calls the reconcile shells share: reads that return ``None`` for a missing object, idempotent
creates and deletes, and events. (The runtime ``Reader`` over a store is ``client.cache.StoreReader``.)"""

from __future__ import annotations

import contextlib
import logging

from gangplane.clock import Clock, rfc3339
from gangplane.controllers.objects import name_of, namespace_of, uid_of
from gangplane.errors import AlreadyExists, ApiError, NotFound
from gangplane.store import catalog
from gangplane.store.base import ListOptions, Object, Propagation, ResourceType, Store

_log = logging.getLogger(__name__)


def get_or_none(store: Store, rt: ResourceType, namespace: str, name: str) -> Object | None:
    try:
        return store.get(rt, namespace if rt.namespaced else "", name)
    except NotFound:
        return None


def list_labelled(store: Store, rt: ResourceType, namespace: str, selector: str) -> list[Object]:
    return store.list(rt, ListOptions(namespace=namespace, label_selector=selector)).items


def create_if_absent(store: Store, rt: ResourceType, obj: Object) -> Object | None:
    """Create ``obj``; ``None`` when one of that name exists already (a previous pass created it)."""
    try:
        return store.create(rt, obj)
    except AlreadyExists:
        return None


def delete_if_present(
    store: Store, rt: ResourceType, obj: Object, propagation: Propagation = Propagation.BACKGROUND
) -> None:
    """Delete exactly this object (uid precondition), tolerating that it is gone already."""
    with contextlib.suppress(NotFound):
        store.delete(
            rt, namespace_of(obj), name_of(obj), propagation=propagation, preconditions={"uid": uid_of(obj)}
        )


class EventRecorder:
    """Writes core/v1 Events about an object (``record.EventRecorder``); a failed write is only logged."""

    def __init__(self, store: Store, clock: Clock, component: str) -> None:
        self.store, self.clock, self.component = store, clock, component

    def event(self, obj: Object, type_: str, reason: str, message: str) -> None:
        now = self.clock.now()
        stamp = rfc3339(now)
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{name_of(obj)}.{int(now * 1e9):x}", "namespace": namespace_of(obj)},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion", ""),
                "kind": obj.get("kind", ""),
                "name": name_of(obj),
                "namespace": namespace_of(obj),
                "uid": uid_of(obj),
            },
            "type": type_,
            "reason": reason,
            "message": message[:950],
            "source": {"component": self.component},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        try:
            create_if_absent(self.store, catalog.EVENTS, event)
        except ApiError as err:
            _log.warning("event %s for %s not recorded: %s", reason, name_of(obj), err)
