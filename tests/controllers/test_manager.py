"""The controllers wired on a real ``Manager``: informers feed the queues, workers run the reconcilers."""

from __future__ import annotations

import random

from harness import torch_runtime

from builders import TrainJobBuilder
from gangplane.client.controller import Manager
from gangplane.clock import WallClock
from gangplane.controllers.manager import build_controllers, build_trainjob_controller, runtime_ref_key
from gangplane.store import catalog
from gangplane.store.memory import MemoryStore
from waiting import poll


def test_manager_runs_trainjob_to_pods_and_completion() -> None:
    store = MemoryStore(clock=WallClock(), rng=random.Random(1))
    manager = Manager(store, WallClock())
    controllers = build_controllers(manager)
    assert [c.name for c in controllers] == [
        "trainjob",
        "jobset",
        "job",
        "pod-garbage-collector",
        "node-lifecycle",
        "taint-eviction-controller",
    ]
    manager.start()
    try:
        store.create(catalog.CLUSTER_TRAINING_RUNTIMES, torch_runtime())
        store.create(catalog.TRAINJOBS, TrainJobBuilder("mnist").num_nodes(2).dict())
        assert poll(lambda: len(store.list(catalog.PODS).items) == 2, 10.0)
        for pod in store.list(catalog.PODS).items:
            store.update_status(catalog.PODS, {**pod, "status": {"phase": "Succeeded"}})

        def complete() -> bool:
            status = store.get(catalog.TRAINJOBS, "default", "mnist").get("status") or {}
            return any(c["type"] == "Complete" for c in status.get("conditions", []))

        assert poll(complete, 10.0)
    finally:
        manager.stop()


def test_trainjob_controller_skips_watches_the_server_lacks() -> None:
    store = MemoryStore(clock=WallClock())
    manager = Manager(store, WallClock())
    build_trainjob_controller(manager, served=lambda rt: rt.group != "scheduling.volcano.sh")
    watched = {rt for rt, _ in manager._informers}  # no public listing of the shared informers
    assert catalog.VOLCANO_PODGROUPS not in watched
    assert {catalog.COSCHEDULING_PODGROUPS, catalog.JOBSETS, catalog.TRAINING_RUNTIMES} <= watched
    assert runtime_ref_key({"metadata": {"namespace": "ns"}, "spec": {"runtimeRef": {"name": "rt"}}}) == (
        "ClusterTrainingRuntime//rt",
    )
