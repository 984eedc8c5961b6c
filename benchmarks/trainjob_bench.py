"""TrainJob benchmarks: reconcile throughput in-process, and apply -> all gang pods Running on an idle
embedded cluster. Not a test.

- Reconcile throughput: N TrainJobs (2 nodes each, torch runtime) are created in a MemoryStore with the API
  server's admission; one TrainJob reconciler pass over each builds and server-side-applies its JobSet and
  runtime snapshot and writes status. Target >= 200 TrainJobs/s.
- Gang start latency: a 4-node TrainJob on an idle LocalCluster (4 nodes; real processes) from create to
  every pod Running, over several runs. Target < 1 s.

Baseline (2 CPU cores, Python 3.11, 2026-12): see the numbers printed; ratios are against the targets.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gangplane.agent.nodes import ClusterConfig, NodeGroup
from gangplane.clock import WallClock
from gangplane.cluster.local import LocalCluster
from gangplane.controllers.trainjob import TrainJobReconciler
from gangplane.runtime.framework import Framework
from gangplane.runtime.plugins import default_registry
from gangplane.runtime.points import Handle
from gangplane.server.admission import TrainerAdmission
from gangplane.server.resources import default_registry as served_resources
from gangplane.store import catalog
from gangplane.store.memory import MemoryStore

N_TRAINJOBS = 1_000
RUNS = 5


def runtime() -> dict[str, Any]:
    container = {"name": "node", "image": "python:3.11"}
    labels = {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    pod_template = {"spec": {"containers": [container]}}
    replicated = {
        "name": "node",
        "template": {"metadata": {"labels": labels}, "spec": {"template": pod_template}},
    }
    spec = {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {"replicatedJobs": [replicated]}}}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "bench"},
        "spec": spec,
    }


def trainjob(name: str, nodes: int, command: list[str]) -> dict[str, Any]:
    trainer = {"numNodes": nodes, "command": command, "resourcesPerNode": {"requests": {"cpu": "1"}}}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"runtimeRef": {"name": "bench"}, "trainer": trainer},
    }


def admitted_store() -> MemoryStore:
    admission = TrainerAdmission(served_resources())
    store = MemoryStore(admission=admission)
    admission.bind(store)
    store.create(catalog.NAMESPACES, {"kind": "Namespace", "metadata": {"name": "default"}})
    store.create(catalog.CLUSTER_TRAINING_RUNTIMES, runtime())
    return store


def bench_reconcile() -> float:
    store, clock = admitted_store(), WallClock()
    for i in range(N_TRAINJOBS):
        store.create(catalog.TRAINJOBS, trainjob(f"j{i}", 2, ["python", "-c", "pass"]))
    reconciler = TrainJobReconciler(store, clock, Framework(default_registry(), Handle(clock)))
    started = time.perf_counter()
    for i in range(N_TRAINJOBS):
        reconciler.reconcile(("default", f"j{i}"))
    elapsed = time.perf_counter() - started
    assert len(store.list(catalog.JOBSETS).items) == N_TRAINJOBS
    return N_TRAINJOBS / elapsed


def _all_running(store: MemoryStore, name: str, nodes: int) -> bool:
    pods = store.list(catalog.PODS).items
    mine = [p for p in pods if p["metadata"].get("labels", {}).get("jobset.sigs.k8s.io/jobset-name") == name]
    return len(mine) == nodes and all((p.get("status") or {}).get("phase") == "Running" for p in mine)


def bench_gang_start(logs: Path) -> list[float]:
    store = admitted_store()
    config = ClusterConfig(node_groups=[NodeGroup(name="n", count=4, capacity={"cpu": "4", "memory": "8Gi"})])
    latencies = []
    with LocalCluster(store, WallClock(), config, logs, scheduler_period=0.1).running():
        for run in range(RUNS):
            name = f"gang{run}"
            started = time.perf_counter()
            store.create(
                catalog.TRAINJOBS, trainjob(name, 4, [sys.executable, "-c", "import time; time.sleep(30)"])
            )
            while not _all_running(store, name, 4):
                time.sleep(0.005)
            latencies.append(time.perf_counter() - started)
            store.delete(catalog.TRAINJOBS, "default", name)
    return latencies


def main() -> None:
    rate = bench_reconcile()
    print(f"TrainJob reconcile throughput: {rate:,.0f} TrainJobs/s (target 200: {rate / 200:.1f}x)")
    with tempfile.TemporaryDirectory() as tmp:
        latencies = bench_gang_start(Path(tmp))
    median = statistics.median(latencies)
    print(
        f"apply -> 4-node gang Running: median {median * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms "
        f"over {RUNS} runs (target 1,000 ms: {1 / median:.1f}x)"
    )


if __name__ == "__main__":
    main()
