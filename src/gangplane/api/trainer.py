"""Kubeflow Trainer ``trainer.kubeflow.org/v1alpha1``: TrainJob, TrainingRuntime, ClusterTrainingRuntime.

Field names, defaults and constants follow upstream ``pkg/apis/trainer/v1alpha1`` (see
reference/trainer-api.md §3-§5). These models are closed (unknown fields are errors) down to where they embed
Kubernetes shapes (the JobSet template), which are open.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from gangplane.api.base import ApiModel
from gangplane.api.core import EnvVar, ResourceRequirements, Toleration, VolumeMount
from gangplane.api.jobset import JobSetSpec
from gangplane.api.meta import Condition, ObjectMeta

GROUP = "trainer.kubeflow.org"
API_VERSION = f"{GROUP}/v1alpha1"
TRAINJOB_KIND = "TrainJob"
TRAINING_RUNTIME_KIND = "TrainingRuntime"
CLUSTER_TRAINING_RUNTIME_KIND = "ClusterTrainingRuntime"

DEFAULT_MANAGED_BY = "trainer.kubeflow.org/trainjob-controller"
MULTIKUEUE_MANAGED_BY = "kueue.x-k8s.io/multikueue"

ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"
SUPPORT_LABEL = "trainer.kubeflow.org/support"
SUPPORT_DEPRECATED = "deprecated"


class Ancestor(StrEnum):
    """Values of the ancestor label on a replicated job's Job template."""

    DATASET_INITIALIZER = "dataset-initializer"
    MODEL_INITIALIZER = "model-initializer"
    TRAINER = "trainer"


# Replicated-job and container names the Trainer API injects values into.
NODE = "node"
LAUNCHER = "launcher"
DATASET_INITIALIZER = "dataset-initializer"
MODEL_INITIALIZER = "model-initializer"


class ConditionType(StrEnum):
    SUSPENDED = "Suspended"
    COMPLETE = "Complete"
    FAILED = "Failed"


class ConditionReason(StrEnum):
    SUSPENDED = "Suspended"
    RESUMED = "Resumed"
    RUNTIME_NOT_SUPPORTED = "TrainingRuntimeNotSupported"
    DEADLINE_EXCEEDED = "DeadlineExceeded"


# ---------------------------------------------------------------- TrainJob


class RuntimeRef(ApiModel):
    name: str
    api_group: str | None = None
    kind: str | None = None


class SecretRef(ApiModel):
    name: str = ""  # CRD default


class DataInitializer(ApiModel):
    storage_uri: str | None = Field(default=None, alias="storageUri")
    env: list[EnvVar] | None = None
    secret_ref: SecretRef | None = None


class Initializer(ApiModel):
    dataset: DataInitializer | None = None
    model: DataInitializer | None = None


class Trainer(ApiModel):
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    env: list[EnvVar] | None = None
    num_nodes: int | None = None
    resources_per_node: ResourceRequirements | None = None
    num_proc_per_node: int | None = None


class PatchMetadata(ApiModel):
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class ContainerPatch(ApiModel):
    name: str
    env: list[EnvVar] | None = None
    volume_mounts: list[VolumeMount] | None = None
    security_context: dict[str, object] | None = None


class PodSpecPatch(ApiModel):
    """The pod-spec fields a runtime patch may set (upstream ``PodSpecPatch``)."""

    node_selector: dict[str, str] | None = None
    affinity: dict[str, object] | None = None
    tolerations: list[Toleration] | None = None
    scheduling_gates: list[dict[str, object]] | None = None
    service_account_name: str | None = None
    volumes: list[dict[str, object]] | None = None
    init_containers: list[ContainerPatch] | None = None
    containers: list[ContainerPatch] | None = None
    image_pull_secrets: list[dict[str, object]] | None = None
    security_context: dict[str, object] | None = None
    termination_grace_period_seconds: int | None = None


class PodTemplatePatch(ApiModel):
    metadata: PatchMetadata | None = None
    spec: PodSpecPatch | None = None


class JobSpecPatch(ApiModel):
    template: PodTemplatePatch | None = None


class JobTemplatePatch(ApiModel):
    metadata: PatchMetadata | None = None
    spec: JobSpecPatch | None = None


class ReplicatedJobPatch(ApiModel):
    name: str
    template: JobTemplatePatch | None = None


class JobSetSpecPatch(ApiModel):
    replicated_jobs: list[ReplicatedJobPatch] | None = None


class JobSetTemplatePatch(ApiModel):
    metadata: PatchMetadata | None = None
    spec: JobSetSpecPatch | None = None


class TrainingRuntimeSpecPatch(ApiModel):
    template: JobSetTemplatePatch | None = None


class RuntimePatch(ApiModel):
    manager: str
    time: str | None = None
    training_runtime_spec: TrainingRuntimeSpecPatch | None = None


class TrainJobSpec(ApiModel):
    runtime_ref: RuntimeRef
    initializer: Initializer | None = None
    trainer: Trainer | None = None
    runtime_patches: list[RuntimePatch] | None = None
    suspend: bool | None = None
    active_deadline_seconds: int | None = None
    managed_by: str | None = None


class JobStatus(ApiModel):
    name: str
    ready: int = 0
    succeeded: int = 0
    failed: int = 0
    active: int = 0
    suspended: int = 0


class TrainJobStatus(ApiModel):
    conditions: list[Condition] | None = None
    jobs_status: list[JobStatus] | None = None
    trainer_status: dict[str, object] | None = None


class TrainJob(ApiModel):
    api_version: str = API_VERSION
    kind: str = TRAINJOB_KIND
    metadata: ObjectMeta = ObjectMeta()
    spec: TrainJobSpec
    status: TrainJobStatus | None = None


# ---------------------------------------------------------------- runtimes


class EnvInjectionTarget(ApiModel):
    job_name: str
    container_names: list[str]


class EnvInjection(ApiModel):
    targets: list[EnvInjectionTarget] | None = None


class TorchMLPolicySource(ApiModel):
    env_injection: EnvInjection | None = None


class MPIMLPolicySource(ApiModel):
    num_proc_per_node: int | None = None
    mpi_implementation: str | None = None
    ssh_auth_mount_path: str | None = None
    run_launcher_as_node: bool | None = None


class FluxMLPolicySource(ApiModel):
    num_proc_per_node: int | None = None


class EmptyPolicySource(ApiModel):
    """``jax: {}`` and ``xgboost: {}``."""


class MLPolicy(ApiModel):
    num_nodes: int | None = None
    torch: TorchMLPolicySource | None = None
    mpi: MPIMLPolicySource | None = None
    jax: EmptyPolicySource | None = None
    xgboost: EmptyPolicySource | None = None
    flux: FluxMLPolicySource | None = None


class CoschedulingPodGroupPolicySource(ApiModel):
    schedule_timeout_seconds: int | None = None


class NetworkTopology(ApiModel):
    mode: str | None = None
    highest_tier_allowed: int | None = None


class VolcanoPodGroupPolicySource(ApiModel):
    network_topology: NetworkTopology | None = None


class PodGroupPolicy(ApiModel):
    coscheduling: CoschedulingPodGroupPolicySource | None = None
    volcano: VolcanoPodGroupPolicySource | None = None


class JobSetTemplateSpec(ApiModel):
    metadata: PatchMetadata | None = None
    spec: JobSetSpec = JobSetSpec()


class TrainingRuntimeSpec(ApiModel):
    ml_policy: MLPolicy | None = None
    pod_group_policy: PodGroupPolicy | None = None
    template: JobSetTemplateSpec = JobSetTemplateSpec()


class TrainingRuntime(ApiModel):
    """A namespaced runtime; ``ClusterTrainingRuntime`` has the same shape, cluster-scoped."""

    api_version: str = API_VERSION
    kind: str = TRAINING_RUNTIME_KIND
    metadata: ObjectMeta = ObjectMeta()
    spec: TrainingRuntimeSpec


class ClusterTrainingRuntime(TrainingRuntime):
    kind: str = CLUSTER_TRAINING_RUNTIME_KIND
