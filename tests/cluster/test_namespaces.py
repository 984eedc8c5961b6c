"""Deleting a namespace deletes its contents, and nothing in other namespaces."""

from __future__ import annotations

from gangplane.client.controller import Manager
from gangplane.clock import ManualClock
from gangplane.cluster.namespaces import namespace_controller
from gangplane.store.catalog import CONFIGMAPS, NAMESPACES, TRAINJOBS
from gangplane.store.memory import MemoryStore


def test_deleting_a_namespace_deletes_what_it_holds() -> None:
    store, clock = MemoryStore(), ManualClock()
    for ns in ("team-a", "team-b"):
        store.create(NAMESPACES, {"kind": "Namespace", "metadata": {"name": ns}})
        store.create(CONFIGMAPS, {"kind": "ConfigMap", "metadata": {"name": "c", "namespace": ns}})
    store.create(
        TRAINJOBS, {"kind": "TrainJob", "metadata": {"name": "j", "namespace": "team-a"}, "spec": {}}
    )
    manager = Manager(store, clock)
    controller = namespace_controller(manager)
    manager.start_informers()
    store.delete(NAMESPACES, "", "team-a")
    controller.enqueue(("", "team-a"))
    while controller.process_one(timeout=0.5):
        pass
    manager.stop()
    assert store.list(CONFIGMAPS).items[0]["metadata"]["namespace"] == "team-b"
    assert len(store.list(CONFIGMAPS).items) == 1
    assert store.list(TRAINJOBS).items == []
