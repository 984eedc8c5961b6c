"""The scheduler shell against the in-memory store, on a manual clock."""

from collections.abc import Callable, Iterator

import pytest

from gangplane.clock import ManualClock
from gangplane.schedulers.loop import SchedulerLoop, with_condition
from gangplane.schedulers.registry import default_registry
from gangplane.store.catalog import COSCHEDULING_PODGROUPS, EVENTS, NODES, PODS
from gangplane.store.memory import MemoryStore
from schedulers.kube_builders import T0, node, pod, pod_group
from waiting import wait_for


def _create_node(store: MemoryStore, obj: dict) -> None:
    status = obj.pop("status")
    created = store.create(NODES, obj)
    created["status"] = status
    store.update_status(NODES, created)


@pytest.fixture
def cluster() -> Iterator[tuple[MemoryStore, SchedulerLoop]]:
    store = MemoryStore()
    for i in range(2):
        _create_node(store, node(f"n{i}", cpu="16", gpu=4))
    loop = SchedulerLoop(store, ManualClock(T0), default_registry().build())
    yield store, loop
    loop.stop()


def _pods(store: MemoryStore) -> dict[str, dict]:
    return {p["metadata"]["name"]: p for p in store.list(PODS).items}


def _synced(loop: SchedulerLoop, store: MemoryStore) -> Callable[[], bool]:
    """True once the loop's pod informer holds exactly what the store holds."""

    def versions(objs: list[dict]) -> dict[str, str]:
        return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in objs}

    return lambda: versions(loop.informers[PODS].list()) == versions(store.list(PODS).items)


def test_two_gangs_one_bound_whole_other_waits_then_binds(cluster) -> None:
    store, loop = cluster
    for name, created in (("a", T0), ("b", T0 + 1)):
        store.create(COSCHEDULING_PODGROUPS, pod_group(name, 6, created=created))
        for i in range(6):
            store.create(PODS, pod(f"{name}-{i}", gpu=1, group=name))
    store.create(PODS, pod("stranger", scheduler="nobody"))
    loop.start_informers()
    wait_for(_synced(loop, store), 5.0)

    loop.run_once()
    pods = _pods(store)
    assert {n for n, p in pods.items() if p["spec"].get("nodeName")} == {f"a-{i}" for i in range(6)}
    for i in range(6):
        scheduled = pods[f"a-{i}"]["status"]["conditions"][0]
        assert (scheduled["type"], scheduled["status"]) == ("PodScheduled", "True")
        waiting = pods[f"b-{i}"]["status"]["conditions"][0]
        assert (waiting["status"], waiting["reason"]) == ("False", "Unschedulable")
        assert "pod group ml/b rejected as a whole" in waiting["message"]
        assert "largest placement found 2" in waiting["message"]
    assert "status" not in pods["stranger"] and not pods["stranger"]["spec"].get("nodeName")

    wait_for(_synced(loop, store), 5.0)
    loop.run_once()  # nothing changed: no new writes, b still waits whole
    assert not any(p["spec"].get("nodeName") for n, p in _pods(store).items() if n.startswith("b-"))

    for i in range(6):
        store.delete(PODS, "ml", f"a-{i}")
    wait_for(_synced(loop, store), 5.0)
    loop.run_once()
    pods = _pods(store)
    assert all(pods[f"b-{i}"]["spec"].get("nodeName") for i in range(6))
    assert [c["status"] for c in pods["b-0"]["status"]["conditions"]] == ["True"]


def test_podgroup_status_written(cluster) -> None:
    store, loop = cluster
    store.create(COSCHEDULING_PODGROUPS, pod_group("a", 2))
    for i in range(2):
        store.create(PODS, pod(f"a-{i}", gpu=1, group="a"))
    loop.start_informers()
    wait_for(_synced(loop, store), 5.0)
    loop.run_once()
    status = store.get(COSCHEDULING_PODGROUPS, "ml", "a")["status"]
    assert status["phase"] == "Scheduling" and status["scheduleStartTime"] == "2026-01-01T00:00:00Z"


def test_background_thread_binds(cluster) -> None:
    store, loop = cluster
    loop.period = 0.05
    loop.start()
    store.create(PODS, pod("p"))
    wait_for(lambda: bool(store.get(PODS, "ml", "p")["spec"].get("nodeName")), 5.0)


def test_with_condition_keeps_transition_time() -> None:
    obj = {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "x",
                    "lastTransitionTime": "t0",
                }
            ]
        }
    }
    same = with_condition(
        obj, {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "x"}, T0
    )
    assert same is None
    changed = with_condition(
        obj, {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "y"}, T0
    )
    assert changed is not None and changed["status"]["conditions"][0]["lastTransitionTime"] == "t0"
    flipped = with_condition(obj, {"type": "PodScheduled", "status": "True"}, T0)
    assert (
        flipped is not None
        and flipped["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    )
    assert obj["status"]["conditions"][0]["message"] == "x"  # input untouched


def test_broken_pod_group_gets_an_error_condition_and_one_warning_event(cluster) -> None:
    store, loop = cluster
    bad = pod_group("bad", 1)
    bad["spec"]["minMember"] = "one"
    store.create(COSCHEDULING_PODGROUPS, bad)
    store.create(PODS, pod("bad-0", gpu=1, group="bad"))
    store.create(PODS, pod("fine"))
    loop.start_informers()
    wait_for(_synced(loop, store), 5.0)
    loop.run_once()
    loop.run_once()  # the condition is unchanged: no second event
    pods = _pods(store)
    assert pods["fine"]["spec"]["nodeName"]
    [cond] = [c for c in pods["bad-0"]["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert cond["status"] == "False" and cond["reason"] == "InvalidPodGroup"
    [event] = [e for e in store.list(EVENTS).items if e["type"] == "Warning"]
    assert event["reason"] == "InvalidPodGroup"
    assert event["involvedObject"]["name"] == "bad-0" and "ml/bad is malformed" in event["message"]
