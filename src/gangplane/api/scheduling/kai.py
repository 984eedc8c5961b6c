"""NVIDIA KAI Scheduler: Queue ``scheduling.run.ai/v2`` and PodGroup ``scheduling.run.ai/v2alpha2``.

Shapes follow ``deployments/kai-scheduler/crds/`` at KAI ``d5bc503`` (reference/kai.md §3-§4). Models are
open. Queue resource numbers are CRD ``number`` (float64) in KAI units: GPUs in devices, CPU in
**millicores**, memory in **MB (10^6 bytes)**; ``-1`` means unlimited. The CRD has **no defaults**: a queue
without ``resources`` can run nothing, so writers must set quota, limit and overQuotaWeight explicitly.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field

from gangplane.api.base import OpenModel
from gangplane.api.meta import ObjectMeta
from gangplane.api.quantity import ResourceList

GROUP = "scheduling.run.ai"
QUEUE_API_VERSION = f"{GROUP}/v2"
POD_GROUP_API_VERSION = f"{GROUP}/v2alpha2"
QUEUE_KIND = "Queue"
POD_GROUP_KIND = "PodGroup"

SCHEDULER_NAME = "kai-scheduler"
QUEUE_LABEL = "kai.scheduler/queue"
LEGACY_QUEUE_LABEL = "runai/queue"  # before KAI v0.6.0; the key is configurable per install
PROJECT_LABEL = "project"  # fallback queue name
PRIORITY_CLASS_LABEL = "priorityClassName"
PREEMPTIBILITY_LABEL = "kai.scheduler/preemptibility"
NODE_POOL_LABEL = "kai.scheduler/node-pool"
SUBGROUP_LABEL = "kai.scheduler/subgroup-name"
POD_GROUP_ANNOTATION = "pod-group-name"
"""Pod annotation naming its PodGroup; set by the pod-grouper, or by whoever creates the PodGroup."""
SKIP_PODGROUPER_KEY = "kai.scheduler/skip-podgrouper"
BATCH_MIN_MEMBER_ANNOTATION = "kai.scheduler/batch-min-member"
TOPOLOGY_ANNOTATION = "kai.scheduler/topology"
TOPOLOGY_REQUIRED_PLACEMENT_ANNOTATION = "kai.scheduler/topology-required-placement"
TOPOLOGY_PREFERRED_PLACEMENT_ANNOTATION = "kai.scheduler/topology-preferred-placement"
SEGMENT_SIZE_ANNOTATION = "kai.scheduler/segment-size"
PREEMPTION_DELAY_ANNOTATION = "kai.scheduler/preemption-delay"
STALENESS_GRACE_PERIOD_ANNOTATION = "kai.scheduler/staleness-grace-period"
GPU_FRACTION_ANNOTATION = "gpu-fraction"
GPU_MEMORY_ANNOTATION = "gpu-memory"  # MiB

DEFAULT_QUEUE = "default-queue"
DEFAULT_PARENT_QUEUE = "default-parent-queue"
DEFAULT_QUEUE_PRIORITY = 100
UNLIMITED = -1
DEFAULT_STALENESS_GRACE_PERIOD_SECONDS = 60

PRIORITY_CLASSES = {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}
"""PriorityClasses KAI installs; a value ≥ ``NON_PREEMPTIBLE_PRIORITY`` is non-preemptible by default."""
NON_PREEMPTIBLE_PRIORITY = 100
DEFAULT_PRIORITY_CLASS = "train"


class Preemptibility(StrEnum):
    PREEMPTIBLE = "preemptible"
    NON_PREEMPTIBLE = "non-preemptible"


class UnschedulableReason(StrEnum):
    """``status.schedulingConditions[].reasons[].reason`` values a "why pending" message can use."""

    NON_PREEMPTIBLE_OVER_QUOTA = "NonPreemptibleOverQuota"
    OVER_LIMIT = "OverLimit"
    PREEMPTION_DELAY_NOT_ELAPSED = "PreemptionDelayNotElapsed"
    QUEUE_DOES_NOT_EXIST = "QueueDoesNotExist"


SCHEDULING_CONDITION_UNSCHEDULABLE_ON_NODE_POOL = "UnschedulableOnNodePool"

Number = int | float  # kept as written: 8 stays 8, 0.5 stays 0.5


class KaiCondition(OpenModel):
    """KAI's condition shape: ``transitionID`` on PodGroups, ``lastProbeTime`` on Queues."""

    type: str | None = None
    status: str | None = None
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None
    last_probe_time: str | None = None
    transition_id: str | None = Field(default=None, alias="transitionID")


# ---------------------------------------------------------------- Queue


class QueueResource(OpenModel):
    quota: Number | None = None
    over_quota_weight: Number | None = None
    limit: Number | None = None


class QueueResources(OpenModel):
    gpu: QueueResource | None = None
    cpu: QueueResource | None = None  # millicores
    memory: QueueResource | None = None  # MB


class QueueSpec(OpenModel):
    display_name: str | None = None
    parent_queue: str | None = None
    priority: int | None = None  # default 100 (in code, not in the CRD)
    resources: QueueResources | None = None
    preempt_min_runtime: str | None = None
    reclaim_min_runtime: str | None = None


class QueueStatus(OpenModel):
    child_queues: list[str] | None = None
    allocated: ResourceList | None = None
    allocated_non_preemptible: ResourceList | None = None
    requested: ResourceList | None = None
    conditions: list[KaiCondition] | None = None


class Queue(OpenModel):
    """Cluster-scoped; only leaf queues accept workloads."""

    api_version: str = QUEUE_API_VERSION
    kind: str = QUEUE_KIND
    metadata: ObjectMeta = ObjectMeta()
    spec: QueueSpec = QueueSpec()
    status: QueueStatus | None = None


# ---------------------------------------------------------------- PodGroup


class TopologyConstraint(OpenModel):
    topology: str | None = None
    required_topology_level: str | None = None
    preferred_topology_level: str | None = None


class SubGroup(OpenModel):
    """Leaves set ``minMember``, inner nodes ``minSubGroup`` (webhook)."""

    name: str
    parent: str | None = None
    min_member: int | None = None
    min_sub_group: int | None = None
    topology_constraint: TopologyConstraint | None = None


class PodGroupSpec(OpenModel):
    """``minMember`` and ``minSubGroup`` are mutually exclusive; ``minSubGroup`` counts direct SubGroups."""

    min_member: int | None = None
    min_sub_group: int | None = None
    queue: str | None = None
    priority_class_name: str | None = None
    preemptibility: str | None = None
    topology_constraint: TopologyConstraint | None = None
    sub_groups: list[SubGroup] | None = None
    mark_unschedulable: bool | None = None
    scheduling_backoff: int | None = None
    preemption_delay: str | None = None
    staleness_grace_period: str | None = None


class UnschedulableExplanation(OpenModel):
    reason: str | None = None
    message: str | None = None
    details: dict[str, Any] | None = None


class SchedulingCondition(KaiCondition):
    node_pool: str | None = None
    reasons: list[UnschedulableExplanation] | None = None


class PodGroupResourcesStatus(OpenModel):
    allocated: ResourceList | None = None
    allocated_non_preemptible: ResourceList | None = None
    requested: ResourceList | None = None


class PodGroupStatus(OpenModel):
    conditions: list[KaiCondition] | None = None
    scheduling_conditions: list[SchedulingCondition] | None = None
    resources_status: PodGroupResourcesStatus | None = None


class PodGroup(OpenModel):
    api_version: str = POD_GROUP_API_VERSION
    kind: str = POD_GROUP_KIND
    metadata: ObjectMeta = ObjectMeta()
    spec: PodGroupSpec = PodGroupSpec()
    status: PodGroupStatus | None = None
