"""Fixtures of the controller tests that run on a ``Manager``'s informers: a memory store on a manual clock
(with the ``default`` and ``kube-node-lease`` namespaces), the manager, and ``settle`` to run a controller
once its informers have caught up with the store."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from gangplane.client.controller import Controller, Manager
from gangplane.clock import ManualClock
from gangplane.store.catalog import NAMESPACES
from gangplane.store.memory import MemoryStore
from waiting import wait_for

T0 = 1_767_225_600.0


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def store(clock: ManualClock) -> Iterator[MemoryStore]:
    s = MemoryStore(clock=clock)
    for name in ("default", "kube-node-lease"):
        s.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield s
    s.close()


@pytest.fixture
def manager(store: MemoryStore, clock: ManualClock) -> Iterator[Manager]:
    made = Manager(store, clock)
    yield made
    made.stop()


@pytest.fixture
def settle(store: MemoryStore, manager: Manager) -> Callable[[Controller], None]:
    """Wait until every informer of ``manager`` holds what the store holds (on a loaded machine one may lag
    behind a drain's idle timeout), then run every key of the controller that is ready."""

    def caught_up() -> bool:
        for informer in list(manager._informers.values()):  # no public listing of the shared informers
            cached = {(o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in informer.list()}
            stored = store.list(informer.rt, informer._options).items
            if cached != {(o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in stored}:
                return False
        return True

    def run(controller: Controller) -> None:
        # caught up before every key: a pass that reads its own previous write from a lagging cache loses
        # with a Conflict and retries on the clock (a timer a test would then see)
        while True:
            wait_for(caught_up, 10, "the informers to catch up with the store")
            if not controller.process_one(timeout=0.2):
                return

    return run
