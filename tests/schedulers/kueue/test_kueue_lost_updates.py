"""The embedded Kueue never reverts what another writer set on its objects since Kueue read them: another
controller's Workload condition (upstream's workload status is applied per condition type, so an admission
check controller's or a user's condition stays), a finalizer added to a Workload, another manager's entry in a
TrainJob's ``runtimePatches``. Each case lands a second writer between Kueue's read and its write."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kueue_shell import conditions, setup, trainjob, workload_of

from gangplane.client.guarded import WRITE_ATTEMPTS, patch_read
from gangplane.errors import Conflict
from gangplane.schedulers.kueue.controller import CYCLE_KEY
from gangplane.schedulers.kueue.guarded import with_list_entry
from gangplane.store import catalog
from gangplane.store.base import ResourceType
from gangplane.store.memory import MemoryStore

AUDITED = "example.com/Audited"
TUNER = {"manager": "example.com/tuner"}


class _Interloper(MemoryStore):
    """Runs ``act`` once, just before the first patch ``when`` matches: a writer that lands between Kueue's read
    and its write."""

    def __init__(self) -> None:
        super().__init__()
        self.armed: tuple[Callable[[ResourceType, Any], bool], Callable[[], None]] | None = None

    def patch(self, rt: Any, namespace: str, name: str, patch: Any, patch_type: str, **kw: Any) -> Any:
        if self.armed is not None and self.armed[0](rt, patch):
            act, self.armed = self.armed[1], None
            act()
        return super().patch(rt, namespace, name, patch, patch_type, **kw)


def _audit(store: MemoryStore, name: str, value: str) -> None:
    """Another controller sets its own condition on the Workload ``name``."""
    workload = store.get(catalog.WORKLOADS, "ml", name)
    status = workload.setdefault("status", {})
    others = [c for c in status.get("conditions") or [] if c["type"] != AUDITED]
    condition = {"type": AUDITED, "status": value, "reason": "Audited", "message": "checked",
                 "lastTransitionTime": "2027-01-15T08:00:00Z"}  # fmt: skip
    status["conditions"] = [*others, condition]
    store.update_status(catalog.WORKLOADS, workload)


def _admit_low(store: MemoryStore, kueue: Any, clock: Any, audit_first: str | None = None) -> str:
    """``low`` admitted; its Workload's name. ``audit_first``: the foreign condition set before Kueue's first
    read of the Workload."""
    store.create(catalog.TRAINJOBS, trainjob("low"))
    kueue.reconciler.reconcile(("ml", "low"))
    name = str(workload_of(store, "low")["metadata"]["name"])
    if audit_first is not None:
        _audit(store, name, audit_first)
    clock.advance(2)
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert conditions(workload_of(store, "low"))["Admitted"][0] == "True"
    return name


def _preempt_low(store: MemoryStore, kueue: Any) -> None:
    store.create(catalog.TRAINJOBS, trainjob("urgent", priority_class="high"))
    kueue.reconciler.reconcile(("ml", "urgent"))
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert conditions(workload_of(store, "low"))["Evicted"] == ("True", "Preempted")


def test_a_status_write_keeps_a_condition_set_since_kueue_read_the_workload() -> None:
    store, clock, kueue, _ = setup()
    name = _admit_low(store, kueue, clock)
    _audit(store, name, "True")
    _preempt_low(store, kueue)
    assert conditions(workload_of(store, "low"))[AUDITED] == ("True", "Audited")


def test_a_foreign_condition_read_once_is_not_written_back_stale() -> None:
    """Kueue read the condition with the Workload (``False``); its owner changed it since: Kueue's next write
    carries the owner's value, not the one Kueue remembers."""
    store, clock, kueue, _ = setup()
    name = _admit_low(store, kueue, clock, audit_first="False")
    _audit(store, name, "True")
    _preempt_low(store, kueue)
    assert conditions(workload_of(store, "low"))[AUDITED] == ("True", "Audited")


def test_a_condition_written_between_kueues_read_and_its_write_survives() -> None:
    store = _Interloper()
    _, clock, kueue, _ = setup(store)
    name = _admit_low(store, kueue, clock)
    store.armed = (
        lambda rt, body: rt == catalog.WORKLOADS and "status" in body,
        lambda: _audit(store, name, "True"),
    )
    _preempt_low(store, kueue)
    assert store.armed is None
    assert conditions(workload_of(store, "low"))[AUDITED] == ("True", "Audited")


def test_removing_kueues_finalizer_keeps_one_added_since() -> None:
    store = _Interloper()
    _, clock, kueue, _ = setup(store)
    name = _admit_low(store, kueue, clock)

    def add_finalizer() -> None:
        workload = store.get(catalog.WORKLOADS, "ml", name)
        workload["metadata"]["finalizers"] = [*workload["metadata"]["finalizers"], "example.com/keep"]
        store.update(catalog.WORKLOADS, workload)

    store.armed = (lambda rt, body: rt == catalog.WORKLOADS and "finalizers" in body.get("metadata", {}),
                   add_finalizer)  # fmt: skip
    job = store.get(catalog.TRAINJOBS, "ml", "low")
    job["status"] = {
        "conditions": [{"type": "Complete", "status": "True", "reason": "Completed", "message": "ok"}]
    }
    store.update_status(catalog.TRAINJOBS, job)
    kueue.reconciler.reconcile(CYCLE_KEY)  # writes Finished
    kueue.reconciler.reconcile(CYCLE_KEY)  # removes the finalizer
    assert store.armed is None
    assert store.get(catalog.WORKLOADS, "ml", name)["metadata"]["finalizers"] == ["example.com/keep"]


def _add_tuner_patch() -> Callable[[MemoryStore], None]:
    def act(store: MemoryStore) -> None:
        job = store.get(catalog.TRAINJOBS, "ml", "low")
        job["spec"]["runtimePatches"] = [*job["spec"]["runtimePatches"], TUNER]
        store.update(catalog.TRAINJOBS, job)

    return act


def _runtime_patch_write(rt: ResourceType, body: Any) -> bool:
    return rt == catalog.TRAINJOBS and "runtimePatches" in body.get("spec", {})


def test_starting_a_job_keeps_another_managers_runtime_patch_added_since() -> None:
    store = _Interloper()
    _, clock, kueue, _ = setup(store)
    store.armed = (_runtime_patch_write, lambda: _add_tuner_patch()(store))
    _admit_low(store, kueue, clock)
    assert store.armed is None
    job = store.get(catalog.TRAINJOBS, "ml", "low")
    assert job["spec"]["suspend"] is False
    managers = [p["manager"] for p in job["spec"]["runtimePatches"]]
    assert managers == ["kueue.x-k8s.io/manager", TUNER["manager"]]
    assert "trainingRuntimeSpec" in job["spec"]["runtimePatches"][0]  # Kueue's admission patch is written


def test_clearing_kueues_patch_keeps_another_managers_runtime_patch_added_since() -> None:
    store = _Interloper()
    _, clock, kueue, _ = setup(store)
    _admit_low(store, kueue, clock)
    _preempt_low(store, kueue)  # low is suspended, its pods gone: Kueue clears its patch
    store.armed = (_runtime_patch_write, lambda: _add_tuner_patch()(store))
    kueue.reconciler.reconcile(("ml", "low"))
    assert store.armed is None
    patches = store.get(catalog.TRAINJOBS, "ml", "low")["spec"]["runtimePatches"]
    assert [p["manager"] for p in patches] == ["kueue.x-k8s.io/manager", TUNER["manager"]]
    assert not (patches[0].get("trainingRuntimeSpec") or {}).get("template", {}).get("spec")


def test_a_guarded_write_gives_up_after_its_attempts_and_never_writes_another_object() -> None:
    store = MemoryStore()
    store.create(catalog.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
    obj = store.create(
        catalog.CONFIGMAPS, {"metadata": {"name": "cm", "namespace": "ml"}, "data": {"n": "0"}}
    )
    bodies: list[str] = []

    def always_raced(current: dict[str, Any]) -> dict[str, Any]:
        bodies.append(current["data"]["n"])  # another writer lands after each read
        store.update(catalog.CONFIGMAPS, {**current, "data": {"n": str(len(bodies))}})
        return {"data": {"mine": "x"}}

    with pytest.raises(Conflict):
        patch_read(store, catalog.CONFIGMAPS, "ml", "cm", always_raced)
    assert bodies == [str(n) for n in range(WRITE_ATTEMPTS)]
    assert (
        patch_read(store, catalog.CONFIGMAPS, "ml", "cm", lambda _: {"data": {"mine": "x"}}, uid="other")
        is None
    )
    assert "mine" not in store.get(catalog.CONFIGMAPS, "ml", "cm")["data"]
    written = patch_read(store, catalog.CONFIGMAPS, "ml", "cm", lambda _: {"data": {"mine": "x"}},
                         uid=obj["metadata"]["uid"])  # fmt: skip
    assert written is not None and written["data"]["mine"] == "x"


def test_a_list_entry_is_replaced_in_place_or_appended() -> None:
    current = {"spec": {"runtimePatches": [{"manager": "a", "v": 1}, {"manager": "k"}, {"manager": "b"}]}}
    assert with_list_entry(current, "runtimePatches", "manager", {"manager": "k", "v": 2}) == [
        {"manager": "a", "v": 1}, {"manager": "k", "v": 2}, {"manager": "b"}]  # fmt: skip
    assert with_list_entry({"spec": {}}, "runtimePatches", "manager", {"manager": "k"}) == [{"manager": "k"}]
