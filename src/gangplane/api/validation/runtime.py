"""TrainingRuntime / ClusterTrainingRuntime admission: CRD schema and CEL rules, the runtime webhook
(``pkg/webhooks/trainingruntime_webhook.go``), the embedded JobSet's webhook rules, and gangplane's extras:

- ``podGroupPolicy`` is one-of: coscheduling *and* volcano would build two PodGroups that never both admit
  the gang (kubeflow/trainer#4060: upstream accepts it and the job hangs Pending without a condition).
- A gang policy with a pod ``schedulerName`` of a different, known scheduler is rejected: that scheduler never
  reads the PodGroup, so the gang is silently not enforced (or never admitted).
- ``coscheduling.scheduleTimeoutSeconds >= 1`` and ``volcano.networkTopology.highestTierAllowed >= 1``:
  upstream dereferences both unchecked; 0 or a negative would time every gang out at once / allow no tier.
- ``mlPolicy.numNodes >= 0``: upstream has no minimum. 0 is kept legal, as for
  ``TrainJob.spec.trainer.numNodes`` (which mirrors JobSet replicas); only negative counts, which no component
  can act on, are rejected.
"""

from __future__ import annotations

from gangplane.api import trainer as t
from gangplane.api.jobset import JobSetSpec, ReplicatedJob
from gangplane.api.validation.common import (
    Errors,
    Validation,
    child,
    dns1123_subdomain,
    index,
    length_between,
    list_map,
    max_items,
    max_length,
    minimum,
    one_of,
    unique_by,
)
from gangplane.errors import CauseType, FieldError

ONE_POLICY_MSG = "Only one of the policy can be configured"
MPI_NUM_PROC_MSG = "NumProcPerNode in mpiPolicy must be >= 1"
FLUX_NUM_PROC_MSG = "NumProcPerNode in fluxPolicy must be >= 1"
NODE_CONTAINER_MSG = (
    "containerNames must not include the main node container because PET_* envs are always injected into it"
)
ONE_GANG_MSG = "only one of coscheduling and volcano may be set: each builds its own PodGroup for the pods"
REPLICAS_MSG = "always must be 1"
CONTAINER_MSG = "must contain the required container for the ancestor: {}"
STARTUP_DEPENDS_MSG = "StartupPolicy and DependsOn APIs are mutually exclusive"
DEPENDS_MSG = "replicatedJob: {} cannot depend on replicatedJob: {}"
TARGET_MSG = "invalid replicatedJob name '{}' does not appear in .spec.ReplicatedJobs"
DEPRECATION_POLICY_URL = (
    "https://www.kubeflow.org/docs/components/trainer/operator-guides/runtime/#runtime-deprecation-policy"
)
DEPRECATED_MSG = (
    '{} "{}" is deprecated and will be removed in a future release of Kubeflow Trainer. '
    "See runtime deprecation policy: {}"
)

ANCESTOR_CONTAINERS = {
    t.Ancestor.TRAINER: t.NODE,
    t.Ancestor.MODEL_INITIALIZER: t.MODEL_INITIALIZER,
    t.Ancestor.DATASET_INITIALIZER: t.DATASET_INITIALIZER,
}

# Scheduler names gangplane knows, and which of them honour each gang policy's PodGroup. Unknown (custom)
# names are not judged; unset means the cluster's default scheduler, which may itself be the gang scheduler.
KNOWN_SCHEDULERS = frozenset(
    {"default-scheduler", "scheduler-plugins-scheduler", "slurm-bridge-scheduler", "volcano", "kai-scheduler"}
)
GANG_SCHEDULERS = {
    "coscheduling": ("default-scheduler", "scheduler-plugins-scheduler", "slurm-bridge-scheduler"),
    "volcano": ("volcano",),
}
RJOBS_PATH = "spec.template.spec.replicatedJobs"
POD_SPEC = "template.spec.template.spec"


def validate_runtime(runtime: t.TrainingRuntime) -> Validation:
    """Every rule for a TrainingRuntime or ClusterTrainingRuntime (create and update), plus warnings."""
    spec = runtime.spec
    errors = _name(runtime.metadata.name)
    errors += _ml_policy(spec.ml_policy, "spec.mlPolicy")
    errors += _pod_group_policy(spec.pod_group_policy, "spec.podGroupPolicy")
    errors += _scheduler_names(spec.pod_group_policy, spec.template.spec.replicated_jobs)
    errors += _ancestors(spec.template.spec.replicated_jobs)
    errors += validate_jobset_spec(spec.template.spec, "spec.template.spec")
    return Validation(errors, _warnings(runtime))


def _name(name: str | None) -> Errors:
    if not name:
        return [FieldError("metadata.name", CauseType.REQUIRED, "name or generateName is required")]
    return dns1123_subdomain("metadata.name", name)


def _warnings(runtime: t.TrainingRuntime) -> list[str]:
    labels = runtime.metadata.labels or {}
    if labels.get(t.SUPPORT_LABEL) != t.SUPPORT_DEPRECATED:
        return []
    return [DEPRECATED_MSG.format(runtime.kind, runtime.metadata.name, DEPRECATION_POLICY_URL)]


# ---------------------------------------------------------------- mlPolicy


def _ml_policy(policy: t.MLPolicy | None, path: str) -> Errors:
    if policy is None:
        return []
    errors: Errors = []
    sources = [policy.torch, policy.mpi, policy.jax, policy.xgboost, policy.flux]
    if sum(source is not None for source in sources) > 1:
        errors.append(FieldError(path, CauseType.INVALID, ONE_POLICY_MSG))
    errors += minimum(child(path, "numNodes"), policy.num_nodes, 0)
    if policy.torch is not None and policy.torch.env_injection is not None:
        errors += _env_injection(policy.torch.env_injection, child(path, "torch.envInjection.targets"))
    if (mpi := policy.mpi) is not None:
        errors += minimum(child(path, "mpi.numProcPerNode"), mpi.num_proc_per_node, 1, MPI_NUM_PROC_MSG)
        errors += one_of(child(path, "mpi.mpiImplementation"), mpi.mpi_implementation, ("OpenMPI", ""))
        errors += max_length(child(path, "mpi.sshAuthMountPath"), mpi.ssh_auth_mount_path, 4096)
    if policy.flux is not None:
        flux_procs = policy.flux.num_proc_per_node
        errors += minimum(child(path, "flux.numProcPerNode"), flux_procs, 1, FLUX_NUM_PROC_MSG)
    return errors


def _env_injection(injection: t.EnvInjection, path: str) -> Errors:
    errors = list_map(path, injection.targets, 16, key="jobName")
    for i, target in enumerate(injection.targets or []):
        errors += _env_target(target, index(path, i))
    return errors


def _env_target(target: t.EnvInjectionTarget, path: str) -> Errors:
    names, names_path = target.container_names, child(path, "containerNames")
    errors = length_between(child(path, "jobName"), target.job_name, 1, 253)
    if not names:
        errors.append(FieldError(names_path, CauseType.INVALID, "should have at least 1 items", 0))
    errors += max_items(names_path, names, 8)
    errors += unique_by(names_path, names, lambda name: name, "value")
    for i, name in enumerate(names):
        errors += max_length(index(names_path, i), name, 63)
    if t.NODE in names:
        errors.append(FieldError(names_path, CauseType.INVALID, NODE_CONTAINER_MSG))
    return errors


# ---------------------------------------------------------------- podGroupPolicy


def _pod_group_policy(policy: t.PodGroupPolicy | None, path: str) -> Errors:
    if policy is None:
        return []
    errors: Errors = []
    if policy.coscheduling is not None and policy.volcano is not None:
        errors.append(FieldError(path, CauseType.INVALID, ONE_GANG_MSG))
    if policy.coscheduling is not None:
        timeout = policy.coscheduling.schedule_timeout_seconds
        errors += minimum(child(path, "coscheduling.scheduleTimeoutSeconds"), timeout, 1)
    topology = policy.volcano.network_topology if policy.volcano is not None else None
    if topology is not None:
        topology_path = child(path, "volcano.networkTopology")
        errors += one_of(child(topology_path, "mode"), topology.mode, ("hard", "soft"))
        errors += minimum(child(topology_path, "highestTierAllowed"), topology.highest_tier_allowed, 1)
    return errors


def _scheduler_names(policy: t.PodGroupPolicy | None, rjobs: list[ReplicatedJob]) -> Errors:
    gangs = [name for name in GANG_SCHEDULERS if policy is not None and getattr(policy, name) is not None]
    errors: Errors = []
    for i, rjob in enumerate(rjobs):
        scheduler = rjob.template.spec.template.spec.scheduler_name
        if not scheduler or scheduler not in KNOWN_SCHEDULERS:
            continue
        for gang in gangs:
            if scheduler not in GANG_SCHEDULERS[gang]:
                errors.append(_scheduler_error(i, scheduler, gang))
    return errors


def _scheduler_error(i: int, scheduler: str, gang: str) -> FieldError:
    allowed = ", ".join(f'"{name}"' for name in GANG_SCHEDULERS[gang])
    detail = (
        f"podGroupPolicy.{gang} needs pods scheduled by {allowed} or by the default scheduler (unset); "
        f'"{scheduler}" does not honour its PodGroup'
    )
    return FieldError(f"{RJOBS_PATH}[{i}].{POD_SPEC}.schedulerName", CauseType.INVALID, detail, scheduler)


# ---------------------------------------------------------------- replicated jobs


def _ancestors(rjobs: list[ReplicatedJob]) -> Errors:
    """The runtime webhook: one replica per ancestor job, holding the container TrainJob values go into."""
    errors: Errors = []
    for i, rjob in enumerate(rjobs):
        labels = (rjob.template.metadata.labels if rjob.template.metadata else None) or {}
        ancestor = labels.get(t.ANCESTOR_LABEL)
        if ancestor not in ANCESTOR_CONTAINERS:
            continue
        replicas = 1 if rjob.replicas is None else rjob.replicas
        if replicas != 1:
            path = f"{RJOBS_PATH}[{i}].replicas"
            errors.append(FieldError(path, CauseType.INVALID, REPLICAS_MSG, replicas))
        containers = rjob.template.spec.template.spec.containers
        if all(c.name != ANCESTOR_CONTAINERS[t.Ancestor(ancestor)] for c in containers):
            path = f"{RJOBS_PATH}[{i}].{POD_SPEC}.containers"
            errors.append(FieldError(path, CauseType.INVALID, CONTAINER_MSG.format(ancestor)))
    return errors


def validate_jobset_spec(spec: JobSetSpec, path: str) -> Errors:
    """JobSet CRD schema and webhook rules for the parts a runtime template commonly sets."""
    rjobs_path = child(path, "replicatedJobs")
    errors = unique_by(rjobs_path, spec.replicated_jobs, lambda rjob: rjob.name, "name")
    errors += minimum(child(path, "ttlSecondsAfterFinished"), spec.ttl_seconds_after_finished, 0)
    earlier: set[str] = set()
    for i, rjob in enumerate(spec.replicated_jobs):
        errors += _replicated_job(rjob, index(rjobs_path, i), earlier)
        earlier.add(rjob.name)
    if _in_order(spec) and any(rjob.depends_on for rjob in spec.replicated_jobs):
        errors.append(FieldError(path, CauseType.INVALID, STARTUP_DEPENDS_MSG))
    return errors + _success_policy(spec, child(path, "successPolicy"))


def _replicated_job(rjob: ReplicatedJob, path: str, earlier: set[str]) -> Errors:
    errors = minimum(child(path, "replicas"), rjob.replicas, 0)
    job = rjob.template.spec
    errors += minimum(child(path, "template.spec.parallelism"), job.parallelism, 0)
    errors += minimum(child(path, "template.spec.completions"), job.completions, 0)
    depends_path = child(path, "dependsOn")
    errors += max_items(depends_path, rjob.depends_on, 5)
    errors += unique_by(depends_path, rjob.depends_on, lambda dep: dep.name, "name")
    for k, dep in enumerate(rjob.depends_on or []):
        errors += one_of(child(index(depends_path, k), "status"), dep.status, ("Ready", "Complete"))
        if dep.name not in earlier:
            detail = DEPENDS_MSG.format(rjob.name, dep.name)
            name_path = child(index(depends_path, k), "name")
            errors.append(FieldError(name_path, CauseType.INVALID, detail, dep.name))
    return errors


def _in_order(spec: JobSetSpec) -> bool:
    return (spec.startup_policy or {}).get("startupPolicyOrder") == "InOrder"


def _success_policy(spec: JobSetSpec, path: str) -> Errors:
    policy = spec.success_policy or {}
    errors = one_of(child(path, "operator"), policy.get("operator"), ("All", "Any"))
    names = {rjob.name for rjob in spec.replicated_jobs}
    for i, target in enumerate(policy.get("targetReplicatedJobs") or []):
        if target not in names:
            target_path = index(child(path, "targetReplicatedJobs"), i)
            errors.append(FieldError(target_path, CauseType.INVALID, TARGET_MSG.format(target), target))
    return errors
