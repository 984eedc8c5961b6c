"""``spec.active`` through the controller shell: ``kubectl patch workload ... -p '{"spec":{"active":false}}'``
stops the TrainJob and frees its quota, ``true`` queues it again; Kueue's own deactivation at the requeuing limit
is written to ``spec.active``, so it survives a restart, as does the conditions' history."""

from __future__ import annotations

from typing import Any

from kueue_shell import conditions, setup, trainjob, workload_of

from gangplane.schedulers.kueue.controller import CYCLE_KEY, build_kueue_controller
from gangplane.schedulers.kueue.podsready import WaitForPodsReady
from gangplane.schedulers.kueue.state import KueueConfig
from gangplane.store import MERGE_PATCH, catalog
from gangplane.store.memory import MemoryStore

# The ClusterQueue holds 4 GPUs; each TrainJob asks for 2 pods x 2 GPUs: one runs, the other queues.
NO_WAIT = KueueConfig(WaitForPodsReady(enabled=False))


def _submit(store: MemoryStore, kueue: Any, clock: Any, *names: str) -> None:
    for name in names:
        store.create(catalog.TRAINJOBS, trainjob(name))
        kueue.reconciler.reconcile(("ml", name))
        clock.advance(2)
    kueue.reconciler.reconcile(CYCLE_KEY)


def _set_active(store: MemoryStore, job: str, active: bool) -> None:
    name = workload_of(store, job)["metadata"]["name"]
    store.patch(catalog.WORKLOADS, "ml", name, {"spec": {"active": active}}, MERGE_PATCH)


def _suspended(store: MemoryStore, name: str) -> bool:
    return bool(store.get(catalog.TRAINJOBS, "ml", name)["spec"]["suspend"])


def _condition(store: MemoryStore, job: str, type_: str) -> tuple[str, str, str]:
    found = {c["type"]: c for c in workload_of(store, job)["status"]["conditions"]}
    return found[type_]["status"], found[type_]["reason"], found[type_]["message"]


def _pass(kueue: Any, clock: Any, *jobs: str) -> None:
    """One admission pass after Kueue's one-second requeue batching, then each job's reconcile."""
    clock.advance(1)
    kueue.reconciler.reconcile(CYCLE_KEY)
    for job in jobs:
        kueue.reconciler.reconcile(("ml", job))


def test_deactivating_an_admitted_workload_stops_its_job_and_frees_the_quota() -> None:
    store, clock, kueue, _ = setup(config=NO_WAIT)
    _submit(store, kueue, clock, "first", "second")
    assert (_suspended(store, "first"), _suspended(store, "second")) == (False, True)
    _set_active(store, "first", False)
    _pass(kueue, clock, "first", "second")
    assert _suspended(store, "first") and not _suspended(store, "second")  # the freed quota admits the next
    assert _condition(store, "first", "Evicted") == ("True", "Deactivated", "The workload is deactivated")
    assert _condition(store, "first", "QuotaReserved")[:2] == ("False", "Deactivated")
    assert _condition(store, "first", "Requeued")[:2] == ("False", "Deactivated")
    status = workload_of(store, "first")["status"]
    assert status.get("admission") is None
    assert status["schedulingStats"]["evictions"] == [
        {"reason": "Deactivated", "underlyingCause": "", "count": 1}
    ]
    name = workload_of(store, "first")["metadata"]["name"]
    assert kueue.reconciler.position("ml", name) is None  # out of the queue while inactive


def test_reactivating_queues_it_again_behind_the_running_job() -> None:
    store, clock, kueue, _ = setup(config=NO_WAIT)
    _submit(store, kueue, clock, "first", "second")
    _set_active(store, "first", False)
    _pass(kueue, clock, "first", "second")
    _set_active(store, "first", True)
    _pass(kueue, clock, "first")
    assert _condition(store, "first", "Requeued") == ("True", "Reactivated", "The workload was reactivated")
    name = workload_of(store, "first")["metadata"]["name"]
    assert kueue.reconciler.position("ml", name) == 0 and _suspended(store, "first")
    store.delete(catalog.TRAINJOBS, "ml", "second")
    _pass(kueue, clock, "first")
    _pass(kueue, clock, "first")  # the quota freed by the deletion requeues after the batching delay
    assert not _suspended(store, "first")
    evicted = _condition(
        store, "first", "Evicted"
    )  # upstream's SetQuotaReservation keeps it, as "Previously"
    assert evicted == ("False", "QuotaReserved", "Previously: The workload is deactivated")


def test_a_pending_workload_deactivated_is_never_admitted() -> None:
    store, clock, kueue, _ = setup(config=NO_WAIT)
    _submit(store, kueue, clock, "first", "second")
    _set_active(store, "second", False)
    _pass(kueue, clock, "second")
    store.delete(catalog.TRAINJOBS, "ml", "first")
    _pass(kueue, clock, "second")
    _pass(kueue, clock, "second")
    assert _suspended(store, "second")
    assert _condition(store, "second", "Evicted") == ("True", "Deactivated", "The workload is deactivated")
    assert _condition(store, "second", "QuotaReserved")[:2] == ("False", "Deactivated")


def test_the_requeuing_limit_sets_spec_active_false_and_it_survives_a_restart() -> None:
    config = KueueConfig(WaitForPodsReady(timeout=10, backoff_limit_count=0))
    store, clock, kueue, registry = setup(config=config)
    _submit(store, kueue, clock, "job")
    assert not _suspended(store, "job")
    clock.advance(10)  # its pods never become ready (no JobSet on this store)
    _pass(kueue, clock, "job")
    workload = workload_of(store, "job")
    assert workload["spec"]["active"] is False and _suspended(store, "job")
    message = "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
    assert _condition(store, "job", "Evicted") == ("True", "DeactivatedDueToRequeuingLimitExceeded", message)
    stats = workload["status"]["schedulingStats"]["evictions"]
    assert stats == [{"reason": "Deactivated", "underlyingCause": "RequeuingLimitExceeded", "count": 1}]
    assert workload["status"].get("requeueState") is None
    labels = {"cluster_queue": "cq", "reason": "Deactivated", "underlying_cause": "RequeuingLimitExceeded"}
    assert registry.get_sample_value("kueue_evicted_workloads_total", labels) == 1

    restarted = build_kueue_controller(store, clock, None, config)
    _pass(restarted, clock, "job")
    assert _suspended(store, "job")  # still inactive: not admitted again
    assert _condition(store, "job", "Evicted") == ("True", "DeactivatedDueToRequeuingLimitExceeded", message)
    assert workload_of(store, "job")["status"]["schedulingStats"]["evictions"] == stats
    _set_active(store, "job", True)
    _pass(restarted, clock, "job")
    assert not _suspended(store, "job")
    assert conditions(workload_of(store, "job"))["Requeued"] == ("True", "Reactivated")


def test_a_restart_keeps_the_conditions_it_does_not_set() -> None:
    """Upstream updates only the condition types it sets: a Preempted/Evicted history written before a restart
    is not overwritten by the first write after it."""
    store, clock, kueue, _ = setup(config=NO_WAIT)
    _submit(store, kueue, clock, "first", "second")
    _set_active(store, "second", False)
    _pass(kueue, clock, "second")
    before = workload_of(store, "second")["status"]["conditions"]
    restarted = build_kueue_controller(store, clock, None, NO_WAIT)
    _pass(restarted, clock, "second")
    assert workload_of(store, "second")["status"]["conditions"] == before
