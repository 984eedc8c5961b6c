"""Controllers and the manager: events become reconcile calls; failures back off; requeue_after waits."""

from __future__ import annotations

import time
from collections.abc import Callable

from gangplane.client.controller import Controller, Manager, Result, controller_owner
from gangplane.client.informer import Key
from gangplane.clock import ManualClock
from gangplane.store.base import Object
from gangplane.store.catalog import CONFIGMAPS, SECRETS
from gangplane.store.memory import MemoryStore
from waiting import wait_for


class Recorder:
    name = "recorder"

    def __init__(self, outcome: Callable[[Key], Result] = lambda key: Result()) -> None:
        self.calls: list[Key] = []
        self.outcome = outcome

    def reconcile(self, key: Key) -> Result:
        self.calls.append(key)
        return self.outcome(key)


def drain(controller: Controller) -> None:
    while controller.process_one(timeout=0):
        pass


def settle(manager: Manager, timeout: float = 5.0) -> None:
    time.sleep(0.05)
    wait_for(manager.idle, timeout, "the manager to go idle")


def owned(name: str, owner: str) -> Object:
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": "u", "controller": True}
    return {"kind": "Secret", "metadata": {"name": name, "namespace": "default", "ownerReferences": [ref]}}


def test_events_on_owned_objects_reconcile_the_owner() -> None:
    store, clock = MemoryStore(), ManualClock()
    manager = Manager(store, clock)
    recorder = Recorder()
    controller = manager.add(Controller(recorder, clock))
    controller.watch(manager.informer(CONFIGMAPS))
    controller.watch(manager.informer(SECRETS), controller_owner("ConfigMap"))
    manager.start_informers()
    store.create(CONFIGMAPS, {"kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}})
    store.create(SECRETS, owned("s1", "cm"))
    time.sleep(0.1)
    drain(controller)
    manager.stop()
    assert set(recorder.calls) == {("default", "cm")}


def test_failures_back_off_and_requeue_after_uses_the_clock() -> None:
    clock = ManualClock()
    attempts = {"n": 0}

    def outcome(key: Key) -> Result:
        attempts["n"] += 1
        if attempts["n"] == 1:
            raise RuntimeError("transient")
        return Result(requeue_after=30)

    recorder = Recorder(outcome)
    controller = Controller(recorder, clock)
    controller.enqueue(("ns", "a"))
    drain(controller)
    assert attempts["n"] == 1  # the retry waits for its back-off
    clock.advance(1)
    drain(controller)
    assert attempts["n"] == 2
    clock.advance(29)
    drain(controller)
    assert attempts["n"] == 2
    clock.advance(1)
    drain(controller)
    assert attempts["n"] == 3


def test_manager_runs_workers_in_threads() -> None:
    store = MemoryStore()
    from gangplane.clock import WallClock

    manager = Manager(store, WallClock())
    recorder = Recorder()
    controller = manager.add(Controller(recorder, WallClock(), workers=2))
    controller.watch(manager.informer(CONFIGMAPS))
    manager.start()
    for i in range(20):
        store.create(CONFIGMAPS, {"kind": "ConfigMap", "metadata": {"name": f"c{i}", "namespace": "default"}})
    deadline = time.monotonic() + 5
    while len(set(recorder.calls)) < 20:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    settle(manager)
    manager.stop()
