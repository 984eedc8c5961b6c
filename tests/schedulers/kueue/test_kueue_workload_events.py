"""The Kubernetes Events the embedded Kueue records on Workloads (upstream's scheduler and preemptor):
QuotaReserved and Admitted when admitted, a Warning Pending when the inadmissible message changes, Preempted
on a preemption victim; each once per transition, not again on a later pass or a restart."""

from __future__ import annotations

from typing import Any

from kueue_shell import setup, trainjob, workload_of

from gangplane.schedulers.kueue.controller import CYCLE_KEY, build_kueue_controller
from gangplane.schedulers.kueue.events import transitions
from gangplane.store import catalog
from gangplane.store.memory import MemoryStore

# The ClusterQueue holds 4 GPUs; each TrainJob asks for 2 pods x 2 GPUs: one runs, the rest queue.


def _submit(store: MemoryStore, kueue: Any, clock: Any, name: str, priority_class: str | None = None) -> None:
    store.create(catalog.TRAINJOBS, trainjob(name, priority_class))
    kueue.reconciler.reconcile(("ml", name))
    clock.advance(3)
    kueue.reconciler.reconcile(CYCLE_KEY)


def _events(store: MemoryStore, job: str) -> list[tuple[str, str, str, int]]:
    name = workload_of(store, job)["metadata"]["name"]
    return sorted(
        (e["type"], e["reason"], e["message"], e.get("count", 1))
        for e in store.list(catalog.EVENTS).items
        if e["involvedObject"]["name"] == name and e["involvedObject"]["kind"] == "Workload"
    )


def test_admission_pending_and_preemption_are_announced_once() -> None:
    store, clock, kueue, _ = setup()
    _submit(store, kueue, clock, "first")
    assert _events(store, "first") == [
        ("Normal", "Admitted", "Admitted by ClusterQueue cq, wait time since reservation was 0s", 1),
        ("Normal", "QuotaReserved", "Quota reserved in ClusterQueue cq, wait time since queued was 3s", 1),
    ]
    _submit(store, kueue, clock, "second")
    pending = _events(store, "second")
    assert [(kind, reason) for kind, reason, _, _ in pending] == [("Warning", "Pending")]
    assert "insufficient unused quota" in pending[0][2]
    clock.advance(5)
    kueue.reconciler.reconcile(CYCLE_KEY)  # nothing changed: nothing said again
    assert _events(store, "second") == pending and len(_events(store, "first")) == 2
    _submit(store, kueue, clock, "urgent", priority_class="high")
    preempted = [e for e in _events(store, "first") if e[1] == "Preempted"]
    assert len(preempted) == 1 and "Preempted to accommodate" in preempted[0][2]
    clock.advance(2)
    restarted = build_kueue_controller(store, clock)
    restarted.reconciler.reconcile(CYCLE_KEY)  # conditions read back are not news
    assert len([e for e in _events(store, "first") if e[1] == "Preempted"]) == 1


def test_an_eviction_other_than_preemption_says_why() -> None:
    stamp = "2026-12-03T10:00:00Z"
    evicted = {"type": "Evicted", "status": "True", "reason": "Deactivated", "message": "The workload is deactivated",
               "lastTransitionTime": stamp}  # fmt: skip
    said = transitions({"conditions": [evicted]}, "cq", stamp, 0.0)
    assert said == [("Normal", "EvictedDueToDeactivated", "The workload is deactivated")]
    assert transitions({"conditions": [evicted]}, "cq", "2026-12-03T10:00:01Z", 0.0) == []
