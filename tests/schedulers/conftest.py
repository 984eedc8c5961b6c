"""Fixtures shared by the scheduler-shell tests."""

from collections.abc import Iterator

import pytest

from gangplane.clock import ManualClock
from gangplane.schedulers.loop import SchedulerLoop
from gangplane.schedulers.registry import default_registry
from gangplane.store.memory import MemoryStore
from schedulers.kube_builders import T0, node
from schedulers.test_scheduler_loop import _create_node


@pytest.fixture
def one_node() -> Iterator[tuple[MemoryStore, SchedulerLoop]]:
    """An in-memory store with one 4-CPU node ``n0`` and the registry's schedulers over it (not started)."""
    store = MemoryStore()
    _create_node(store, node("n0", cpu="4"))
    loop = SchedulerLoop(store, ManualClock(T0), default_registry().build())
    yield store, loop
    loop.stop()
