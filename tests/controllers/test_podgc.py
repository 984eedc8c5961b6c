"""The pod garbage collector: terminating pods whose node agent is gone are force-deleted; others are left."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from gangplane.client.controller import Controller, Manager
from gangplane.clock import ManualClock, rfc3339
from gangplane.controllers.podgc import agent_gone_in, build_pod_gc
from gangplane.errors import NotFound
from gangplane.store.base import ListOptions
from gangplane.store.catalog import LEASES, NAMESPACES, PODS
from gangplane.store.memory import MemoryStore

T0 = 1_767_225_600.0


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def store(clock: ManualClock) -> Iterator[MemoryStore]:
    s = MemoryStore(clock=clock)
    for name in ("default", "kube-node-lease"):
        s.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield s
    s.close()


def lease(node: str, renewed: float) -> dict[str, Any]:
    spec = {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": rfc3339(renewed)}
    return {"metadata": {"name": node, "namespace": "kube-node-lease"}, "spec": spec}


def running_pod(name: str, node: str = "n1") -> dict[str, Any]:
    spec = {"nodeName": node, "containers": [{"name": "main", "image": "busybox"}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def exists(store: MemoryStore, name: str) -> bool:
    try:
        store.get(PODS, "default", name)
    except NotFound:
        return False
    return True


@pytest.fixture
def manager(store: MemoryStore, clock: ManualClock) -> Iterator[Manager]:
    made = Manager(store, clock)
    yield made
    made.stop()


@pytest.fixture
def gc(manager: Manager) -> Controller:
    controller = build_pod_gc(manager)
    manager.start_informers()
    return controller


def lease_seen(manager: Manager, present: bool) -> None:
    """Wait until the collector's Lease informer agrees with the store (it reads the Lease from there)."""
    leases = manager.informer(LEASES, ListOptions(namespace="kube-node-lease"))
    deadline = time.monotonic() + 10
    while (leases.get("kube-node-lease", "n1") is not None) != present and time.monotonic() < deadline:
        time.sleep(0.01)


def drain(controller: Controller) -> None:
    while controller.process_one(timeout=0.5):
        pass


def test_the_agent_gone_in_table(clock: ManualClock) -> None:
    pod = running_pod("p")
    assert agent_gone_in(pod, lease("n1", T0), T0 + 10) == 30
    assert agent_gone_in(pod, lease("n1", T0), T0 + 50) == 0
    assert agent_gone_in(pod, None, T0) == 0
    assert agent_gone_in(running_pod("p", node=""), lease("n1", T0), T0) == 0


def test_a_terminating_pod_of_a_live_agent_is_left_until_its_lease_expires(
    store: MemoryStore, clock: ManualClock, manager: Manager, gc: Controller
) -> None:
    store.create(LEASES, lease("n1", T0))
    lease_seen(manager, True)
    store.create(PODS, running_pod("a"))
    store.delete(PODS, "default", "a")  # graceful: the Lease says an agent serves n1
    drain(gc)
    assert exists(store, "a")
    clock.advance(41)  # the agent never renewed: the node lifecycle's grace is over
    gc.enqueue(("default", "a"))
    drain(gc)
    assert not exists(store, "a")


def test_a_terminating_pod_whose_node_lease_is_gone_is_deleted(
    store: MemoryStore, manager: Manager, gc: Controller
) -> None:
    store.create(LEASES, lease("n1", T0))
    store.create(PODS, running_pod("a"))
    store.create(PODS, running_pod("b"))
    store.delete(PODS, "default", "a")
    store.delete(LEASES, "kube-node-lease", "n1")
    lease_seen(manager, False)
    gc.enqueue(("default", "a"))
    drain(gc)
    assert not exists(store, "a")
    assert exists(store, "b")  # not terminating: never the collector's
