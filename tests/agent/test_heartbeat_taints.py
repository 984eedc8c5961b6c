"""Re-registering an existing Node (``gangplane up`` on a durable store) applies the config's taints and keeps
the others: a ``kubectl taint`` and the node lifecycle controller's taints survive, as with the kubelet, while
a taint an earlier config declared and the new one drops is removed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gangplane.agent.heartbeat import CONFIG_TAINTS_ANNOTATION, register
from gangplane.agent.nodes import NodeSpec
from gangplane.clock import ManualClock
from gangplane.store.catalog import NODES
from gangplane.store.memory import MemoryStore

OLD = {"key": "old", "value": "x", "effect": "NoSchedule"}
NEW = {"key": "new", "value": "y", "effect": "NoSchedule"}
USERS = {"key": "maintenance", "value": "true", "effect": "NoSchedule"}
UNREACHABLE = {
    "key": "node.kubernetes.io/unreachable",
    "effect": "NoExecute",
    "timeAdded": "2026-01-01T00:00:00Z",
}


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    made = MemoryStore()
    yield made
    made.close()


def _spec(*taints: dict[str, str]) -> NodeSpec:
    return NodeSpec(name="n0", capacity={"cpu": "4", "pods": "110"}, labels={}, taints=list(taints))


def _taint(store: MemoryStore, *taints: dict[str, str]) -> None:
    node = store.get(NODES, "", "n0")
    node["spec"]["taints"] = [*(node["spec"].get("taints") or []), *taints]
    store.update(NODES, node)


def test_re_registration_keeps_taints_the_config_never_declared(store: MemoryStore) -> None:
    register(store, ManualClock(), _spec(OLD))
    _taint(store, USERS, UNREACHABLE)
    node = register(store, ManualClock(), _spec(NEW))
    assert node["spec"]["taints"] == [USERS, UNREACHABLE, NEW]
    assert node["metadata"]["annotations"][CONFIG_TAINTS_ANNOTATION] == '["new:NoSchedule"]'


def test_a_config_taint_is_not_doubled_and_a_garbled_record_drops_nothing_else(store: MemoryStore) -> None:
    register(store, ManualClock(), _spec(OLD))
    node = store.get(NODES, "", "n0")
    node["metadata"]["annotations"][CONFIG_TAINTS_ANNOTATION] = "{not json"
    store.update(NODES, node)
    _taint(store, USERS)
    assert register(store, ManualClock(), _spec(OLD))["spec"]["taints"] == [USERS, OLD]
    assert register(store, ManualClock(), _spec())["spec"]["taints"] == [USERS]  # OLD was declared: it goes
