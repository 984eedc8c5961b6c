"""Finished objects are released everywhere a controller keeps per-object state: once a TrainJob and its
children are deleted, the shared informers hold none of them (cache and indexes) and the work queues hold no
key, back-off count or pending deadline for them."""

from __future__ import annotations

import random

from builders import RuntimeBuilder, TrainJobBuilder
from gangplane.client.controller import Manager
from gangplane.clock import WallClock
from gangplane.controllers.manager import build_controllers
from gangplane.store import catalog
from gangplane.store.memory import MemoryStore
from waiting import poll

KINDS = (catalog.TRAINJOBS, catalog.JOBSETS, catalog.JOBS, catalog.PODS, catalog.SERVICES)


def _complete(store: MemoryStore, name: str) -> bool:
    status = store.get(catalog.TRAINJOBS, "default", name).get("status") or {}
    return any(c["type"] == "Complete" and c["status"] == "True" for c in status.get("conditions", []))


def test_deleted_trainjobs_leave_nothing_in_informers_or_queues() -> None:
    store = MemoryStore(clock=WallClock(), rng=random.Random(3))
    manager = Manager(store, WallClock())
    controllers = build_controllers(manager)
    manager.start()
    try:
        runtime = RuntimeBuilder("torch-distributed").ml_policy(numNodes=1, torch={}).trainer_job().dict()
        store.create(catalog.CLUSTER_TRAINING_RUNTIMES, runtime)
        names = [f"tj-{i}" for i in range(3)]
        for name in names:
            store.create(catalog.TRAINJOBS, TrainJobBuilder(name).num_nodes(2).dict())
        assert poll(lambda: len(store.list(catalog.PODS).items) == 6, 20.0)
        for pod in store.list(catalog.PODS).items:
            store.update_status(catalog.PODS, {**pod, "status": {"phase": "Succeeded"}})
        assert poll(lambda: all(_complete(store, name) for name in names), 20.0)
        for name in names:
            store.delete(catalog.TRAINJOBS, "default", name)
        assert poll(lambda: not any(store.list(rt).items for rt in KINDS), 20.0)
        informers = [i for (rt, _), i in manager._informers.items() if rt in KINDS]  # no public listing
        assert poll(lambda: all(not i.list() for i in informers) and manager.idle(), 20.0)
        for informer in informers:
            assert all(not values for values in informer._indexes.values()), informer.rt.plural
        for controller in controllers:  # per-key state: dirty, processing, back-off counts, deadlines
            queue = controller.queue
            # A short requeue-after set by the last reconcile before the delete fires, finds the object gone
            # and leaves nothing behind; wait for it rather than catch it pending.
            assert poll(
                lambda q=queue: not (q._dirty or q._processing or q._failures or q._due),
                20.0,  # type: ignore[misc]
            ), (controller.name, queue._due)
    finally:
        manager.stop()
