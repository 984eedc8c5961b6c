"""Store calls the reconcile shells share: reads that return ``None`` for a missing object, idempotent
creates and deletes, and the event recorder (``client/events.py``). (The runtime ``Reader`` over a store is
``client.cache.StoreReader``.)"""

from __future__ import annotations

import contextlib

from gangplane.client.events import EventRecorder
from gangplane.controllers.objects import name_of, namespace_of, uid_of
from gangplane.errors import AlreadyExists, NotFound
from gangplane.store.base import ListOptions, Object, Propagation, ResourceType, Store


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


__all__ = [
    "EventRecorder",
    "create_if_absent",
    "delete_if_present",
    "get_or_none",
    "list_labelled",
]
