"""ClusterQueue, LocalQueue and Cohort status as upstream's queue controllers write it: counts, flavor usage,
the Active condition, fair-sharing shares, written only on change and shown by ``kubectl get``."""

from __future__ import annotations

from typing import Any

from kueue_shell import KUEUE, setup, trainjob

from gangplane.schedulers.kueue.controller import CYCLE_KEY
from gangplane.schedulers.kueue.fairsharing import PreemptionStrategy
from gangplane.schedulers.kueue.state import KueueConfig
from gangplane.server.tables import render_table
from gangplane.store import catalog
from gangplane.store.memory import MemoryStore


def _three_jobs() -> tuple[MemoryStore, Any, Any]:
    """One job runs (4 cpu, 4 GPUs of the queue's 8 cpu, 4 GPUs), two wait."""
    store, clock, kueue, _ = setup()
    for name in ("a", "b", "c"):
        store.create(catalog.TRAINJOBS, trainjob(name))
        kueue.reconciler.reconcile(("ml", name))
        clock.advance(2)
    kueue.reconciler.reconcile(CYCLE_KEY)
    return store, clock, kueue


def test_cluster_queue_status_counts_and_usage() -> None:
    store, _, _ = _three_jobs()
    status = store.get(catalog.CLUSTER_QUEUES, "", "cq")["status"]
    assert (status["pendingWorkloads"], status["reservingWorkloads"], status["admittedWorkloads"]) == (
        2,
        1,
        1,
    )
    used = [{"name": "a100", "resources": [{"name": "cpu", "total": "4", "borrowed": "0"},
                                          {"name": "nvidia.com/gpu", "total": "4", "borrowed": "0"}]}]  # fmt: skip
    assert status["flavorsReservation"] == status["flavorsUsage"] == used
    [active] = status["conditions"]
    assert (active["type"], active["status"], active["reason"], active["message"]) == (
        "Active", "True", "Ready", "Can admit new workloads"
    )  # fmt: skip
    assert "fairSharing" not in status  # only with fair sharing enabled


def test_local_queue_status_counts_and_usage_without_borrowed() -> None:
    store, _, _ = _three_jobs()
    status = store.get(catalog.LOCAL_QUEUES, "ml", "team")["status"]
    assert (status["pendingWorkloads"], status["reservingWorkloads"], status["admittedWorkloads"]) == (
        2,
        1,
        1,
    )
    assert status["flavorsUsage"] == [
        {
            "name": "a100",
            "resources": [{"name": "cpu", "total": "4"}, {"name": "nvidia.com/gpu", "total": "4"}],
        }
    ]
    [active] = status["conditions"]
    assert (active["status"], active["reason"], active["message"]) == (
        "True", "Ready", "Can submit new workloads to localQueue"
    )  # fmt: skip


def test_status_is_written_only_on_change() -> None:
    store, clock, kueue = _three_jobs()
    before = store.get(catalog.CLUSTER_QUEUES, "", "cq")["metadata"]["resourceVersion"]
    clock.advance(5)
    kueue.reconciler.reconcile(CYCLE_KEY)
    kueue.reconciler.reconcile(CYCLE_KEY)
    assert store.get(catalog.CLUSTER_QUEUES, "", "cq")["metadata"]["resourceVersion"] == before


def test_missing_flavor_makes_both_queues_inactive() -> None:
    store, _, kueue = _three_jobs()
    cq = store.get(catalog.CLUSTER_QUEUES, "", "cq")
    cq["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "h100"
    store.update(catalog.CLUSTER_QUEUES, cq)
    kueue.reconciler.reconcile(CYCLE_KEY)
    [active] = store.get(catalog.CLUSTER_QUEUES, "", "cq")["status"]["conditions"]
    assert (active["status"], active["reason"], active["message"]) == (
        "False", "FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor(s): h100."
    )  # fmt: skip
    [lq] = store.get(catalog.LOCAL_QUEUES, "ml", "team")["status"]["conditions"]
    assert (lq["status"], lq["reason"]) == ("False", "ClusterQueueIsInactive")


def test_local_queue_of_a_missing_cluster_queue() -> None:
    store, _, kueue = _three_jobs()
    lq = {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": "lost", "namespace": "ml"},
          "spec": {"clusterQueue": "nowhere"}}  # fmt: skip
    store.create(catalog.LOCAL_QUEUES, lq)
    kueue.reconciler.reconcile(CYCLE_KEY)
    status = store.get(catalog.LOCAL_QUEUES, "ml", "lost")["status"]
    assert (status["pendingWorkloads"], status["admittedWorkloads"]) == (0, 0)
    assert status["conditions"][0]["reason"] == "ClusterQueueDoesNotExist"


def test_fair_sharing_weighted_share_on_cluster_queues_and_cohorts() -> None:
    fair = KueueConfig(fair_sharing=(PreemptionStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,))
    store, _, kueue, _ = setup(config=fair)
    cq = store.get(catalog.CLUSTER_QUEUES, "", "cq")
    cq["spec"]["cohortName"] = "pool"
    store.update(catalog.CLUSTER_QUEUES, cq)
    lender = {**cq, "metadata": {"name": "lender"}}
    store.create(catalog.CLUSTER_QUEUES, lender)
    store.create(
        catalog.COHORTS, {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": "pool"}, "spec": {}}
    )
    for name in ("a", "b"):  # 8 GPUs: the second job borrows the lender's 4
        store.create(catalog.TRAINJOBS, trainjob(name))
        kueue.reconciler.reconcile(("ml", name))
    kueue.reconciler.reconcile(CYCLE_KEY)
    status = store.get(catalog.CLUSTER_QUEUES, "", "cq")["status"]
    gpu = next(r for r in status["flavorsUsage"][0]["resources"] if r["name"] == "nvidia.com/gpu")
    assert gpu == {"name": "nvidia.com/gpu", "total": "8", "borrowed": "4"}
    # 4 GPUs borrowed of the 8 in the cohort (cpu: none borrowed): share 4 / 8 x 1000, weight 1
    assert status["fairSharing"] == {"weightedShare": 500}
    assert store.get(catalog.CLUSTER_QUEUES, "", "lender")["status"]["fairSharing"] == {"weightedShare": 0}
    assert store.get(catalog.COHORTS, "", "pool")["status"] == {"fairSharing": {"weightedShare": 0}}


def test_kubectl_get_shows_the_counts() -> None:
    store, _, _ = _three_jobs()
    for rt in (catalog.CLUSTER_QUEUES, catalog.LOCAL_QUEUES):
        table = render_table(rt, store.list(rt).items, 0.0)
        names = [c["name"] for c in table["columnDefinitions"]]
        [row] = table["rows"]
        cells = dict(zip(names, row["cells"], strict=True))
        assert (cells["Pending Workloads"], cells["Admitted Workloads"]) == (2, 1)
