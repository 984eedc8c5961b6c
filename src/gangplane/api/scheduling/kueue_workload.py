"""Kueue ``Workload`` (``kueue.x-k8s.io/v1beta2``): the unit Kueue queues, admits and evicts.

Split from ``kueue`` only for size. v1beta1 input is converted as Kueue's ``workload_conversion.go`` does:
``spec.priorityClassName`` + ``spec.priorityClassSource`` become ``spec.priorityClassRef`` (an empty source
drops the name, as upstream), and the misspelt status field ``accumulatedPastExexcutionTimeSeconds`` becomes
``accumulatedPastExecutionTimeSeconds``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field, model_validator

from gangplane.api.base import OpenModel
from gangplane.api.core import PodTemplateSpec
from gangplane.api.meta import Condition, ObjectMeta
from gangplane.api.quantity import ResourceList
from gangplane.api.scheduling.common import rename_key
from gangplane.api.scheduling.kueue import GROUP, KueueObject

WORKLOAD_KIND = "Workload"
DEFAULT_POD_SET_NAME = "main"

WORKLOAD_PRIORITY_CLASS_GROUP = GROUP
WORKLOAD_PRIORITY_CLASS_REF_KIND = "WorkloadPriorityClass"
POD_PRIORITY_CLASS_GROUP = "scheduling.k8s.io"
POD_PRIORITY_CLASS_KIND = "PriorityClass"

_V1BETA1_PRIORITY_SOURCES = {
    "kueue.x-k8s.io/workloadpriorityclass": (WORKLOAD_PRIORITY_CLASS_GROUP, WORKLOAD_PRIORITY_CLASS_REF_KIND),
    "scheduling.k8s.io/priorityclass": (POD_PRIORITY_CLASS_GROUP, POD_PRIORITY_CLASS_KIND),
}


class WorkloadConditionType(StrEnum):
    QUOTA_RESERVED = "QuotaReserved"
    ADMITTED = "Admitted"
    PODS_READY = "PodsReady"
    EVICTED = "Evicted"
    PREEMPTED = "Preempted"
    REQUEUED = "Requeued"
    FINISHED = "Finished"


class EvictionReason(StrEnum):
    PREEMPTED = "Preempted"
    PODS_READY_TIMEOUT = "PodsReadyTimeout"
    ADMISSION_CHECK = "AdmissionCheck"
    CLUSTER_QUEUE_STOPPED = "ClusterQueueStopped"
    LOCAL_QUEUE_STOPPED = "LocalQueueStopped"
    NODE_FAILURES = "NodeFailures"
    DEACTIVATED = "Deactivated"


class PreemptionReason(StrEnum):
    IN_CLUSTER_QUEUE = "InClusterQueue"
    IN_COHORT_RECLAMATION = "InCohortReclamation"
    IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
    IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"


class PodSetTopologyRequest(OpenModel):
    required: str | None = None
    preferred: str | None = None
    unconstrained: bool | None = None
    pod_index_label: str | None = None
    sub_group_index_label: str | None = None
    sub_group_count: int | None = None
    pod_set_group_name: str | None = None
    pod_set_slice_required_topology: str | None = None
    pod_set_slice_size: int | None = None
    # Upstream spells this one "podset", not "podSet".
    pod_set_slice_required_topology_constraints: list[dict[str, Any]] | None = Field(
        default=None, alias="podsetSliceRequiredTopologyConstraints"
    )


class PodSet(OpenModel):
    name: str | None = None  # CRD default "main"
    count: int | None = None  # CRD default 1 (required in v1beta1)
    min_count: int | None = None
    template: PodTemplateSpec = PodTemplateSpec()
    topology_request: PodSetTopologyRequest | None = None


class PriorityClassRef(OpenModel):
    group: str
    kind: str
    name: str


class WorkloadSpec(OpenModel):
    pod_sets: list[PodSet] = []
    queue_name: str | None = None
    priority: int | None = None
    priority_class_ref: PriorityClassRef | None = None
    active: bool | None = None  # CRD default true; false evicts and never admits
    maximum_execution_time_seconds: int | None = None
    preemption_gates: list[dict[str, Any]] | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_v1beta1(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not {"priorityClassName", "priorityClassSource"} & data.keys():
            return data
        data = dict(data)
        name = data.pop("priorityClassName", None)
        group_kind = _V1BETA1_PRIORITY_SOURCES.get(data.pop("priorityClassSource", None) or "")
        if name and group_kind:
            data.setdefault("priorityClassRef", {"group": group_kind[0], "kind": group_kind[1], "name": name})
        return data


class PodSetAssignment(OpenModel):
    """``flavors`` maps resource name to flavor name; ``resourceUsage`` is the total for ``count`` pods."""

    name: str | None = None
    flavors: dict[str, str] | None = None
    resource_usage: ResourceList | None = None
    count: int | None = None
    topology_assignment: dict[str, Any] | None = None
    delayed_topology_request: str | None = None


class Admission(OpenModel):
    cluster_queue: str | None = None
    pod_set_assignments: list[PodSetAssignment] | None = None


class RequeueState(OpenModel):
    count: int | None = None
    requeue_at: str | None = None


class ReclaimablePod(OpenModel):
    name: str
    count: int


class WorkloadStatus(OpenModel):
    conditions: list[Condition] | None = None
    admission: Admission | None = None
    requeue_state: RequeueState | None = None
    reclaimable_pods: list[ReclaimablePod] | None = None
    admission_checks: list[dict[str, Any]] | None = None
    resource_requests: list[dict[str, Any]] | None = None
    accumulated_past_execution_time_seconds: int | None = None
    scheduling_stats: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_v1beta1(cls, data: Any) -> Any:
        return rename_key(data, "accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds")


class Workload(KueueObject):
    kind: str = WORKLOAD_KIND
    metadata: ObjectMeta = ObjectMeta()
    spec: WorkloadSpec = WorkloadSpec()
    status: WorkloadStatus | None = None
