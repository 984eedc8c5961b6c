"""What a TrainJob reconcile costs against a real API server: requests counted on the wire.

The embedded API server runs in a thread on a free port; the TrainJob controller reaches it through
``KubeStore`` (HTTPS), as ``gangplane controller --kubeconfig`` does, with its reads served by the manager's
informer caches (controller-runtime's model, reference/scheduler-internals.md §3). Once the job has settled, a
pass that finds nothing to change makes no request at all: no read, no write.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from harness import torch_runtime

from builders import TrainJobBuilder
from cli.cli_cluster import embedded_cluster
from gangplane.client.controller import Controller, Manager
from gangplane.client.kube import KubeStore
from gangplane.clock import WallClock
from gangplane.controllers.manager import build_trainjob_controller
from gangplane.controllers.trainjob import TrainJobReconciler
from gangplane.errors import Conflict
from gangplane.store import catalog
from waiting import wait_for


class Requests:
    """Counts the HTTP requests a ``KubeStore`` sends: ``read`` (GET, not a watch), ``watch``, ``write``."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.lines: list[str] = []

    def __call__(self, request: httpx2.Request) -> None:
        watch = request.url.params.get("watch") in ("true", "1")
        kind = "watch" if watch else "read" if request.method == "GET" else "write"
        self.counts[kind] += 1
        self.lines.append(f"{request.method} {request.url.path}")

    def reset(self) -> None:
        self.counts.clear()
        self.lines.clear()


@pytest.fixture
def kube(tmp_path: Path) -> Iterator[tuple[KubeStore, Requests]]:
    with embedded_cluster(tmp_path):
        store = KubeStore.from_kubeconfig(tmp_path / "kubeconfig")
        requests = Requests()
        store._http.event_hooks = {"request": [requests]}  # the client's own hook point; no public accessor
        yield store, requests
        store.close()


def _settle(controller: Controller, key: tuple[str, str], requests: Requests) -> None:
    """Reconcile until a pass writes nothing; each pass waits for the watches to deliver the last writes."""
    for _ in range(50):
        requests.reset()
        with contextlib.suppress(Conflict):  # the cache had not seen our last write yet: read again
            controller.reconciler.reconcile(key)
        if requests.counts["write"] == 0:
            return
        time.sleep(0.2)
    raise AssertionError(f"the TrainJob never settled: {requests.lines}")


def test_a_steady_state_trainjob_reconcile_makes_no_request(kube: tuple[KubeStore, Requests]) -> None:
    store, requests = kube
    manager = Manager(store, WallClock())
    controller = build_trainjob_controller(manager, served=store.served)
    manager.start_informers()  # informers only: this test drives the reconciler itself
    try:
        store.create(catalog.CLUSTER_TRAINING_RUNTIMES, torch_runtime())
        store.create(catalog.TRAINJOBS, TrainJobBuilder("mnist").num_nodes(2).dict())
        key = ("default", "mnist")
        jobsets = manager.informer(catalog.JOBSETS)
        wait_for(lambda: manager.informer(catalog.TRAINJOBS).get(*key) is not None, 15.0)
        requests.reset()
        controller.reconciler.reconcile(key)  # the first pass: snapshot, JobSet, status
        assert requests.counts["write"] >= 2, requests.lines
        wait_for(lambda: jobsets.get(*key) is not None, 15.0)
        _settle(controller, key, requests)

        requests.reset()
        controller.reconciler.reconcile(key)
        assert requests.counts == Counter(), requests.lines  # 0 reads, 0 writes, no new watch

        live = TrainJobReconciler(store, WallClock(), controller.reconciler.framework)  # store reads
        requests.reset()
        live.reconcile(key)
        assert requests.counts["read"] >= 4 and requests.counts["write"] == 0, requests.lines
    finally:
        manager.stop()
    assert store.get(catalog.JOBSETS, *key)["metadata"]["ownerReferences"][0]["name"] == "mnist"
