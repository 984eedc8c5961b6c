"""The namespace lifecycle of the embedded cluster: deleting a Namespace deletes everything in it.

On a real cluster kube-controller-manager's namespace controller does this (and the API server forbids
creates in a terminating namespace); gangplane's store removes the Namespace object at once, and this
reconciler then deletes every namespaced object left in it, dependents first-class through the store's
garbage collection (background propagation). Runs only in the embedded cluster.
"""

from __future__ import annotations

import contextlib

from gangplane.client.controller import Controller, Manager, Result
from gangplane.client.informer import Key
from gangplane.errors import NotFound
from gangplane.store.base import ListOptions, Propagation, Store
from gangplane.store.catalog import NAMESPACES, RESOURCE_TYPES


class NamespaceReconciler:
    name = "namespace"

    def __init__(self, store: Store) -> None:
        self.store = store

    def reconcile(self, key: Key) -> Result:
        _, namespace = key
        with contextlib.suppress(NotFound):
            self.store.get(NAMESPACES, "", namespace)
            return Result()  # still there
        for rt in RESOURCE_TYPES:
            if rt.namespaced:
                self.store.delete_collection(
                    rt, ListOptions(namespace=namespace), propagation=Propagation.BACKGROUND
                )
        return Result()


def namespace_controller(manager: Manager) -> Controller:
    controller = manager.add(Controller(NamespaceReconciler(manager.store), manager.clock))
    controller.watch(manager.informer(NAMESPACES))
    return controller


__all__ = ["NamespaceReconciler", "namespace_controller"]
