"""Volcano: PodGroup and Queue ``scheduling.volcano.sh/v1beta1``, HyperNode ``topology.volcano.sh/v1alpha1``.

Shapes follow the Helm chart CRDs at volcano ``ed72c7c8`` (reference/volcano.md §2-§4). All models are open
so fields gangplane does not read (queue affinity, extendClusters, ...) survive a read-modify-write. The
Volcano PodGroup CRD has no status subresource: status is written with the whole object.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field

from gangplane.api.base import OpenModel
from gangplane.api.meta import Condition, ObjectMeta
from gangplane.api.quantity import ResourceList
from gangplane.api.scheduling.common import LabelSelector

GROUP = "scheduling.volcano.sh"
API_VERSION = f"{GROUP}/v1beta1"
TOPOLOGY_GROUP = "topology.volcano.sh"
TOPOLOGY_API_VERSION = f"{TOPOLOGY_GROUP}/v1alpha1"
POD_GROUP_KIND = "PodGroup"
QUEUE_KIND = "Queue"
HYPER_NODE_KIND = "HyperNode"

SCHEDULER_NAME = "volcano"
DEFAULT_QUEUE = "default"
ROOT_QUEUE = "root"

GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
"""Pod annotation naming the PodGroup (same namespace); kube-batch heritage, hence the k8s.io group."""

QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
"""On a JobSet (Trainer reads it for ``spec.queue``), a pod, or a namespace (webhook default queue)."""

GROUP_MIN_MEMBER_ANNOTATION = "scheduling.volcano.sh/group-min-member"
TASK_SPEC_KEY = "volcano.sh/task-spec"
NETWORK_TOPOLOGY_MODE_ANNOTATION = "volcano.sh/network-topology-mode"
NETWORK_TOPOLOGY_HIGHEST_TIER_ANNOTATION = "volcano.sh/network-topology-highest-tier"
HIERARCHY_ANNOTATION = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_ANNOTATION = "volcano.sh/hierarchy-weights"


class PodGroupPhase(StrEnum):
    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


class PodGroupConditionType(StrEnum):
    UNSCHEDULABLE = "Unschedulable"
    SCHEDULED = "Scheduled"


class PodGroupConditionReason(StrEnum):
    NOT_ENOUGH_RESOURCES = "NotEnoughResources"
    NOT_ENOUGH_TASKS = "NotEnoughTasks"
    NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"
    POD_FAILED = "PodFailed"
    POD_DELETED = "PodDeleted"


class NetworkTopologyMode(StrEnum):
    HARD = "hard"
    SOFT = "soft"


class QueueState(StrEnum):
    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"
    UNKNOWN = "Unknown"


class MemberType(StrEnum):
    NODE = "Node"
    HYPER_NODE = "HyperNode"


# ---------------------------------------------------------------- PodGroup


class NetworkTopology(OpenModel):
    mode: str | None = None  # CRD default "hard"
    highest_tier_allowed: int | None = None
    highest_tier_name: str | None = None  # exclusive with highestTierAllowed (webhook)


class SubGroupPolicy(OpenModel):
    name: str | None = None
    network_topology: NetworkTopology | None = None
    sub_group_size: int | None = None
    min_sub_groups: int | None = None
    label_selector: LabelSelector | None = None
    match_label_keys: list[str] | None = None


class PodGroupSpec(OpenModel):
    min_member: int | None = None
    min_task_member: dict[str, int] | None = None
    min_resources: ResourceList | None = None
    queue: str | None = None  # CRD default "default"
    priority_class_name: str | None = None
    network_topology: NetworkTopology | None = None
    sub_group_policy: list[SubGroupPolicy] | None = None


class PodGroupCondition(OpenModel):
    """Not a ``metav1.Condition``: it carries ``transitionID`` (the cycle UID) and no observedGeneration."""

    type: str | None = None
    status: str | None = None
    transition_id: str | None = Field(default=None, alias="transitionID")
    last_transition_time: str | None = None
    reason: str | None = None
    message: str | None = None


class PodGroupStatus(OpenModel):
    phase: str | None = None
    conditions: list[PodGroupCondition] | None = None
    running: int | None = None
    succeeded: int | None = None
    failed: int | None = None


class PodGroup(OpenModel):
    api_version: str = API_VERSION
    kind: str = POD_GROUP_KIND
    metadata: ObjectMeta = ObjectMeta()
    spec: PodGroupSpec = PodGroupSpec()
    status: PodGroupStatus | None = None


# ---------------------------------------------------------------- Queue


class Guarantee(OpenModel):
    resource: ResourceList | None = None


class QueueSpec(OpenModel):
    weight: int | None = None  # CRD default 1, 1..65535
    capability: ResourceList | None = None
    deserved: ResourceList | None = None
    guarantee: Guarantee | None = None
    reclaimable: bool | None = None  # webhook default true
    parent: str | None = None
    priority: int | None = None
    dequeue_strategy: str | None = None  # in the API, not read by the scheduler
    type: str | None = None
    affinity: dict[str, Any] | None = None
    extend_clusters: list[dict[str, Any]] | None = None


class Reservation(OpenModel):
    nodes: list[str] | None = None
    resource: ResourceList | None = None


class QueueStatus(OpenModel):
    state: str | None = None
    allocated: ResourceList | None = None
    pending: int | None = None
    inqueue: int | None = None
    running: int | None = None
    unknown: int | None = None
    completed: int | None = None
    reservation: Reservation | None = None


class Queue(OpenModel):
    api_version: str = API_VERSION
    kind: str = QUEUE_KIND
    metadata: ObjectMeta = ObjectMeta()
    spec: QueueSpec = QueueSpec()
    status: QueueStatus | None = None


# ---------------------------------------------------------------- HyperNode


class ExactMatch(OpenModel):
    name: str


class RegexMatch(OpenModel):
    pattern: str


class MemberSelector(OpenModel):
    """Exactly one of the three (CEL); the scheduler resolves HyperNode members by ``exactMatch`` only."""

    exact_match: ExactMatch | None = None
    regex_match: RegexMatch | None = None
    label_match: LabelSelector | None = None


class HyperNodeMember(OpenModel):
    type: str  # MemberType
    selector: MemberSelector | None = None


class HyperNodeSpec(OpenModel):
    tier: int
    tier_name: str | None = None
    members: list[HyperNodeMember] | None = None


class HyperNodeStatus(OpenModel):
    conditions: list[Condition] | None = None
    node_count: int | None = None


class HyperNode(OpenModel):
    api_version: str = TOPOLOGY_API_VERSION
    kind: str = HYPER_NODE_KIND
    metadata: ObjectMeta = ObjectMeta()
    spec: HyperNodeSpec
    status: HyperNodeStatus | None = None
