"""A TrainJob pass whose steps fail still does what it can: status, deadline, events (then it is retried)."""

from __future__ import annotations

from typing import Any

import pytest
from harness import Cluster, conditions, torch_runtime

from builders import TrainJobBuilder
from gangplane.client.cache import LiveReads
from gangplane.client.controller import ReconcileError
from gangplane.controllers.trainjob import CREATION_FAILED, TrainJobReconciler
from gangplane.errors import ApiError
from gangplane.runtime.framework import Framework
from gangplane.runtime.plugins import default_registry
from gangplane.runtime.points import Handle
from gangplane.store import catalog
from gangplane.store.base import ResourceType
from gangplane.store.memory import MemoryStore


class _JobSetsRefused:
    """A store whose JobSet writes fail, as an API server refusing them would."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def patch(self, rt: ResourceType, *args: Any, **kwargs: Any) -> dict[str, Any]:
        if rt == catalog.JOBSETS:
            raise ApiError("jobsets.jobset.x-k8s.io is unavailable")
        return self.store.patch(rt, *args, **kwargs)


def test_a_failed_apply_still_writes_status_deadline_and_events() -> None:
    """Upstream collects the reconcile's errors and still updates the status: a TrainJob whose JobSet cannot be
    applied fails at its ``activeDeadlineSeconds`` like any other."""
    cluster = Cluster()
    cluster.create(catalog.CLUSTER_TRAINING_RUNTIMES, torch_runtime())
    cluster.create(catalog.TRAINJOBS, TrainJobBuilder("mnist").num_nodes(1).deadline(5).dict())
    framework = Framework(default_registry(), Handle(cluster.clock))
    reconciler = TrainJobReconciler(_JobSetsRefused(cluster.store), cluster.clock, framework)  # type: ignore[arg-type]
    with pytest.raises(ReconcileError, match="unavailable") as raised:
        reconciler.reconcile(("default", "mnist"))
    assert raised.value.requeue_after == pytest.approx(5.0)  # the deadline is still scheduled
    cluster.clock.advance(6)
    with pytest.raises(ReconcileError):
        reconciler.reconcile(("default", "mnist"))
    assert conditions(cluster.get(catalog.TRAINJOBS, "mnist"))["Failed"] == ("True", "DeadlineExceeded")
    # Identical events are aggregated as Kubernetes does: one Event whose count says how often it happened.
    failures = [e for e in cluster.items(catalog.EVENTS) if e["reason"] == CREATION_FAILED]
    assert sum(e.get("count", 1) for e in failures) == 2
    reconciler.reconcile(("default", "mnist"))  # finished: nothing left to apply, so no error
    assert not cluster.items(catalog.JOBSETS)


class _CacheWithoutRuntimes(LiveReads):
    """A cache that has not yet seen the runtimes (their watch lags the TrainJob's)."""

    def get(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
        runtimes = (catalog.CLUSTER_TRAINING_RUNTIMES, catalog.TRAINING_RUNTIMES)
        return None if rt in runtimes else super().get(rt, namespace, name)


def test_a_runtime_missing_from_the_cache_is_confirmed_live_before_failing() -> None:
    cluster = Cluster()
    cluster.create(catalog.CLUSTER_TRAINING_RUNTIMES, torch_runtime())
    cluster.create(catalog.TRAINJOBS, TrainJobBuilder("mnist").num_nodes(1).dict())
    framework = Framework(default_registry(), Handle(cluster.clock))
    reads = _CacheWithoutRuntimes(cluster.store)
    TrainJobReconciler(cluster.store, cluster.clock, framework, reads=reads).reconcile(("default", "mnist"))
    assert "Failed" not in conditions(cluster.get(catalog.TRAINJOBS, "mnist"))
    assert cluster.get(catalog.JOBSETS, "mnist")["metadata"]["name"] == "mnist"
