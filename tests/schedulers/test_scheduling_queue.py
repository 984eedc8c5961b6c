"""The scheduling queue and the event-driven loop: pods wait in the unschedulable pool until a cluster event
may help them, never on a timer; back-off is the only timer; bindings are assumed, then written once."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from gangplane.clock import ManualClock
from gangplane.errors import Conflict
from gangplane.schedulers.base import CycleResult, PendingReason, Queueing, Status
from gangplane.schedulers.core import ResourceIndex, pod_info
from gangplane.schedulers.loop import SchedulerLoop
from gangplane.schedulers.queue import MAX_BACKOFF, SchedulingQueue, State
from gangplane.schedulers.registry import default_registry
from gangplane.store.binding import bind_pod
from gangplane.store.catalog import COSCHEDULING_PODGROUPS, NODES, PODS
from gangplane.store.memory import MemoryStore
from schedulers.kube_builders import T0, node, pod, pod_group
from waiting import wait_for

INDEX = ResourceIndex()


def _create_node(store: MemoryStore, obj: dict[str, Any]) -> None:
    status = obj.pop("status")
    created = store.create(NODES, obj)
    created["status"] = status
    store.update_status(NODES, created)


def _scheduled(store: MemoryStore, name: str) -> tuple[str, str] | None:
    for cond in (store.get(PODS, "ml", name).get("status") or {}).get("conditions") or ():
        if cond["type"] == "PodScheduled":
            return cond["status"], cond.get("reason", "")
    return None


def _node_of(store: MemoryStore, name: str) -> str:
    return str(store.get(PODS, "ml", name)["spec"].get("nodeName") or "")


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    s = MemoryStore()
    yield s
    s.close()


def _loop(store: MemoryStore, clock: ManualClock, **kwargs: Any) -> SchedulerLoop:
    return SchedulerLoop(store, clock, default_registry().build(), **kwargs)


def test_unschedulable_pod_is_retried_when_a_node_is_added_not_on_a_timer(store: MemoryStore) -> None:
    clock = ManualClock(T0)  # never advances: no back-off can expire, no timer can fire
    _create_node(store, node("small", cpu="1"))
    loop = _loop(store, clock, period=0.01)
    loop.start()
    try:
        store.create(PODS, pod("big", cpu="4"))
        wait_for(lambda: _scheduled(store, "big") == ("False", "Unschedulable"), 10.0)
        wait_for(lambda: loop.queue.counts()[State.UNSCHEDULABLE] == 1, 10.0)
        passes = loop.passes
        time.sleep(0.3)
        assert loop.passes == passes  # waiting in the pool costs no pass
        _create_node(store, node("large", cpu="8"))
        wait_for(lambda: _node_of(store, "big") == "large", 10.0)
        assert _scheduled(store, "big") == ("True", "")
    finally:
        loop.stop()


def test_a_heartbeat_does_not_requeue_but_freed_capacity_does(store: MemoryStore) -> None:
    clock = ManualClock(T0)
    _create_node(store, node("n0", cpu="2"))
    store.create(PODS, pod("first", cpu="2", node_name="n0"))
    loop = _loop(store, clock, period=0.01)
    loop.start()
    try:
        store.create(PODS, pod("second", cpu="2"))
        wait_for(lambda: loop.queue.counts()[State.UNSCHEDULABLE] == 1, 10.0)
        passes = loop.passes
        beat = store.get(NODES, "", "n0")
        beat["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "now"}]
        store.update_status(NODES, beat)
        time.sleep(0.3)
        assert loop.passes == passes and loop.queue.counts()[State.UNSCHEDULABLE] == 1
        store.delete(PODS, "ml", "first")
        wait_for(lambda: _node_of(store, "second") == "n0", 10.0)
    finally:
        loop.stop()


def test_an_idle_cluster_runs_no_pass(store: MemoryStore) -> None:
    for i in range(50):
        _create_node(store, node(f"n{i}", cpu="8"))
    for i in range(200):
        store.create(PODS, pod(f"p{i}", node_name=f"n{i % 50}"))
    loop = _loop(store, ManualClock(T0), period=0.01)
    loop.start()
    try:
        time.sleep(0.3)
        assert loop.passes == 0 and not loop.queue.units
        assert len(loop.cache.pods) == 200 and len(loop.cache.nodes) == 50
    finally:
        loop.stop()


def test_a_failed_binding_forgets_the_assumption_and_backs_off(store: MemoryStore) -> None:
    clock = ManualClock(T0)
    _create_node(store, node("n0", cpu="4"))
    store.create(PODS, pod("p"))
    calls: list[str] = []

    def flaky(namespace: str, name: str, binding: Mapping[str, Any]) -> object:
        calls.append(name)
        if len(calls) == 1:
            raise Conflict("the first write loses a race")
        return bind_pod(store, namespace, name, binding)

    loop = _loop(store, clock, binder=flaky)
    loop.start_informers()
    try:
        loop.run_once()
        entry = loop.cache.pods["ml/p"]
        assert not entry.assumed and not entry.counted_on and not _node_of(store, "p")
        assert loop.queue.counts()[State.BACKOFF] == 1
        loop.run_once()
        assert calls == ["p"]  # still backing off: nothing tried
        clock.advance(MAX_BACKOFF)
        loop.run_once()
        assert calls == ["p", "p"] and _node_of(store, "p") == "n0"
        assert _scheduled(store, "p") == ("True", "")
    finally:
        loop.stop()


def test_the_next_pod_sees_the_assumed_one(store: MemoryStore) -> None:
    """Bindings not yet visible in the informer still count: two pods never share a node that fits one."""
    _create_node(store, node("a", cpu="1"))
    _create_node(store, node("b", cpu="1"))
    loop = _loop(store, ManualClock(T0))
    loop.start_informers()
    try:
        store.create(PODS, pod("p1"))
        wait_for(lambda: "ml/p1" in loop.cache.pods, 10.0)
        loop.schedule()
        store.create(PODS, pod("p2"))
        wait_for(lambda: "ml/p2" in loop.cache.pods, 10.0)
        loop.run_once()
        assert {_node_of(store, "p1"), _node_of(store, "p2")} == {"a", "b"}
    finally:
        loop.stop()


# -- the queue alone --------------------------------------------------------------------------------------
def _info(name: str, group: str | None = None, scheduler: str = "default-scheduler") -> Any:
    obj = pod(name, scheduler=scheduler)
    return pod_info(obj, INDEX, group_of=lambda _: group)


def _reason(status: Status, *names: str) -> CycleResult:
    return CycleResult(pending=[PendingReason(tuple(f"ml/{n}" for n in names), status, "why")])


def test_wait_backs_off_exponentially_and_only_the_expiry_reactivates() -> None:
    queue = SchedulingQueue({"default-scheduler": Queueing.PER_UNIT})
    queue.add(_info("p"))
    delays = []
    now = T0
    for _ in range(6):
        batch = queue.pop(now)
        assert [p.name for p in batch.pending["default-scheduler"]] == ["p"]
        queue.done(batch, "default-scheduler", _reason(Status.WAIT, "p"), now)
        due = queue.next_due()
        assert due is not None and not queue.pop(due - 0.001)
        delays.append(due - now)
        now = due
    assert delays == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_a_gang_is_one_unit_and_an_event_during_the_pass_keeps_it_active() -> None:
    queue = SchedulingQueue({"default-scheduler": Queueing.PER_UNIT})
    for i in range(3):
        queue.add(_info(f"g-{i}", group="ml/g"))
    batch = queue.pop(T0)
    assert len(batch.units["default-scheduler"]) == 1 and len(batch.pending["default-scheduler"]) == 3
    queue.move()  # e.g. a node was added while the pass ran
    queue.done(batch, "default-scheduler", _reason(Status.UNSCHEDULABLE, "g-0", "g-1", "g-2"), T0)
    assert queue.counts()[State.ACTIVE] == 3
    batch = queue.pop(T0)
    queue.done(batch, "default-scheduler", _reason(Status.UNSCHEDULABLE, "g-0", "g-1", "g-2"), T0)
    assert queue.counts()[State.UNSCHEDULABLE] == 3 and not queue.pop(T0 + 100)
    queue.activate("default-scheduler", "ml/g")  # its PodGroup changed
    assert len(queue.pop(T0).pending["default-scheduler"]) == 3


def test_a_session_scheduler_sees_every_pending_pod_when_anything_is_active() -> None:
    queue = SchedulingQueue({"volcano": Queueing.SESSION})
    queue.add(_info("a", scheduler="volcano"))
    batch = queue.pop(T0)
    queue.done(batch, "volcano", _reason(Status.UNSCHEDULABLE, "a"), T0)
    assert not queue.pop(T0)
    queue.add(_info("b", scheduler="volcano"))
    assert [p.name for p in queue.pop(T0).pending["volcano"]] == ["a", "b"]
    queue.mark_dirty("volcano")
    assert [p.name for p in queue.pop(T0).pending["volcano"]] == ["a", "b"]


def test_gated_pods_wait_outside_the_active_queue() -> None:
    queue = SchedulingQueue({"default-scheduler": Queueing.PER_UNIT})
    gated = pod_info(pod("g", schedulingGates=[{"name": "x"}]), INDEX)
    queue.add(gated)
    assert not queue.pop(T0) and queue.counts()[State.GATED] == 1
    queue.add(_info("g"))  # the gate was removed: an update
    assert [p.name for p in queue.pop(T0).pending["default-scheduler"]] == ["g"]


def test_a_finished_gang_moves_its_pod_group_to_finished(store: MemoryStore) -> None:
    """A finished pod is no longer converted, yet its PodGroup's status still follows it."""
    _create_node(store, node("n0", cpu="8"))
    store.create(COSCHEDULING_PODGROUPS, pod_group("g", 2))
    for i in range(2):
        store.create(PODS, pod(f"g-{i}", group="g"))
    loop = _loop(store, ManualClock(T0))
    loop.start()
    try:
        wait_for(lambda: all(_node_of(store, f"g-{i}") for i in range(2)), 10.0)
        for i in range(2):
            done = store.get(PODS, "ml", f"g-{i}")
            done["status"]["phase"] = "Succeeded"
            store.update_status(PODS, done)
        status = lambda: store.get(COSCHEDULING_PODGROUPS, "ml", "g").get("status") or {}  # noqa: E731
        wait_for(lambda: status().get("phase") == "Finished", 10.0)
    finally:
        loop.stop()
