"""The scheduler loop against a real API server through ``KubeStore`` (HTTPS), as kube-scheduler runs: each
pod is bound by one ``POST pods/{name}/binding``, and nothing else writes its ``nodeName`` or condition."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import httpx2
import pytest

from cli.cli_cluster import embedded_cluster
from gangplane.client.kube import KubeStore
from gangplane.clock import WallClock
from gangplane.schedulers.loop import SchedulerLoop
from gangplane.schedulers.registry import default_registry
from gangplane.store.catalog import NODES, PODS
from schedulers.kube_builders import node, pod

pytestmark = pytest.mark.slow


def test_pods_are_bound_with_one_binding_post_each(tmp_path: Path) -> None:
    with embedded_cluster(tmp_path) as cli:
        local = cli.store
        for i in range(3):
            created = local.create(NODES, {"metadata": node(f"n{i}", cpu="4")["metadata"]})
            created["status"] = node(f"n{i}", cpu="4")["status"]
            local.update_status(NODES, created)
        kube = KubeStore.from_kubeconfig(tmp_path / "kubeconfig")
        sent: Counter[str] = Counter()

        def count(request: httpx2.Request) -> None:
            if request.method != "GET":
                sent[f"{request.method} {request.url.path.rsplit('/', 1)[-1]}"] += 1

        kube._http.event_hooks = {"request": [count]}  # the client's own hook point; no public accessor
        loop = SchedulerLoop(kube, WallClock(), default_registry().build())
        loop.start()
        try:
            for i in range(6):
                local.create(PODS, pod(f"p{i}", namespace="default", cpu="1"))
            deadline = time.monotonic() + 20
            while not all(p["spec"].get("nodeName") for p in local.list(PODS).items):
                assert time.monotonic() < deadline, "pods not bound"
                time.sleep(0.05)
        finally:
            loop.stop()
            kube.close()
        pods = local.list(PODS).items
        assert Counter(p["spec"]["nodeName"] for p in pods) == {"n0": 2, "n1": 2, "n2": 2}
        for p in pods:
            [cond] = [c for c in p["status"]["conditions"] if c["type"] == "PodScheduled"]
            assert cond["status"] == "True"
        # one binding write per pod, no PUT of the pod or its status; and its `Scheduled` Event after it
        assert sent == {"POST binding": 6, "POST events": 6}
