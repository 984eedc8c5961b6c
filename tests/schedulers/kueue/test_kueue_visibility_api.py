"""Kueue's visibility API served by the embedded control plane: pending workloads in queue order, positions."""

from __future__ import annotations

from pathlib import Path

from kueue_shell import setup, trainjob
from starlette.testclient import TestClient

from gangplane.clock import ManualClock
from gangplane.cluster.visibility import PREFIX, visibility_routes
from gangplane.schedulers.kueue.controller import CYCLE_KEY
from gangplane.server.app import create_app
from gangplane.store import catalog
from gangplane.store.memory import MemoryStore


def test_pending_workloads_of_cluster_and_local_queues(tmp_path: Path) -> None:
    store_clock = ManualClock()  # creation times order the queue: make them distinct and deterministic
    store, clock, kueue, _ = setup(MemoryStore(clock=store_clock))
    for name in ("running", "second", "third"):
        store.create(catalog.TRAINJOBS, trainjob(name))
        kueue.reconciler.reconcile(("ml", name))
        clock.advance(2)
        store_clock.advance(2)
    kueue.reconciler.reconcile(CYCLE_KEY)
    app = create_app(store, token="t", logs_dir=tmp_path, extra_routes=visibility_routes(kueue.reconciler))
    client = TestClient(app, headers={"Authorization": "Bearer t"})

    summary = client.get(f"{PREFIX}/clusterqueues/cq/pendingworkloads").json()
    assert summary["kind"] == "PendingWorkloadsSummary"
    pending = [(i["metadata"]["name"].split("-")[1], i["positionInClusterQueue"]) for i in summary["items"]]
    assert pending == [("second", 0), ("third", 1)]
    assert (
        summary["items"][1]["positionInLocalQueue"] == 1 and summary["items"][1]["localQueueName"] == "team"
    )

    local = client.get(
        f"{PREFIX}/namespaces/ml/localqueues/team/pendingworkloads", params={"offset": 1}
    ).json()
    assert [i["positionInLocalQueue"] for i in local["items"]] == [1]
    assert client.get(f"{PREFIX}/clusterqueues/nope/pendingworkloads").status_code == 404
    assert (
        client.get(f"{PREFIX}/clusterqueues/cq/pendingworkloads", headers={"Authorization": "x"}).status_code
        == 401
    )
    assert kueue.reconciler.position("ml", summary["items"][0]["metadata"]["name"]) == 0
