"""Pure defaulting: what the CRD ``default:`` markers and Trainer's mutating webhook add on admission.

Defaults are assigned (``model.field = value``), so they count as set and are serialised, exactly as the API
server stores them. Only values the CRDs declare are filled in (``/work/shared/crds/trainer.kubeflow.org_*``);
Kubernetes core defaults inside pod templates (ports' ``protocol``, volume sources, ...) are left to the
components that own them. Runs before validation, never fails, never reads the wall clock (the ``Clock`` is
injected for ``runtimePatches[].time``).
"""

from __future__ import annotations

from typing import Any

from gangplane.api import trainer as t
from gangplane.api.base import ApiModel
from gangplane.api.jobset import JobSetSpec
from gangplane.clock import Clock, rfc3339

SCHEDULE_TIMEOUT_SECONDS = 60
NETWORK_TOPOLOGY_MODE = "hard"
HIGHEST_TIER_ALLOWED = 1
MPI_IMPLEMENTATION = "OpenMPI"
SSH_AUTH_MOUNT_PATH = "/root/.ssh"
NUM_PROC_PER_NODE = 1
REPLICATED_JOB_GROUP = "default"
JOBSET_RESTART_STRATEGY = "Recreate"
VOLUME_CLAIM_WHEN_DELETED = "Delete"


def default_object(obj: ApiModel, clock: Clock, old: ApiModel | None = None) -> None:
    """Default a TrainJob or a (Cluster)TrainingRuntime in place; other kinds are left alone."""
    if isinstance(obj, t.TrainJob):
        default_trainjob(obj, clock, old if isinstance(old, t.TrainJob) else None)
    elif isinstance(obj, t.TrainingRuntime):
        default_runtime(obj)


# ---------------------------------------------------------------- TrainJob


def default_trainjob(job: t.TrainJob, clock: Clock, old: t.TrainJob | None = None) -> None:
    """CRD defaults plus the webhook's ``runtimePatches[].time`` stamping (``old`` is given on update)."""
    spec = job.spec
    if spec.runtime_ref.api_group is None:
        spec.runtime_ref.api_group = t.GROUP
    if spec.runtime_ref.kind is None:
        spec.runtime_ref.kind = t.CLUSTER_TRAINING_RUNTIME_KIND
    if spec.suspend is None:
        spec.suspend = False
    if spec.managed_by is None:
        spec.managed_by = t.DEFAULT_MANAGED_BY
    for patch in spec.runtime_patches or []:
        _default_image_pull_secrets(patch)
    stamp_patch_times(spec.runtime_patches or [], old.spec.runtime_patches or [] if old else None, clock)


def stamp_patch_times(patches: list[t.RuntimePatch], old: list[t.RuntimePatch] | None, clock: Clock) -> None:
    """Upstream ``TrainJobDefaulter.Default`` (pkg/webhooks/trainjob_webhook.go).

    Create (``old`` is None): a patch without ``time`` gets now. Update: a patch equal to the old entry of the
    same manager, ignoring ``time``, gets the old time back (even over a time the client sent); a changed or
    new patch keeps the time it was sent with, or gets now.
    """
    now = rfc3339(clock.now())
    by_manager = {p.manager: p for p in old or []}
    for patch in patches:
        previous = by_manager.get(patch.manager)
        if previous is not None and _without_time(previous) == _without_time(patch):
            patch.time = previous.time
        elif patch.time is None:
            patch.time = now


def _without_time(patch: t.RuntimePatch) -> dict[str, Any]:
    wire = patch.to_dict()
    wire.pop("time", None)
    return wire


def _default_image_pull_secrets(patch: t.RuntimePatch) -> None:
    """CRD: ``imagePullSecrets[].name`` defaults to ``""`` (a ``LocalObjectReference``)."""
    spec = patch.training_runtime_spec
    jobs = spec.template.spec.replicated_jobs if spec and spec.template and spec.template.spec else None
    for rjob in jobs or []:
        pod = rjob.template.spec.template if rjob.template and rjob.template.spec else None
        for secret in (pod.spec.image_pull_secrets if pod and pod.spec else None) or []:
            secret.setdefault("name", "")


# ---------------------------------------------------------------- runtimes


def default_runtime(runtime: t.TrainingRuntime) -> None:
    """CRD defaults of a TrainingRuntime or ClusterTrainingRuntime."""
    spec = runtime.spec
    if spec.ml_policy is not None:
        _default_ml_policy(spec.ml_policy)
    if spec.pod_group_policy is not None:
        _default_pod_group_policy(spec.pod_group_policy)
    default_jobset_spec(spec.template.spec)


def _default_ml_policy(policy: t.MLPolicy) -> None:
    if (mpi := policy.mpi) is not None:
        if mpi.num_proc_per_node is None:
            mpi.num_proc_per_node = NUM_PROC_PER_NODE
        if mpi.mpi_implementation is None:
            mpi.mpi_implementation = MPI_IMPLEMENTATION
        if mpi.ssh_auth_mount_path is None:
            mpi.ssh_auth_mount_path = SSH_AUTH_MOUNT_PATH
        if mpi.run_launcher_as_node is None:
            mpi.run_launcher_as_node = False
    if policy.flux is not None and policy.flux.num_proc_per_node is None:
        policy.flux.num_proc_per_node = NUM_PROC_PER_NODE


def _default_pod_group_policy(policy: t.PodGroupPolicy) -> None:
    cosched = policy.coscheduling
    if cosched is not None and cosched.schedule_timeout_seconds is None:
        cosched.schedule_timeout_seconds = SCHEDULE_TIMEOUT_SECONDS
    topology = policy.volcano.network_topology if policy.volcano is not None else None
    if topology is not None:
        if topology.mode is None:
            topology.mode = NETWORK_TOPOLOGY_MODE
        if topology.highest_tier_allowed is None:
            topology.highest_tier_allowed = HIGHEST_TIER_ALLOWED


def default_jobset_spec(spec: JobSetSpec) -> None:
    """The defaults the runtime CRD declares inside its embedded JobSet spec, and only those.

    ``replicatedJobs[].replicas`` = 1 and ``groupName`` = ``default``; ``failurePolicy.restartStrategy`` =
    ``Recreate``; ``volumeClaimPolicies[].retentionPolicy.whenDeleted`` = ``Delete``. JobSet's own webhook
    defaults (completion mode, DNS hostnames, ...) are not the runtime's and are not applied.
    """
    for rjob in spec.replicated_jobs:
        if rjob.replicas is None:
            rjob.replicas = 1
        if rjob.group_name is None:
            rjob.group_name = REPLICATED_JOB_GROUP
    if spec.failure_policy is not None:
        spec.failure_policy.setdefault("restartStrategy", JOBSET_RESTART_STRATEGY)
    for claim in (spec.model_extra or {}).get("volumeClaimPolicies") or []:
        retention = claim.get("retentionPolicy") if isinstance(claim, dict) else None
        if isinstance(retention, dict):
            retention.setdefault("whenDeleted", VOLUME_CLAIM_WHEN_DELETED)


__all__ = [
    "default_jobset_spec",
    "default_object",
    "default_runtime",
    "default_trainjob",
    "stamp_patch_times",
]
