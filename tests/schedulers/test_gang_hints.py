"""The gang path through the loop, event by event: a gang is activated by a member added (once it has
``minMember`` pods), bound or gone, or its PodGroup's spec, never by the scheduler's own status writes (its
members' ``PodScheduled=False`` conditions, its PodGroup's status); a PodGroup's status is recomputed only
after its members or it changed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gangplane.clock import ManualClock
from gangplane.errors import Conflict
from gangplane.schedulers.loop import SchedulerLoop
from gangplane.schedulers.queue import State
from gangplane.schedulers.registry import default_registry
from gangplane.store.base import ResourceType
from gangplane.store.catalog import COSCHEDULING_PODGROUPS, PODS
from gangplane.store.memory import MemoryStore
from schedulers.kube_builders import T0, node, pod, pod_group
from schedulers.test_scheduling_queue import _create_node, _scheduled
from waiting import wait_for


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    s = MemoryStore()
    _create_node(s, node("n0", cpu="8"))
    yield s
    s.close()


@pytest.fixture
def loop(store: MemoryStore) -> Iterator[SchedulerLoop]:
    made = SchedulerLoop(store, ManualClock(T0), default_registry().build())
    yield made
    made.stop()


def _caught_up(loop: SchedulerLoop, store: MemoryStore) -> None:
    """Wait until the loop's informers hold every pod and PodGroup version the store holds."""

    def versions(rt: ResourceType, objs: list[dict]) -> dict[str, str]:
        return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in objs}

    for rt in (PODS, COSCHEDULING_PODGROUPS):
        wait_for(
            lambda rt=rt: versions(rt, loop.informers[rt].list()) == versions(rt, store.list(rt).items), 10.0
        )


def _phase(store: MemoryStore, name: str) -> str:
    return str((store.get(COSCHEDULING_PODGROUPS, "ml", name).get("status") or {}).get("phase") or "")


def test_a_gang_is_not_reactivated_by_its_own_status_writes(store: MemoryStore, loop: SchedulerLoop) -> None:
    store.create(COSCHEDULING_PODGROUPS, pod_group("g", 4))
    for i in range(2):  # 2 of 4: PreFilter leaves the gang waiting for siblings
        store.create(PODS, pod(f"g-{i}", group="g"))
    loop.start_informers()
    _caught_up(loop, store)
    loop.run_once()
    assert _scheduled(store, "g-0") == ("False", "Unschedulable")
    assert _phase(store, "g") == "Pending"
    _caught_up(loop, store)  # the conditions and the PodGroup status came back as events
    assert loop.passes == 1 and not loop.queue.has_work()
    assert loop.queue.counts()[State.UNSCHEDULABLE] == 2
    store.create(PODS, pod("g-2", group="g"))  # 3 of 4: PreFilter would still reject it, so no attempt
    _caught_up(loop, store)
    assert loop.queue.counts()[State.UNSCHEDULABLE] == 3
    statuses_only = loop.run_once()  # the PodGroup's status may follow its new member; no gang attempt
    assert not any(r.pending or r.bindings for _, r in statuses_only.results)
    assert _scheduled(store, "g-2") is None
    store.create(PODS, pod("g-3", group="g"))  # the member that completes the gang is a reason
    _caught_up(loop, store)
    assert loop.queue.has_work()
    assert len(loop.run_once().bindings()) == 4
    _caught_up(loop, store)  # bound members, the PodGroup's Scheduling status: nothing left to do
    assert loop.passes == 3 and not loop.queue.has_work()
    assert _phase(store, "g") == "Scheduling"


def test_only_the_changed_pod_group_is_recomputed(store: MemoryStore, loop: SchedulerLoop) -> None:
    for name in ("a", "b"):
        store.create(COSCHEDULING_PODGROUPS, pod_group(name, 1))
        store.create(PODS, pod(f"{name}-0", group=name))
    loop.start_informers()
    _caught_up(loop, store)
    loop.run_once()
    _caught_up(loop, store)
    assert not loop.queue.has_work()
    running = store.get(PODS, "ml", "a-0")
    running["status"]["phase"] = "Running"
    store.update_status(PODS, running)
    _caught_up(loop, store)
    batch = loop.queue.pop(T0)
    # both Coscheduling instances hear of it (the one whose pods the group holds writes); no gang attempt
    assert set(batch.groups.values()) == {frozenset({"ml/a"})}
    assert set(batch.pending.values()) == {()}


def test_a_member_phase_change_updates_the_pod_group_without_an_attempt(
    store: MemoryStore, loop: SchedulerLoop
) -> None:
    store.create(COSCHEDULING_PODGROUPS, pod_group("g", 2))
    for i in range(2):
        store.create(PODS, pod(f"g-{i}", group="g"))
    loop.start()
    wait_for(lambda: _phase(store, "g") == "Scheduling", 10.0)
    # the PodGroup may say Scheduling while the binding cycle is still writing its members
    wait_for(lambda: all(store.get(PODS, "ml", f"g-{i}")["spec"].get("nodeName") for i in range(2)), 10.0)
    for i in range(2):
        running = store.get(PODS, "ml", f"g-{i}")
        running.setdefault("status", {})["phase"] = "Running"
        store.update_status(PODS, running)
    wait_for(lambda: _phase(store, "g") == "Running", 10.0)
    assert store.get(COSCHEDULING_PODGROUPS, "ml", "g")["status"]["running"] == 2


def test_a_lost_pod_group_status_write_is_decided_again(
    store: MemoryStore, loop: SchedulerLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write loses a race once: the next pass recomputes that group, though nothing else changed."""
    store.create(COSCHEDULING_PODGROUPS, pod_group("g", 1))
    store.create(PODS, pod("g-0", group="g"))
    real, lost = store.update_status, []

    def racing(rt: ResourceType, obj: dict) -> dict:
        if rt == COSCHEDULING_PODGROUPS and not lost:
            lost.append(obj["metadata"]["name"])
            raise Conflict("the object has been modified")
        return real(rt, obj)

    monkeypatch.setattr(store, "update_status", racing)
    loop.start_informers()
    _caught_up(loop, store)
    loop.run_once()
    assert lost == ["g"] and _phase(store, "g") == ""
    assert loop.queue.has_work()
    loop.run_once()
    assert _phase(store, "g") == "Scheduling"
