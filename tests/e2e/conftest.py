"""End-to-end fixtures: a real embedded cluster in this process (see e2e_harness)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from e2e_harness import Cluster
from runtimes_harness import env_cache, gangplane_up  # noqa: F401  (session fixtures of test_runtimes_*)

from gangplane.agent.nodes import ClusterConfig
from gangplane.clock import WallClock
from gangplane.cluster.local import LocalCluster
from gangplane.server.admission import TrainerAdmission
from gangplane.server.resources import default_registry
from gangplane.store import catalog
from gangplane.store.memory import MemoryStore


@pytest.fixture
def cluster_factory(tmp_path: Path) -> Iterator[Callable[[ClusterConfig], Cluster]]:
    started: list[LocalCluster] = []

    def make(config: ClusterConfig) -> Cluster:
        admission = TrainerAdmission(default_registry())
        store = MemoryStore(admission=admission)
        admission.bind(store)
        store.create(catalog.NAMESPACES, {"kind": "Namespace", "metadata": {"name": "default"}})
        logs = tmp_path / "logs"
        local = LocalCluster(store, WallClock(), config, logs, scheduler_period=0.2)
        local.start()
        started.append(local)
        return Cluster(store, logs, local)

    yield make
    for local in started:
        local.stop()
