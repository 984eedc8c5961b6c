"""Plain values the Kueue core computes over: queue and flavor specs, workload requests, modes and reasons.

Quantities are integers in Kueue's units (``resources.Amount``): milli-units for ``cpu``, base units (bytes,
counts) for everything else, so quota arithmetic is exact. Specs are frozen; the shell converts API objects
into them (``convert``). Nothing here reads a clock or a store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import IntEnum, StrEnum

from gangplane.api.core import Taint, Toleration
from gangplane.api.quantity import format_quantity, parse
from gangplane.api.scheduling.common import LabelSelector
from gangplane.api.scheduling.kueue import (
    FlavorFungibilityPolicy,
    PreemptionPolicy,
    QueueingStrategy,
    StopPolicy,
)
from gangplane.schedulers.core.objects import Requirement

FlavorResource = tuple[str, str]
"""``(flavor, resource)``: the unit every quota and usage figure is kept per."""

Usage = dict[FlavorResource, int]

LocalQueueKey = tuple[str, str]
"""``(namespace, name)`` of a LocalQueue."""

PODS = "pods"
_MILLI_RESOURCES = frozenset({"cpu"})


def to_amount(resource: str, quantity: str | int | Decimal) -> int:
    """Kueue's amount for a quantity: milli-units for cpu, base units otherwise, rounded up."""
    value = quantity if isinstance(quantity, Decimal) else parse(quantity)
    return math.ceil(value * 1000) if resource in _MILLI_RESOURCES else math.ceil(value)


def format_amount(resource: str, amount: int) -> str:
    """An amount back in Kubernetes quantity form (``1500m``, ``8``, ``512Gi``)."""
    if resource in _MILLI_RESOURCES:
        return format_quantity(Decimal(amount) / 1000)
    return format_quantity(Decimal(amount), binary=resource in {"memory", "ephemeral-storage"})


def add_usage(into: Usage, extra: Mapping[FlavorResource, int], sign: int = 1) -> None:
    for fr, amount in extra.items():
        into[fr] = into.get(fr, 0) + sign * amount


# ---------------------------------------------------------------- queue and flavor specs


@dataclass(frozen=True)
class ResourceQuota:
    """``borrowing_limit`` None = unlimited; ``lending_limit`` None = lend all unused nominal quota."""

    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True)
class FlavorQuotas:
    name: str
    resources: Mapping[str, ResourceQuota]


@dataclass(frozen=True)
class ResourceGroup:
    """Flavors in preference order; every flavor covers exactly ``covered``."""

    covered: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


@dataclass(frozen=True)
class Preemption:
    within_cluster_queue: PreemptionPolicy = PreemptionPolicy.NEVER
    reclaim_within_cohort: PreemptionPolicy = PreemptionPolicy.NEVER
    borrow_within_cohort: PreemptionPolicy = PreemptionPolicy.NEVER
    max_priority_threshold: int | None = None


class FungibilityPreference(StrEnum):
    BORROWING_OVER_PREEMPTION = "BorrowingOverPreemption"
    PREEMPTION_OVER_BORROWING = "PreemptionOverBorrowing"


@dataclass(frozen=True)
class Fungibility:
    when_can_borrow: FlavorFungibilityPolicy = FlavorFungibilityPolicy.MAY_STOP_SEARCH
    when_can_preempt: FlavorFungibilityPolicy = FlavorFungibilityPolicy.TRY_NEXT_FLAVOR
    preference: FungibilityPreference = FungibilityPreference.BORROWING_OVER_PREEMPTION


@dataclass(frozen=True)
class ClusterQueueSpec:
    """``namespace_selector`` None selects no namespace; an empty selector selects all (kueue.md §1)."""

    name: str
    resource_groups: tuple[ResourceGroup, ...] = ()
    cohort: str | None = None
    queueing_strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    preemption: Preemption = Preemption()
    fungibility: Fungibility = Fungibility()
    stop_policy: StopPolicy = StopPolicy.NONE
    namespace_selector: LabelSelector | None = field(default_factory=LabelSelector)
    fair_weight: float = 1.0

    def quotas(self) -> dict[FlavorResource, ResourceQuota]:
        return {
            (f.name, r): q for g in self.resource_groups for f in g.flavors for r, q in f.resources.items()
        }

    def group_of(self, resource: str) -> ResourceGroup | None:
        return next((g for g in self.resource_groups if resource in g.covered), None)


@dataclass(frozen=True)
class CohortSpec:
    """A cohort's own quota is an extra shared pool; its limits apply towards its parent."""

    name: str
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_weight: float = 1.0

    def quotas(self) -> dict[FlavorResource, ResourceQuota]:
        return {
            (f.name, r): q for g in self.resource_groups for f in g.flavors for r, q in f.resources.items()
        }


@dataclass(frozen=True)
class FlavorSpec:
    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()


# ---------------------------------------------------------------- workloads


@dataclass(frozen=True)
class PodSetRequest:
    """One Kueue PodSet: ``requests`` per pod, as amounts."""

    name: str
    count: int
    requests: Mapping[str, int]
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    affinity: tuple[tuple[Requirement, ...], ...] = ()
    """Required node-affinity terms (ORed; a term's requirements ANDed)."""

    def total(self, resource: str) -> int:
        return self.requests.get(resource, 0) * self.count


@dataclass(frozen=True)
class WorkloadRequest:
    """What the core needs to queue a workload; ``key`` is ``namespace/name``."""

    key: str
    namespace: str
    local_queue: str
    cluster_queue: str
    pod_sets: tuple[PodSetRequest, ...]
    priority: int = 0
    created: float = 0.0
    uid: str = ""
    job_uid: str = ""
    """The ``kueue.x-k8s.io/job-uid`` label: the job the Workload was made for."""
    priority_class: str = ""
    namespace_labels: Mapping[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------- modes and reasons


class FlavorMode(IntEnum):
    """Per-resource outcome of trying one flavor; larger is better (kueue flavorassigner ``granularMode``)."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4


class AssignmentMode(IntEnum):
    """Whole-workload outcome of flavor assignment."""

    NO_FIT = 0
    PREEMPT = 1
    FIT = 2


class PendingReason(StrEnum):
    """``QuotaReserved=False`` reasons (kueue.md §1)."""

    NO_MATCHING_FLAVOR = "NoMatchingFlavor"
    WAITING_FOR_QUOTA = "WaitingForQuota"
    EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
    WAITING_FOR_PREEMPTED_WORKLOADS = "WaitingForPreemptedWorkloads"
    MISCONFIGURED = "Misconfigured"
    SUSPENDED = "Suspended"
    WAITING_FOR_PODS_READY = "WaitingForPodsReady"
    PENDING = "Pending"


class PendingSource(StrEnum):
    """The upstream component that sets a ``QuotaReserved=False`` reason. Only the scheduler records a Warning
    ``Pending`` Event with it (kueue ``pkg/scheduler/scheduler.go`` ``requeueAndUpdate``); the workload
    controller (``pkg/controller/core/workload_controller.go``: a missing or stopped LocalQueue, a missing or
    inactive ClusterQueue, a deactivation) and the job reconciler (``pkg/controller/jobframework``: the
    reservation dropped at an eviction) write the condition without one."""

    SCHEDULER = "Scheduler"
    WORKLOAD_CONTROLLER = "WorkloadController"
    JOB_RECONCILER = "JobReconciler"


class PreemptionVariant(IntEnum):
    """kueue ``preemption/classical`` ``preemptionVariant``: how a candidate may be preempted."""

    NEVER = 0
    WITHIN_CQ = 1
    HIERARCHICAL_RECLAIM = 2
    RECLAIM_WITHOUT_BORROWING = 3
    RECLAIM_WHILE_BORROWING = 4


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelector`` semantics; None matches nothing (a ClusterQueue's unset namespaceSelector)."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.match_labels or {}).items()):
        return False
    for req in selector.match_expressions or []:
        present, values = req.key in labels, req.values or []
        ok = {
            "In": present and labels.get(req.key) in values,
            "NotIn": not present or labels.get(req.key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(req.operator, False)
        if not ok:
            return False
    return True
