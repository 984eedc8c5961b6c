"""Per-namespace objects kube-controller-manager keeps in every namespace: the ``default`` ServiceAccount
(``serviceaccounts-controller``) and the ``kube-root-ca.crt`` ConfigMap holding the API server's CA
(``root-ca-cert-publisher``), recreated if deleted and the CA kept current.

``missing`` decides (pure); ``ServiceAccountsReconciler`` creates and updates. Without a CA (a cluster with no
API server) only the ServiceAccount is kept. A namespace being deleted gets nothing new.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from gangplane.client.controller import Controller, Manager, Result
from gangplane.client.informer import Key
from gangplane.controllers.shell import create_if_absent
from gangplane.errors import NotFound
from gangplane.store.base import Object
from gangplane.store.catalog import CONFIGMAPS, NAMESPACES, SERVICE_ACCOUNTS

DEFAULT_ACCOUNT = "default"
ROOT_CA = "kube-root-ca.crt"
CA_KEY = "ca.crt"


def default_account(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": DEFAULT_ACCOUNT, "namespace": namespace},
    }


def root_ca(namespace: str, ca_pem: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": ROOT_CA, "namespace": namespace},
            "data": {CA_KEY: ca_pem}}  # fmt: skip


def missing(
    namespace: Mapping[str, Any] | None, account: Mapping[str, Any] | None, ca_map: Mapping[str, Any] | None,
    ca_pem: str | None,
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:  # fmt: skip
    """(objects to create, the ConfigMap to update) for one namespace."""
    meta = (namespace or {}).get("metadata") or {}
    if (
        namespace is None
        or meta.get("deletionTimestamp")
        or (namespace.get("status") or {}).get("phase") == "Terminating"
    ):
        return [], None
    name = str(meta.get("name"))
    create = [] if account is not None else [default_account(name)]
    if ca_pem is None:
        return create, None
    if ca_map is None:
        return [*create, root_ca(name, ca_pem)], None
    if (ca_map.get("data") or {}).get(CA_KEY) != ca_pem:
        return create, {**ca_map, "data": {**(ca_map.get("data") or {}), CA_KEY: ca_pem}}
    return create, None


class ServiceAccountsReconciler:
    name = "serviceaccounts"

    def __init__(self, manager: Manager, ca: Callable[[], str | None]) -> None:
        self.store, self.ca = manager.store, ca
        self.namespaces = manager.informer(NAMESPACES)
        self.accounts = manager.informer(SERVICE_ACCOUNTS)
        self.configmaps = manager.informer(CONFIGMAPS)

    def reconcile(self, key: Key) -> Result:
        _, name = key
        create, update = missing(
            self.namespaces.get("", name), self.accounts.get(name, DEFAULT_ACCOUNT),
            self.configmaps.get(name, ROOT_CA), self.ca(),
        )  # fmt: skip
        for obj in create:
            rt = SERVICE_ACCOUNTS if obj["kind"] == "ServiceAccount" else CONFIGMAPS
            with contextlib.suppress(NotFound):  # the namespace went meanwhile
                create_if_absent(self.store, rt, obj)
        if update is not None:
            self.store.update(CONFIGMAPS, update)
        return Result()


def _namespace_of(name: str) -> Callable[[Object], Iterable[Key]]:
    def keys(obj: Object) -> Iterable[Key]:
        meta = obj.get("metadata") or {}
        return [("", str(meta.get("namespace")))] if meta.get("name") == name else []

    return keys


def ca_file(path: Path) -> Callable[[], str | None]:
    """The API server's certificate, read when asked (the server writes it after the cluster is built)."""

    def read() -> str | None:
        try:
            return path.read_text()
        except OSError:
            return None

    return read


def build_serviceaccounts_controller(manager: Manager, ca: Callable[[], str | None]) -> Controller:
    reconciler = ServiceAccountsReconciler(manager, ca)
    controller = manager.add(Controller(reconciler, manager.clock))
    controller.watch(reconciler.namespaces)
    controller.watch(reconciler.accounts, _namespace_of(DEFAULT_ACCOUNT))
    controller.watch(reconciler.configmaps, _namespace_of(ROOT_CA))
    return controller


__all__ = ["build_serviceaccounts_controller", "ca_file", "missing"]
