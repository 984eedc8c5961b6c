"""Fixtures for the node agent: a memory store with the default namespace and a running agent pool."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import waiting
from gangplane.agent import AgentPool, ClusterConfig, NodeGroup
from gangplane.clock import WallClock
from gangplane.store.catalog import NAMESPACES, PODS
from gangplane.store.memory import MemoryStore


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    s = MemoryStore()
    s.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    yield s
    s.close()


@pytest.fixture
def make_pool(store: MemoryStore, tmp_path: Path) -> Iterator[Callable[..., AgentPool]]:
    pools: list[AgentPool] = []

    def make(config: ClusterConfig | None = None, **kwargs: Any) -> AgentPool:
        config = config or ClusterConfig(node_groups=[NodeGroup(name="node", count=2, capacity={"cpu": "2"})])
        kwargs.setdefault("stop_grace_seconds", 1.0)
        kwargs.setdefault("workdir", tmp_path)
        pool = AgentPool(store, WallClock(), config, tmp_path / "logs", **kwargs)
        pool.start()
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        pool.stop()


def pod(name: str, *containers: dict[str, Any], node: str = "node-0", **spec: Any) -> dict[str, Any]:
    labels = spec.pop("labels", None)
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node, "containers": list(containers), **spec},
    }


def python(name: str, code: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "python:3.12", "command": ["python", "-c", code], **fields}


def wait_for(
    check: Callable[[], Any], timeout: float = 10.0, what: str = "condition", interval: float = 0.02
) -> Any:
    """``waiting.wait_for`` with the agent tests' default timeout."""
    return waiting.wait_for(check, timeout, what, interval)


def phase_of(store: MemoryStore, name: str) -> str | None:
    try:
        obj = store.get(PODS, "default", name)
    except Exception:
        return None
    return (obj.get("status") or {}).get("phase")


def wait_phase(store: MemoryStore, name: str, *phases: str, timeout: float = 10.0) -> dict[str, Any]:
    wait_for(lambda: phase_of(store, name) in phases, timeout, f"pod {name} in {phases}")
    return store.get(PODS, "default", name)
