"""The Job controller's shell against a store: pods created with ``SuccessfulCreate`` events, the failure
reported as a Warning event with the condition's reason, and ``ttlSecondsAfterFinished`` deleting the Job."""

from __future__ import annotations

from typing import Any

from gangplane.clock import ManualClock
from gangplane.controllers.job import JobReconciler
from gangplane.store import catalog
from gangplane.store.base import ListOptions
from gangplane.store.memory import MemoryStore


def make_job(store: MemoryStore, **spec: Any) -> dict[str, Any]:
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}
    return store.create(catalog.JOBS, {"apiVersion": "batch/v1", "kind": "Job",
                                       "metadata": {"name": "j", "namespace": "default"},
                                       "spec": {"template": template, **spec}})  # fmt: skip


def reasons(store: MemoryStore) -> list[str]:
    return sorted(e["reason"] for e in store.list(catalog.EVENTS, ListOptions(namespace="default")).items)


def fail_pods(store: MemoryStore) -> None:
    for pod in store.list(catalog.PODS, ListOptions(namespace="default")).items:
        store.update_status(catalog.PODS, {**pod, "status": {"phase": "Failed"}})


def test_events_and_ttl_after_a_failure() -> None:
    store, clock = MemoryStore(), ManualClock()
    reconciler = JobReconciler(store, clock)
    make_job(store, backoffLimit=0, ttlSecondsAfterFinished=30)
    reconciler.reconcile(("default", "j"))
    assert reasons(store) == ["SuccessfulCreate"]
    fail_pods(store)
    assert reconciler.reconcile(("default", "j")).requeue_after == 30
    job = store.get(catalog.JOBS, "default", "j")
    assert [c["reason"] for c in job["status"]["conditions"]] == ["BackoffLimitExceeded"] * 2
    assert reasons(store) == ["BackoffLimitExceeded", "SuccessfulCreate"]
    clock.advance(30)
    reconciler.reconcile(("default", "j"))
    job = store.get(catalog.JOBS, "default", "j") if store.list(catalog.JOBS).items else None
    assert job is None or job["metadata"].get("deletionTimestamp")
