"""Embedded Kueue: quota in cohort trees, flavor assignment, admission cycles, preemption, waitForPodsReady,
visibility and metrics (reference kueue.md), plus the controller that applies it to TrainJobs.

The core (``model``, ``quota``, ``flavors``, ``preemption``, ``fairsharing``, ``queues``, ``workloads``,
``podsready``, ``state``, ``cycle``, ``visibility``, ``convert``) is pure: no store, no clock reads, time
passed in. ``jobs`` and ``controller`` are the shell.
"""

from gangplane.schedulers.kueue.controller import (
    CYCLE_KEY,
    KueueController,
    KueueReconciler,
    build_kueue_controller,
)
from gangplane.schedulers.kueue.cycle import CycleResult, run_cycle
from gangplane.schedulers.kueue.fairsharing import PreemptionStrategy, dominant_resource_share
from gangplane.schedulers.kueue.flavors import Assignment, PodSetAssignment, assign_flavors
from gangplane.schedulers.kueue.metrics import KueueMetrics
from gangplane.schedulers.kueue.model import (
    ClusterQueueSpec,
    CohortSpec,
    FlavorSpec,
    PodSetRequest,
    WorkloadRequest,
)
from gangplane.schedulers.kueue.podsready import WaitForPodsReady
from gangplane.schedulers.kueue.quota import QuotaTree, available, potential_available
from gangplane.schedulers.kueue.state import Eviction, KueueConfig, KueueState
from gangplane.schedulers.kueue.visibility import (
    PendingWorkload,
    pending_in_cluster_queue,
    pending_in_local_queue,
)

__all__ = [
    "CYCLE_KEY",
    "Assignment",
    "ClusterQueueSpec",
    "CohortSpec",
    "CycleResult",
    "Eviction",
    "FlavorSpec",
    "KueueConfig",
    "KueueController",
    "KueueMetrics",
    "KueueReconciler",
    "KueueState",
    "PendingWorkload",
    "PodSetAssignment",
    "PodSetRequest",
    "PreemptionStrategy",
    "QuotaTree",
    "WaitForPodsReady",
    "WorkloadRequest",
    "assign_flavors",
    "available",
    "build_kueue_controller",
    "dominant_resource_share",
    "pending_in_cluster_queue",
    "pending_in_local_queue",
    "potential_available",
    "run_cycle",
]
