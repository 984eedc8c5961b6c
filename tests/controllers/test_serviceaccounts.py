"""Every namespace gets its ``default`` ServiceAccount and ``kube-root-ca.crt`` ConfigMap, as
kube-controller-manager's serviceaccounts-controller and root-ca-cert-publisher keep them."""

from __future__ import annotations

import time
from typing import Any

from gangplane.client.controller import Manager
from gangplane.clock import ManualClock
from gangplane.controllers.serviceaccounts import build_serviceaccounts_controller, missing
from gangplane.store.catalog import CONFIGMAPS, NAMESPACES, SERVICE_ACCOUNTS
from gangplane.store.memory import MemoryStore

NS = {"metadata": {"name": "team"}}


def test_what_a_namespace_is_missing() -> None:
    create, update = missing(NS, None, None, "PEM")
    assert [(o["kind"], o["metadata"]["name"]) for o in create] == [
        ("ServiceAccount", "default"),
        ("ConfigMap", "kube-root-ca.crt"),
    ]
    assert create[1]["data"] == {"ca.crt": "PEM"} and update is None
    account, ca_map = create
    assert missing(NS, account, ca_map, "PEM") == ([], None)
    assert missing(NS, account, ca_map, "NEW")[1]["data"] == {"ca.crt": "NEW"}  # type: ignore[index]
    assert missing(NS, None, None, None) == ([create[0]], None)  # no API server: no CA to publish
    assert missing({**NS, "status": {"phase": "Terminating"}}, None, None, "PEM") == ([], None)
    assert missing(None, None, None, "PEM") == ([], None)


def test_a_deleted_default_account_comes_back_with_a_new_uid() -> None:
    store = MemoryStore()
    store.create(NAMESPACES, NS)
    manager = Manager(store, ManualClock())
    controller = build_serviceaccounts_controller(manager, lambda: "PEM")
    manager.start_informers()

    def settle(check: Any) -> Any:
        for _ in range(200):
            while controller.process_one(timeout=0.02):
                pass
            if found := check():
                return found
            time.sleep(0.01)
        raise AssertionError("did not settle")

    try:
        first = settle(lambda: store.list(SERVICE_ACCOUNTS).items)[0]
        assert store.get(CONFIGMAPS, "team", "kube-root-ca.crt")["data"] == {"ca.crt": "PEM"}
        store.delete(SERVICE_ACCOUNTS, "team", "default")
        again = settle(lambda: [a for a in store.list(SERVICE_ACCOUNTS).items
                                if a["metadata"]["uid"] != first["metadata"]["uid"]])  # fmt: skip
        assert again[0]["metadata"]["name"] == "default"
    finally:
        manager.stop()
