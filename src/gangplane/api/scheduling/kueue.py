"""Kueue ``kueue.x-k8s.io/v1beta2``: flavors, queues, cohorts, priority classes, topologies, and their keys.

Shapes follow ``config/components/crd/bases/`` at kueue ``ff69552e`` (reference/kueue.md §0-§1). Models are
open so fields gangplane does not read are kept. They hold the v1beta2 (storage) shape; v1beta1 input, still
served and deprecated, is converted when read, as Kueue's conversion webhook does, so an object is always
written back as v1beta2:

- ``apiVersion`` ``kueue.x-k8s.io/v1beta1`` becomes ``kueue.x-k8s.io/v1beta2``;
- ClusterQueue ``spec.cohort`` becomes ``spec.cohortName``, ``spec.admissionChecks`` (names) becomes
  ``spec.admissionChecksStrategy.admissionChecks`` (``{name}`` rules), and the deprecated flavor-fungibility
  values ``Borrow``/``Preempt`` become ``MayStopSearch``;
- Workload fields: see ``kueue_workload``.

Conversion never overwrites a v1beta2 field the input already sets.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import model_validator

from gangplane.api.base import OpenModel
from gangplane.api.core import Taint, Toleration
from gangplane.api.meta import Condition, ObjectMeta
from gangplane.api.quantity import Quantity
from gangplane.api.scheduling.common import LabelSelector, rename_key

GROUP = "kueue.x-k8s.io"
API_VERSION = f"{GROUP}/v1beta2"
V1BETA1_API_VERSION = f"{GROUP}/v1beta1"
RESOURCE_FLAVOR_KIND = "ResourceFlavor"
CLUSTER_QUEUE_KIND = "ClusterQueue"
COHORT_KIND = "Cohort"
LOCAL_QUEUE_KIND = "LocalQueue"
WORKLOAD_PRIORITY_CLASS_KIND = "WorkloadPriorityClass"
TOPOLOGY_KIND = "Topology"

# Keys on jobs (TrainJobs) that users set.
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
JOB_MIN_PARALLELISM_ANNOTATION = "kueue.x-k8s.io/job-min-parallelism"
PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
PRIORITY_BOOST_ANNOTATION = "kueue.x-k8s.io/priority-boost"

# Keys Kueue writes.
MANAGER = "kueue.x-k8s.io/manager"
"""``manager`` of the runtime patch Kueue appends to a TrainJob."""
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
PODSET_LABEL = "kueue.x-k8s.io/podset"
"""Pod-template label naming the Kueue PodSet, injected at start."""
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
TOPOLOGY_SCHEDULING_GATE = "kueue.x-k8s.io/topology"
RESOURCE_IN_USE_FINALIZER = "kueue.x-k8s.io/resource-in-use"

# Topology-aware scheduling requests on pod templates.
PODSET_REQUIRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
PODSET_PREFERRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-unconstrained-topology"
PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-slice-required-topology"
PODSET_SLICE_SIZE_ANNOTATION = "kueue.x-k8s.io/podset-slice-size"
PODSET_GROUP_NAME_ANNOTATION = "kueue.x-k8s.io/podset-group-name"

TRAINJOB_FRAMEWORK = "trainer.kubeflow.org/trainjob"
DEFAULT_LOCAL_QUEUE = "default"


class QueueingStrategy(StrEnum):
    STRICT_FIFO = "StrictFIFO"
    BEST_EFFORT_FIFO = "BestEffortFIFO"


class PreemptionPolicy(StrEnum):
    """Values of ``withinClusterQueue``, ``reclaimWithinCohort`` and ``borrowWithinCohort.policy``."""

    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
    ANY = "Any"


class FlavorFungibilityPolicy(StrEnum):
    MAY_STOP_SEARCH = "MayStopSearch"
    TRY_NEXT_FLAVOR = "TryNextFlavor"


class StopPolicy(StrEnum):
    NONE = "None"
    HOLD = "Hold"
    HOLD_AND_DRAIN = "HoldAndDrain"


class ClusterQueueConditionType(StrEnum):
    ACTIVE = "Active"


class KueueObject(OpenModel):
    """Base of the top-level kinds: reads v1beta1 as v1beta2 (field conversions live in the nested models)."""

    api_version: str = API_VERSION

    @model_validator(mode="before")
    @classmethod
    def _upgrade_api_version(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("apiVersion") == V1BETA1_API_VERSION:
            data = {**data, "apiVersion": API_VERSION}
        return data


# ---------------------------------------------------------------- ResourceFlavor


class ResourceFlavorSpec(OpenModel):
    node_labels: dict[str, str] | None = None
    node_taints: list[Taint] | None = None
    tolerations: list[Toleration] | None = None
    topology_name: str | None = None


class ResourceFlavor(KueueObject):
    kind: str = RESOURCE_FLAVOR_KIND
    metadata: ObjectMeta = ObjectMeta()
    spec: ResourceFlavorSpec = ResourceFlavorSpec()


# ---------------------------------------------------------------- shared by ClusterQueue and Cohort


class ResourceQuota(OpenModel):
    """``borrowingLimit`` unset = unlimited; ``lendingLimit`` unset = lend all unused nominal quota."""

    name: str
    nominal_quota: Quantity
    borrowing_limit: Quantity | None = None
    lending_limit: Quantity | None = None


class FlavorQuotas(OpenModel):
    name: str
    resources: list[ResourceQuota] = []


class ResourceGroup(OpenModel):
    """``flavors`` in preference order; each flavor lists exactly the ``coveredResources``."""

    covered_resources: list[str] = []
    flavors: list[FlavorQuotas] = []


class FairSharing(OpenModel):
    weight: Quantity | None = None  # CRD default 1; 0 = infinite share when borrowing


class FairSharingStatus(OpenModel):
    weighted_share: int
    admission_fair_sharing_status: dict[str, Any] | None = None


class ResourceUsage(OpenModel):
    name: str
    total: Quantity | None = None
    borrowed: Quantity | None = None  # ClusterQueue status only


class FlavorUsage(OpenModel):
    name: str
    resources: list[ResourceUsage] = []


# ---------------------------------------------------------------- ClusterQueue


class BorrowWithinCohort(OpenModel):
    policy: str | None = None
    max_priority_threshold: int | None = None


class ClusterQueuePreemption(OpenModel):
    within_cluster_queue: str | None = None
    reclaim_within_cohort: str | None = None
    borrow_within_cohort: BorrowWithinCohort | None = None


_DEPRECATED_FUNGIBILITY = {"Borrow": "MayStopSearch", "Preempt": "MayStopSearch"}


class FlavorFungibility(OpenModel):
    when_can_borrow: str | None = None
    when_can_preempt: str | None = None
    preference: str | None = None  # only with both policies TryNextFlavor

    @model_validator(mode="before")
    @classmethod
    def _from_v1beta1(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        keys = ("whenCanBorrow", "whenCanPreempt")
        return {k: _DEPRECATED_FUNGIBILITY.get(v, v) if k in keys else v for k, v in data.items()}


class AdmissionCheckStrategyRule(OpenModel):
    name: str
    on_flavors: list[str] | None = None


class AdmissionChecksStrategy(OpenModel):
    admission_checks: list[AdmissionCheckStrategyRule] = []


class ClusterQueueSpec(OpenModel):
    """``namespaceSelector`` unset = no namespace; ``{}`` = every namespace."""

    resource_groups: list[ResourceGroup] | None = None
    cohort_name: str | None = None
    namespace_selector: LabelSelector | None = None
    queueing_strategy: str | None = None
    preemption: ClusterQueuePreemption | None = None
    flavor_fungibility: FlavorFungibility | None = None
    stop_policy: str | None = None
    fair_sharing: FairSharing | None = None
    admission_checks_strategy: AdmissionChecksStrategy | None = None
    admission_scope: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_v1beta1(cls, data: Any) -> Any:
        data = rename_key(data, "cohort", "cohortName")
        if isinstance(data, dict) and "admissionChecks" in data:
            data = dict(data)
            rules = [{"name": name} for name in data.pop("admissionChecks") or []]
            data.setdefault("admissionChecksStrategy", {"admissionChecks": rules})
        return data


class ClusterQueueStatus(OpenModel):
    conditions: list[Condition] | None = None
    flavors_reservation: list[FlavorUsage] | None = None
    flavors_usage: list[FlavorUsage] | None = None
    pending_workloads: int | None = None
    reserving_workloads: int | None = None
    admitted_workloads: int | None = None
    fair_sharing: FairSharingStatus | None = None


class ClusterQueue(KueueObject):
    kind: str = CLUSTER_QUEUE_KIND
    metadata: ObjectMeta = ObjectMeta()
    spec: ClusterQueueSpec = ClusterQueueSpec()
    status: ClusterQueueStatus | None = None


# ---------------------------------------------------------------- Cohort


class CohortSpec(OpenModel):
    """``parentName`` unset = a root; a parent without an object is an implicit cohort with no quota."""

    parent_name: str | None = None
    resource_groups: list[ResourceGroup] | None = None
    fair_sharing: FairSharing | None = None


class CohortStatus(OpenModel):
    fair_sharing: FairSharingStatus | None = None


class Cohort(KueueObject):
    kind: str = COHORT_KIND
    metadata: ObjectMeta = ObjectMeta()
    spec: CohortSpec = CohortSpec()
    status: CohortStatus | None = None


# ---------------------------------------------------------------- LocalQueue


class LocalQueueSpec(OpenModel):
    cluster_queue: str | None = None  # immutable
    stop_policy: str | None = None
    fair_sharing: FairSharing | None = None


class LocalQueueStatus(OpenModel):
    conditions: list[Condition] | None = None
    pending_workloads: int | None = None
    reserving_workloads: int | None = None
    admitted_workloads: int | None = None
    flavors_reservation: list[FlavorUsage] | None = None
    flavors_usage: list[FlavorUsage] | None = None
    fair_sharing: FairSharingStatus | None = None


class LocalQueue(KueueObject):
    kind: str = LOCAL_QUEUE_KIND
    metadata: ObjectMeta = ObjectMeta()
    spec: LocalQueueSpec = LocalQueueSpec()
    status: LocalQueueStatus | None = None


# ---------------------------------------------------------------- WorkloadPriorityClass, Topology


class WorkloadPriorityClass(KueueObject):
    """No ``spec``: ``value`` and ``description`` sit at the top level, as in a core PriorityClass."""

    kind: str = WORKLOAD_PRIORITY_CLASS_KIND
    metadata: ObjectMeta = ObjectMeta()
    value: int
    description: str | None = None


class TopologyLevel(OpenModel):
    node_label: str


class TopologySpec(OpenModel):
    """Levels coarse to fine; ``kubernetes.io/hostname`` may only be the last."""

    levels: list[TopologyLevel]


class Topology(KueueObject):
    kind: str = TOPOLOGY_KIND
    metadata: ObjectMeta = ObjectMeta()
    spec: TopologySpec
