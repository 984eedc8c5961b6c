"""TrainJob admission: the CRD schema and CEL rules of ``trainer.kubeflow.org_trainjobs.yaml``, the update
transition rules, and gangplane's early rejection of runtime kinds it cannot resolve.

Rules that need the resolved runtime (initializer jobs exist, patched containers exist, Torch reserved env,
...) belong to the runtime plugins' ``validate`` hooks, not here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic.alias_generators import to_camel

from gangplane.api import trainer as t
from gangplane.api.base import ApiModel
from gangplane.api.core import EnvVar
from gangplane.api.validation.common import (
    Errors,
    Validation,
    child,
    domain_prefixed_path,
    index,
    length_between,
    list_map,
    max_items,
    max_length,
    minimum,
)
from gangplane.clock import parse_rfc3339
from gangplane.errors import CauseType, FieldError

RFC1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
STORAGE_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://.+$")
SUPPORTED_RUNTIME_KINDS = (t.TRAINING_RUNTIME_KIND, t.CLUSTER_TRAINING_RUNTIME_KIND)
MANAGED_BY_VALUES = (t.DEFAULT_MANAGED_BY, t.MULTIKUEUE_MANAGED_BY)

# Messages of the CRD's x-kubernetes-validations, verbatim.
NAME_FORMAT_MSG = "metadata.name must match RFC 1035 DNS label format"
NAME_LENGTH_MSG = "metadata.name must be no more than 63 characters"
STORAGE_URI_MSG = "storageUri may be empty, or it must be a valid URI (scheme://...)"
NUM_PROC_MSG = "numProcPerNode must be greater than or equal to 1"
MANAGED_BY_MSG = (
    "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set"
)
IMMUTABLE_MSG = "field is immutable"
# Messages of the JobSet plugin's runtimePatches mutability check.
PATCHES_SUSPEND_MSG = (
    "RuntimePatches can only be modified when the TrainJob is suspended before or after the update"
)
PATCHES_ACTIVE_MSG = "RuntimePatches cannot be modified when the JobSet's ReplicatedJob {} is still active"

ARG_MAX_LENGTH = 1048576


def validate_trainjob(job: t.TrainJob) -> Validation:
    """Create-time (and every-write) rules of a TrainJob; all errors at once."""
    spec, path = job.spec, "spec"
    errors = _name(job.metadata.name)
    errors += _runtime_ref(spec.runtime_ref, child(path, "runtimeRef"))
    errors += _initializer(spec.initializer, child(path, "initializer"))
    errors += _trainer(spec.trainer, child(path, "trainer"))
    errors += _runtime_patches(spec.runtime_patches, child(path, "runtimePatches"))
    errors += minimum(child(path, "activeDeadlineSeconds"), spec.active_deadline_seconds, 1)
    errors += _managed_by(spec.managed_by, child(path, "managedBy"))
    return Validation(errors)


def _name(name: str | None) -> Errors:
    if not name:
        return [FieldError("metadata.name", CauseType.REQUIRED, "name or generateName is required")]
    errors: Errors = []
    if not RFC1035_LABEL.match(name):
        errors.append(FieldError("metadata.name", CauseType.INVALID, NAME_FORMAT_MSG, name))
    if len(name) > 63:
        errors.append(FieldError("metadata.name", CauseType.INVALID, NAME_LENGTH_MSG, name))
    return errors


def _runtime_ref(ref: t.RuntimeRef, path: str) -> Errors:
    """Schema lengths, then gangplane's admission check that the reference can be resolved at all.

    Upstream admits an unknown kind or group and fails the job later (``TrainingRuntimeNotSupported``).
    """
    errors = length_between(child(path, "name"), ref.name, 1, 253)
    errors += max_length(child(path, "apiGroup"), ref.api_group, 253)
    errors += max_length(child(path, "kind"), ref.kind, 253)
    kind, group = ref.kind or t.CLUSTER_TRAINING_RUNTIME_KIND, ref.api_group or t.GROUP
    detail = f"unsupported runtime: {kind}.{group}"
    if kind not in SUPPORTED_RUNTIME_KINDS:
        errors.append(FieldError(child(path, "kind"), CauseType.NOT_SUPPORTED, detail, kind))
    if group != t.GROUP:
        errors.append(FieldError(child(path, "apiGroup"), CauseType.NOT_SUPPORTED, detail, group))
    return errors


def _initializer(init: t.Initializer | None, path: str) -> Errors:
    errors: Errors = []
    if init is None:
        return errors
    for name, source in (("dataset", init.dataset), ("model", init.model)):
        if source is not None:
            errors += _data_initializer(source, child(path, name))
    return errors


def _data_initializer(source: t.DataInitializer, path: str) -> Errors:
    uri, uri_path = source.storage_uri, child(path, "storageUri")
    errors = max_length(uri_path, uri, 2048)
    if uri and not STORAGE_URI.match(uri):
        errors.append(FieldError(uri_path, CauseType.INVALID, STORAGE_URI_MSG, uri))
    return errors + _env(source.env, child(path, "env"))


def _env(env: list[EnvVar] | None, path: str) -> Errors:
    return list_map(path, env, 128)


def _trainer(trainer: t.Trainer | None, path: str) -> Errors:
    if trainer is None:
        return []
    errors = max_length(child(path, "image"), trainer.image, 500)
    for name, items in (("command", trainer.command), ("args", trainer.args)):
        errors += max_items(child(path, name), items, 128)
        for i, item in enumerate(items or []):
            errors += max_length(index(child(path, name), i), item, ARG_MAX_LENGTH)
    errors += _env(trainer.env, child(path, "env"))
    errors += minimum(child(path, "numNodes"), trainer.num_nodes, 0)
    errors += minimum(child(path, "numProcPerNode"), trainer.num_proc_per_node, 1, NUM_PROC_MSG)
    return errors


def _managed_by(value: str | None, path: str) -> Errors:
    errors = max_length(path, value, 253)
    if value is not None and value not in MANAGED_BY_VALUES:
        errors.append(FieldError(path, CauseType.INVALID, MANAGED_BY_MSG, value))
    return errors


# ---------------------------------------------------------------- runtimePatches


def _runtime_patches(patches: list[t.RuntimePatch] | None, path: str) -> Errors:
    errors = list_map(path, patches, 16, key="manager")
    for i, patch in enumerate(patches or []):
        errors += _runtime_patch(patch, index(path, i))
    return errors


def _runtime_patch(patch: t.RuntimePatch, path: str) -> Errors:
    manager_path = child(path, "manager")
    errors = length_between(manager_path, patch.manager, 1, 253)
    if patch.manager:
        errors += domain_prefixed_path(manager_path, patch.manager)
    errors += _time(patch.time, child(path, "time"))
    jobs = _patch_jobs(patch)
    jobs_path = "trainingRuntimeSpec.template.spec.replicatedJobs"
    errors += list_map(child(path, jobs_path), jobs, 100)
    for j, rjob in enumerate(jobs or []):
        rjob_path = index(child(path, jobs_path), j)
        errors += length_between(child(rjob_path, "name"), rjob.name, 1, 253)
        pod = _patch_pod_spec(rjob)
        if pod is not None:
            errors += _pod_spec_patch(pod, child(rjob_path, "template.spec.template.spec"))
    return errors


def _time(value: str | None, path: str) -> Errors:
    if value is None:
        return []
    try:
        parse_rfc3339(value)
    except ValueError:
        return [FieldError(path, CauseType.INVALID, "must be an RFC 3339 date-time", value)]
    return []


def _patch_jobs(patch: t.RuntimePatch) -> list[t.ReplicatedJobPatch] | None:
    spec = patch.training_runtime_spec
    template = spec.template if spec else None
    return template.spec.replicated_jobs if template and template.spec else None


def _patch_pod_spec(rjob: t.ReplicatedJobPatch) -> t.PodSpecPatch | None:
    job = rjob.template.spec if rjob.template else None
    return job.template.spec if job and job.template else None


def _pod_spec_patch(pod: t.PodSpecPatch, path: str) -> Errors:
    errors = max_items(child(path, "tolerations"), pod.tolerations, 128)
    errors += list_map(child(path, "schedulingGates"), pod.scheduling_gates, 16)
    errors += max_length(child(path, "serviceAccountName"), pod.service_account_name, 253)
    errors += list_map(child(path, "volumes"), pod.volumes, 128)
    errors += list_map(child(path, "imagePullSecrets"), pod.image_pull_secrets, 64)
    errors += minimum(child(path, "terminationGracePeriodSeconds"), pod.termination_grace_period_seconds, 0)
    for name, containers in (("initContainers", pod.init_containers), ("containers", pod.containers)):
        errors += list_map(child(path, name), containers, 64)
        for i, container in enumerate(containers or []):
            errors += _container_patch(container, index(child(path, name), i))
    return errors


def _container_patch(container: t.ContainerPatch, path: str) -> Errors:
    errors = length_between(child(path, "name"), container.name, 1, 253)
    errors += _env(container.env, child(path, "env"))
    return errors + list_map(child(path, "volumeMounts"), container.volume_mounts, 128)


# ---------------------------------------------------------------- update


def validate_trainjob_update(old: t.TrainJob, new: t.TrainJob, active_jobs: Sequence[str] = ()) -> Validation:
    """The transition rules of an update (not the rules ``validate_trainjob`` checks on ``new``).

    CEL transition rules (``self == oldSelf``) only run when the field exists in both objects, so adding or
    removing an optional immutable field passes, as upstream. ``active_jobs`` are the JobSet's replicated jobs
    with active pods (see ``validate_runtime_patches_mutability``).
    """
    errors: Errors = []
    for name in ("runtime_ref", "initializer", "trainer", "active_deadline_seconds", "managed_by"):
        errors += _immutable(child("spec", to_camel(name)), getattr(old.spec, name), getattr(new.spec, name))
    errors += _patch_transitions(old.spec.runtime_patches or [], new.spec.runtime_patches or [])
    errors += validate_runtime_patches_mutability(old, new, active_jobs)
    return Validation(errors)


def _immutable(path: str, old: Any, new: Any) -> Errors:
    if old is None or new is None or _wire(old) == _wire(new):
        return []
    return [FieldError(path, CauseType.INVALID, IMMUTABLE_MSG)]


def _wire(value: Any) -> Any:
    return value.to_dict() if isinstance(value, ApiModel) else value


PATCH_IMMUTABLE_FIELDS = (
    "service_account_name",
    "volumes",
    "init_containers",
    "containers",
    "image_pull_secrets",
    "security_context",
    "termination_grace_period_seconds",
)


def _patch_transitions(old: list[t.RuntimePatch], new: list[t.RuntimePatch]) -> Errors:
    """Per-field ``self == oldSelf`` inside patch entries, correlated by manager and replicated-job name."""
    old_by_manager = {p.manager: p for p in old}
    errors: Errors = []
    for i, patch in enumerate(new):
        previous = old_by_manager.get(patch.manager)
        if previous is None:
            continue
        old_jobs = {j.name: j for j in _patch_jobs(previous) or []}
        for j, rjob in enumerate(_patch_jobs(patch) or []):
            path = f"spec.runtimePatches[{i}].trainingRuntimeSpec.template.spec.replicatedJobs[{j}]"
            errors += _pod_transitions(old_jobs.get(rjob.name), rjob, f"{path}.template.spec.template.spec")
    return errors


def _pod_transitions(old: t.ReplicatedJobPatch | None, new: t.ReplicatedJobPatch, path: str) -> Errors:
    old_pod, new_pod = (_patch_pod_spec(old) if old else None), _patch_pod_spec(new)
    if old_pod is None or new_pod is None:
        return []
    errors: Errors = []
    for name in PATCH_IMMUTABLE_FIELDS:
        errors += _immutable(child(path, to_camel(name)), getattr(old_pod, name), getattr(new_pod, name))
    return errors


def validate_runtime_patches_mutability(
    old: t.TrainJob, new: t.TrainJob, active_jobs: Sequence[str]
) -> Errors:
    """Upstream JobSet plugin: ``runtimePatches`` may change only if the job is suspended before or after the
    update ("before or after" lets Kueue write its patch and flip ``suspend`` in one request), and not while
    any replicated job of the JobSet still has active pods (one error per such job; the caller reads the
    JobSet and passes the names).
    """
    if _patches(old) == _patches(new):
        return []
    path = "spec.runtimePatches"
    if not (old.spec.suspend or new.spec.suspend):
        return [FieldError(path, CauseType.FORBIDDEN, PATCHES_SUSPEND_MSG)]
    return [FieldError(path, CauseType.FORBIDDEN, PATCHES_ACTIVE_MSG.format(name)) for name in active_jobs]


def _patches(job: t.TrainJob) -> list[dict[str, Any]]:
    return [p.to_dict() for p in job.spec.runtime_patches or []]
