"""The embedded Kueue is fed by informer events: once registered, a pass reads only the Workloads whose
events (or their TrainJob's / JobSet's) arrived since the last pass, and an idle pass reads nothing."""

from __future__ import annotations

import time
from typing import Any

from kueue_shell import setup, trainjob

from gangplane.client.controller import Manager
from gangplane.schedulers.kueue.controller import CYCLE_KEY
from gangplane.store import catalog
from gangplane.store.memory import MemoryStore
from waiting import poll


class _CountingStore(MemoryStore):
    """Counts reads per resource plural."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.reads: dict[str, int] = {}

    def get(self, rt: Any, namespace: str, name: str) -> Any:
        self.reads[rt.plural] = self.reads.get(rt.plural, 0) + 1
        return super().get(rt, namespace, name)

    def list(self, rt: Any, *args: Any, **kw: Any) -> Any:
        self.reads[rt.plural] = self.reads.get(rt.plural, 0) + 1
        return super().list(rt, *args, **kw)


def _settled(store: MemoryStore, *names: str) -> tuple[Any, Any]:
    """Two TrainJobs through a started manager until the first runs; then the manager is stopped."""
    _, clock, kueue, _ = setup(store)
    manager = Manager(store, clock)
    kueue.register(manager)
    manager.start(timeout=10)
    try:
        for name in names:
            store.create(catalog.TRAINJOBS, trainjob(name))
        poll(lambda: store.get(catalog.TRAINJOBS, "ml", names[0])["spec"].get("suspend") is False, 10)
        time.sleep(0.3)  # let the passes that our own writes wake settle
    finally:
        manager.stop()
    kueue.reconciler.reconcile(CYCLE_KEY)  # events recorded after the manager's last pass
    return kueue, clock


def test_an_idle_pass_reads_nothing() -> None:
    store = _CountingStore()
    kueue, _ = _settled(store, "first", "second")
    store.reads.clear()
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert store.reads == {}


def test_a_pass_reads_only_the_workload_that_changed() -> None:
    store = _CountingStore()
    kueue, _ = _settled(store, "first", "second")
    waiting = {j["metadata"]["name"] for j in store.list(catalog.TRAINJOBS).items if j["spec"].get("suspend")}
    workloads = store.list(catalog.WORKLOADS).items
    [pending] = [w for w in workloads if w["metadata"]["ownerReferences"][0]["name"] in waiting]
    store.reads.clear()
    kueue.reconciler.changes.workload(pending)  # what the Workload informer's handler does on an event
    kueue.reconciler.reconcile(CYCLE_KEY)
    # one get of that Workload and of its owner TrainJob; nothing in it changed, so nothing is published
    assert store.reads == {"workloads": 1, "trainjobs": 1}


def test_a_trainjob_event_marks_its_workload() -> None:
    store = _CountingStore()
    kueue, _ = _settled(store, "first")
    job = store.get(catalog.TRAINJOBS, "ml", "first")
    job["status"] = {
        "conditions": [{"type": "Complete", "status": "True", "reason": "Completed", "message": "ok"}]
    }
    store.update_status(catalog.TRAINJOBS, job)
    kueue.reconciler.changes.owner(job)  # the TrainJob informer's handler
    kueue.reconciler.reconcile(CYCLE_KEY)
    [workload] = store.list(catalog.WORKLOADS).items
    assert any(c["type"] == "Finished" and c["status"] == "True" for c in workload["status"]["conditions"])
