"""Kueue's visibility API over the core: pending workloads with their positions, and why each waits.

Shape of ``visibility.kueue.x-k8s.io/v1beta2`` ``PendingWorkload`` (kueue.md §11): workload metadata plus
``priority``, ``localQueueName``, ``positionInClusterQueue`` and ``positionInLocalQueue``, 0-based, in heap
order over active and inadmissible workloads. ``reason`` and ``message`` are gangplane additions: the
``QuotaReserved=False`` condition in plain words ("insufficient unused quota for nvidia.com/gpu in flavor
a100, 4 more needed").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gangplane.clock import rfc3339
from gangplane.schedulers.kueue.state import KueueState
from gangplane.schedulers.kueue.workloads import WorkloadState

API_VERSION = "visibility.kueue.x-k8s.io/v1beta2"
DEFAULT_LIMIT = 1000


@dataclass(frozen=True)
class PendingWorkload:
    namespace: str
    name: str
    priority: int
    local_queue: str
    position_in_cluster_queue: int
    position_in_local_queue: int
    created: float
    reason: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "creationTimestamp": rfc3339(self.created),
            },
            "priority": self.priority,
            "localQueueName": self.local_queue,
            "positionInClusterQueue": self.position_in_cluster_queue,
            "positionInLocalQueue": self.position_in_local_queue,
            "reason": self.reason,
            "message": self.message,
        }


def _explain(state: WorkloadState) -> tuple[str, str]:
    if state.pending_message:
        return state.pending_reason, state.pending_message
    if state.requeue_at is not None:
        return "Requeued", f"waiting for the requeue backoff until {rfc3339(state.requeue_at)}"
    return state.pending_reason or "Pending", "waiting for an admission cycle"


def pending_in_cluster_queue(state: KueueState, cq: str) -> list[PendingWorkload]:
    """Every pending workload of ``cq`` in queue order, with both positions."""
    queue = state.queues.queues.get(cq)
    ordered = queue.pending() if queue is not None else []
    backoff = sorted((s for s in state.queues.backoff.values() if s.cluster_queue == cq), key=lambda s: s.key)
    per_local: dict[tuple[str, str], int] = {}
    found = []
    for position, workload in enumerate([*ordered, *backoff]):
        request = workload.request
        local_key = (request.namespace, request.local_queue)
        local_position = per_local.get(local_key, 0)
        per_local[local_key] = local_position + 1
        reason, message = _explain(workload)
        name = request.key.split("/", 1)[1]
        found.append(PendingWorkload(request.namespace, name, request.priority, request.local_queue, position,
                                     local_position, request.created, reason, message))  # fmt: skip
    return found


def pending_in_local_queue(
    state: KueueState, namespace: str, local_queue: str, cq: str
) -> list[PendingWorkload]:
    return [
        p
        for p in pending_in_cluster_queue(state, cq)
        if (p.namespace, p.local_queue) == (namespace, local_queue)
    ]


def pending_workloads_summary(
    items: list[PendingWorkload], limit: int = DEFAULT_LIMIT, offset: int = 0
) -> dict[str, Any]:
    """The ``PendingWorkloadsSummary`` object the visibility endpoints return."""
    return {
        "apiVersion": API_VERSION,
        "kind": "PendingWorkloadsSummary",
        "metadata": {},
        "items": [p.to_dict() for p in items[offset : offset + limit]],
    }
