"""End to end with real node agents and processes: an agent that stops leaves its node ``Unknown`` and tainted
after the grace period, a pod there that does not tolerate that is marked and deleted, one that tolerates it
for a while stays, and the agent's return clears the taints. Grace periods are short (the controller's
constructor takes them); the rules are those of the unit tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gangplane.agent import AgentPool, ClusterConfig, NodeGroup
from gangplane.client.controller import Manager
from gangplane.clock import WallClock
from gangplane.controllers.node_lifecycle import build_node_lifecycle
from gangplane.controllers.podgc import build_pod_gc
from gangplane.controllers.taint_eviction import build_taint_eviction
from gangplane.store.catalog import NAMESPACES, NODES, PODS
from gangplane.store.memory import MemoryStore
from waiting import wait_for

pytestmark = pytest.mark.slow

GRACE = 6.0  # seconds; the agents renew every 0.25 s (Lease renewTime has whole seconds); loaded machines lag
UNREACHABLE = "node.kubernetes.io/unreachable"


def sleeper(name: str, node: str, *tolerations: dict[str, Any]) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "command": ["sleep", "60"]}
    spec = {"nodeName": node, "terminationGracePeriodSeconds": 1, "containers": [container]}
    if tolerations:
        spec["tolerations"] = list(tolerations)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    s = MemoryStore(clock=WallClock())
    s.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    yield s
    s.close()


def pool(store: MemoryStore, tmp_path: Path, index: int) -> AgentPool:
    """One agent for ``node-<index>``."""
    group = NodeGroup(name="node", count=1, first_index=index, capacity={"cpu": "2"})
    return AgentPool(
        store,
        WallClock(),
        ClusterConfig(node_groups=[group]),
        tmp_path / "logs",
        workdir=tmp_path,
        heartbeat_seconds=0.25,
        stop_grace_seconds=1.0,
    )


def phase(store: MemoryStore, name: str) -> str | None:
    return (store.get(PODS, "default", name).get("status") or {}).get("phase")


def taints(store: MemoryStore, node: str) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in store.get(NODES, "", node)["spec"].get("taints") or ()}


def ready(store: MemoryStore, node: str) -> str | None:
    conditions = store.get(NODES, "", node)["status"]["conditions"]
    return next(c["status"] for c in conditions if c["type"] == "Ready")


def test_a_stopped_agent_is_tainted_its_pods_evicted_and_its_return_untaints(
    store: MemoryStore, tmp_path: Path
) -> None:
    pools = [pool(store, tmp_path, 0), pool(store, tmp_path, 1)]
    clock = WallClock()
    manager = Manager(store, clock)
    build_node_lifecycle(manager, grace=GRACE, startup_grace=GRACE)
    build_taint_eviction(manager)
    build_pod_gc(manager)
    for agents in pools:
        agents.start()
    manager.start()
    try:
        patient = {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        for pod in (
            sleeper("doomed", "node-0"),
            sleeper("patient", "node-0", patient),
            sleeper("other", "node-1"),
        ):
            store.create(PODS, pod)
        for name in ("doomed", "patient", "other"):
            wait_for(lambda n=name: phase(store, n) == "Running", 20, f"{name} Running")  # type: ignore[misc]
        pools[0].stop()  # the agent is gone: no heartbeats; its pods still read Running
        wait_for(lambda: ready(store, "node-0") == "Unknown", GRACE + 15, "node-0 Unknown")
        wait_for(lambda: {(UNREACHABLE, "NoExecute")} <= taints(store, "node-0"), 10, "node-0 tainted")
        doomed = wait_for(
            lambda: (
                store.get(PODS, "default", "doomed")["metadata"].get("deletionTimestamp")
                and store.get(PODS, "default", "doomed")
            ),
            10,
            "doomed evicted",
        )
        reasons = {c["type"]: c.get("reason") for c in doomed["status"].get("conditions") or ()}
        assert reasons["DisruptionTarget"] == "DeletionByTaintManager"
        patient_pod = store.get(PODS, "default", "patient")
        assert not patient_pod["metadata"].get("deletionTimestamp")
        assert {c["type"]: c["status"] for c in patient_pod["status"]["conditions"]}["Ready"] == "False"
        assert ready(store, "node-1") == "True" and not taints(store, "node-1")
        assert phase(store, "other") == "Running"
        pools[0] = pool(store, tmp_path, 0)  # the agent comes back: it re-registers, Ready and a fresh Lease
        pools[0].start()
        wait_for(
            lambda: ready(store, "node-0") == "True" and not taints(store, "node-0"), 10, "node-0 untainted"
        )
    finally:
        manager.stop()
        for agents in pools:
            agents.stop()
