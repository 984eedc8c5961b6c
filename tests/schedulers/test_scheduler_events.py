"""What the scheduler shell records besides bindings: kube-scheduler's Events and a victim's DisruptionTarget."""

from collections.abc import Iterator

import pytest

from gangplane.clock import ManualClock
from gangplane.schedulers.base import CycleResult, Eviction
from gangplane.schedulers.core.preemption import DISRUPTION_TARGET, PREEMPTION_BY_SCHEDULER
from gangplane.schedulers.loop import SchedulerLoop
from gangplane.schedulers.registry import default_registry
from gangplane.store.catalog import EVENTS, PODS
from gangplane.store.memory import MemoryStore
from schedulers.kube_builders import T0, node, pod
from schedulers.test_scheduler_loop import _create_node, _synced, eventually


@pytest.fixture
def cluster() -> Iterator[tuple[MemoryStore, SchedulerLoop]]:
    store = MemoryStore()
    _create_node(store, node("n0", cpu="4"))
    loop = SchedulerLoop(store, ManualClock(T0), default_registry().build())
    yield store, loop
    loop.stop()


def _events(store: MemoryStore, reason: str) -> list[dict]:
    return [e for e in store.list(EVENTS).items if e["reason"] == reason]


def test_bound_pod_gets_a_scheduled_event(cluster) -> None:
    store, loop = cluster
    created = store.create(PODS, pod("a"))
    loop.start_informers()
    eventually(_synced(loop, store))
    loop.run_once()
    [event] = _events(store, "Scheduled")
    assert (event["type"], event["message"]) == ("Normal", "Successfully assigned ml/a to n0")
    assert event["source"] == {"component": "default-scheduler"}
    assert event["reportingComponent"] == "default-scheduler"
    assert event["involvedObject"]["kind"] == "Pod"
    assert event["involvedObject"]["uid"] == created["metadata"]["uid"]


def test_unschedulable_pod_gets_one_failed_scheduling_warning_per_message(cluster) -> None:
    store, loop = cluster
    store.create(PODS, pod("big", cpu="8"))
    loop.start_informers()
    eventually(_synced(loop, store))
    loop.run_once()
    eventually(_synced(loop, store))
    loop.queue.move()  # requeue the pod: a second attempt with the same outcome
    loop.run_once()
    [event] = _events(store, "FailedScheduling")
    assert event["type"] == "Warning" and event["count"] == 1
    assert event["message"].startswith("0/1 nodes are available: 1 Insufficient cpu")


def test_eviction_marks_the_victim_then_deletes_it(cluster) -> None:
    store, loop = cluster
    victim = store.create(PODS, pod("low", node_name="n0"))
    loop.start_informers()
    seen: list[dict] = []
    store.delete = _spy(store.delete, lambda *_: seen.append(store.get(PODS, "ml", "low")))  # type: ignore[method-assign]
    eviction = Eviction("ml/low", "Preempted", "preempted by ml/high")
    loop.writer.write(CycleResult(evictions=[eviction]), "volcano")
    [before] = seen
    [cond] = [c for c in before["status"]["conditions"] if c["type"] == DISRUPTION_TARGET]
    assert (cond["status"], cond["reason"]) == ("True", PREEMPTION_BY_SCHEDULER)
    assert cond["message"] == "volcano: preempted by ml/high"
    [event] = _events(store, "Preempted")
    assert event["involvedObject"]["uid"] == victim["metadata"]["uid"]
    assert event["source"] == {"component": "volcano"} and event["message"] == "preempted by ml/high"
    assert store.list(PODS).items == []


def test_eviction_of_a_pod_already_gone_is_dropped(cluster) -> None:
    store, loop = cluster
    loop.writer.write(CycleResult(evictions=[Eviction("ml/gone", "Preempted")]), "volcano")
    assert store.list(EVENTS).items == []


def _spy(method, before):
    def wrapped(*args, **kwargs):
        before(*args)
        return method(*args, **kwargs)

    return wrapped
