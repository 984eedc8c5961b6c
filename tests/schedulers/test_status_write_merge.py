"""A scheduler's status write is a merge patch from the status it was computed from (controller-runtime's
``MergeFrom``, which scheduler-plugins' PodGroup controller, Volcano and KAI use): a field another writer set
since — Slurm Bridge's ``PodScheduled`` condition on a PodGroup — survives a phase change computed from an
older copy. (A CI run lost that condition this way: the bridge forgets the Slurm job right after writing it,
so no later pass wrote it again.)"""

from __future__ import annotations

from typing import Any

import pytest

from gangplane.clock import ManualClock
from gangplane.schedulers.base import CycleResult, PendingReason, Status, StatusWrite
from gangplane.schedulers.core.objects import DEFAULT_SCHEDULER
from gangplane.schedulers.writes import ResultWriter
from gangplane.store.catalog import COSCHEDULING_PODGROUPS, PODS
from gangplane.store.memory import MemoryStore
from schedulers.kube_builders import T0, pod, pod_group

BRIDGE_CONDITION = {"type": "PodScheduled", "status": "False", "reason": "SlurmJobEnded", "message": "ended"}


@pytest.mark.parametrize(
    ("base", "status", "current", "expected"),
    [
        (
            {"phase": "Running"},
            {"phase": "Failed"},
            {"phase": "Running", "c": 1},
            {"phase": "Failed", "c": 1},
        ),
        (
            {"phase": "Running", "x": 1},
            {"phase": "Running"},
            {"phase": "Running", "x": 2},
            {"phase": "Running"},
        ),
        ({}, {"phase": "Pending"}, {"c": 1}, {"phase": "Pending", "c": 1}),
        # unchanged from base: the current value stays (another writer's newer value wins that field)
        ({"phase": "Running", "n": 1}, {"phase": "Failed", "n": 1}, {"n": 2}, {"phase": "Failed", "n": 2}),
        (None, {"phase": "Failed"}, {"phase": "Running", "c": 1}, {"phase": "Failed"}),  # no base: replaced
    ],
    ids=["changed-field", "removed-field", "new-field", "unchanged-field-kept", "replace"],
)
def test_applied_to(
    base: dict[str, Any] | None, status: dict[str, Any], current: dict[str, Any], expected: dict[str, Any]
) -> None:
    write = StatusWrite(COSCHEDULING_PODGROUPS, "ml", "g", status, base)
    assert write.applied_to(current) == expected


def test_a_pod_group_phase_write_keeps_a_condition_written_since() -> None:
    store = MemoryStore()
    try:
        running = store.create(COSCHEDULING_PODGROUPS, pod_group("g", 3))
        running["status"] = {"phase": "Running", "running": 3}
        base = store.update_status(COSCHEDULING_PODGROUPS, running)["status"]  # what the scheduler read
        ended = store.get(COSCHEDULING_PODGROUPS, "ml", "g")
        ended["status"]["conditions"] = [BRIDGE_CONDITION]
        store.update_status(COSCHEDULING_PODGROUPS, ended)  # the bridge, after the scheduler read the group
        failed = {**base, "phase": "Failed", "failed": 3}
        ResultWriter(store, ManualClock(T0), {}).write(
            CycleResult(status_writes=[StatusWrite(COSCHEDULING_PODGROUPS, "ml", "g", failed, base)])
        )
        status = store.get(COSCHEDULING_PODGROUPS, "ml", "g")["status"]
        assert status["phase"] == "Failed" and status["failed"] == 3
        assert status["conditions"] == [BRIDGE_CONDITION]
    finally:
        store.close()


class _LaggingCache:
    """An informer cache that has not yet seen the writer's own last write (what ``ResultWriter`` reads)."""

    def __init__(self, stale: dict[str, Any]) -> None:
        self.stale = stale

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.stale if (namespace, name) == ("ml", "p") else None


def test_a_pending_condition_is_written_though_the_cache_lags_the_last_one() -> None:
    # a gang member's first attempt wrote "not enough siblings"; the gang's attempt, computed while the cache
    # still held the pod from before that write, lost its write to a Conflict and nothing requeued the pod
    store = MemoryStore()
    try:
        stale = store.create(PODS, pod("p", scheduler=DEFAULT_SCHEDULER))
        writer = ResultWriter(store, ManualClock(T0), {PODS: _LaggingCache(stale)})  # type: ignore[dict-item]
        first = PendingReason(("ml/p",), Status.UNSCHEDULABLE, "cannot find enough sibling pods")
        second = PendingReason(("ml/p",), Status.UNSCHEDULABLE, "needs nvidia.com/gpu=2 free")
        writer.write(CycleResult(pending=[first]))
        writer.write(CycleResult(pending=[second]))
        [condition] = store.get(PODS, "ml", "p")["status"]["conditions"]
        assert condition["message"] == "needs nvidia.com/gpu=2 free"
    finally:
        store.close()
