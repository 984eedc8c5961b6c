"""JobSet: the builder of the JobSet every TrainJob becomes (upstream ``plugins/jobset``).

Injects the TrainJob's initializer and trainer values into the conventional containers, stamps the scheduler
hints on every pod template, computes endpoints and parallelism, builds the JobSet, and validates what only it
can check (initializer and patch targets).
"""

from __future__ import annotations

from typing import ClassVar

from gangplane.api import trainer as t
from gangplane.api.core import Container, EnvVar, PodTemplateSpec
from gangplane.api.jobset import API_VERSION, JobSet, JobSetSpec
from gangplane.api.merge import upsert_by_name
from gangplane.api.meta import ObjectMeta
from gangplane.api.validation.trainjob import validate_runtime_patches_mutability
from gangplane.errors import CauseType, FieldError
from gangplane.runtime.info import PodSet, RuntimeInfo
from gangplane.runtime.plugins.common import owner_reference
from gangplane.runtime.points import Desired, Handle, ValidationResult, WatchSource
from gangplane.runtime.reader import Reader

_RJOBS = "spec.runtimePatches[{i}].trainingRuntimeSpec.template.spec.replicatedJobs[{j}]"
_NO_ENV_CONTAINERS = (t.NODE, t.DATASET_INITIALIZER, t.MODEL_INITIALIZER)


def upsert_env(container: Container, env: list[EnvVar]) -> None:
    merged = list(container.env or [])
    for var in env:
        merged = upsert_by_name(merged, var)
    if merged:
        container.env = merged


def _inject_initializer(pod_set: PodSet, init: t.DataInitializer | None) -> None:
    container = pod_set.container(pod_set.name)
    if init is None or container is None:
        return
    env = [EnvVar(name="STORAGE_URI", value=init.storage_uri)] if init.storage_uri else []
    upsert_env(container, [*env, *(init.env or [])])
    if init.secret_ref is not None:
        container.env_from = [*(container.env_from or []), {"secretRef": {"name": init.secret_ref.name}}]


def _inject_trainer(pod_set: PodSet, trainer: t.Trainer | None) -> None:
    container = pod_set.container(t.NODE)
    if trainer is None or container is None:
        return
    if trainer.image is not None:
        container.image = trainer.image
    if trainer.command is not None:
        container.command = list(trainer.command)
    if trainer.args is not None:
        container.args = list(trainer.args)
    upsert_env(container, trainer.env or [])


def _stamp(template: PodTemplateSpec, labels: dict[str, str], annotations: dict[str, str]) -> None:
    if not labels and not annotations:
        return
    meta = template.metadata or ObjectMeta()
    if labels:
        meta.labels = {**(meta.labels or {}), **labels}
    if annotations:
        meta.annotations = {**(meta.annotations or {}), **annotations}
    template.metadata = meta


def endpoints(job_name: str, subdomain: str, pod_set: PodSet) -> list[str]:
    replicas = pod_set.replicated_job.replicas or 1
    return [
        f"{job_name}-{pod_set.name}-{job_index}-{pod_index}.{subdomain}"
        for job_index in range(replicas)
        for pod_index in range(pod_set.count)
    ]


class JobSetPlugin:
    name: ClassVar[str] = "JobSet"

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def watches(self) -> list[WatchSource]:
        return [WatchSource(API_VERSION, "JobSet")]

    def validate(
        self, info: RuntimeInfo, old: t.TrainJob | None, new: t.TrainJob, reader: Reader
    ) -> ValidationResult:
        errors = [*self._validate_initializers(info, new), *self._validate_patches(info, new)]
        errors += _patches_of_active_jobs(old, new, reader)
        return ValidationResult(errors=errors)

    def _validate_initializers(self, info: RuntimeInfo, job: t.TrainJob) -> list[FieldError]:
        init = job.spec.initializer
        wanted = [
            ("dataset", t.DATASET_INITIALIZER, init.dataset if init else None),
            ("model", t.MODEL_INITIALIZER, init.model if init else None),
        ]
        return [
            FieldError(f"spec.initializer.{field}", CauseType.INVALID, problem)
            for field, name, given in wanted
            if given is not None and (problem := _initializer_problem(info, name))
        ]

    def _validate_patches(self, info: RuntimeInfo, job: t.TrainJob) -> list[FieldError]:
        errors: list[FieldError] = []
        for i, patch in enumerate(job.spec.runtime_patches or []):
            template = patch.training_runtime_spec.template if patch.training_runtime_spec else None
            for j, rjob in enumerate(
                (template.spec.replicated_jobs if template and template.spec else None) or []
            ):
                errors.extend(_validate_rjob_patch(info, rjob, _RJOBS.format(i=i, j=j)))
        return errors

    def pre_build(self, info: RuntimeInfo, job: t.TrainJob) -> None:
        name = job.metadata.name or ""
        network = info.jobset_spec.network
        subdomain = network.subdomain if network and network.subdomain else name
        for pod_set in info.pod_sets:
            pod_set.endpoints = endpoints(name, subdomain, pod_set)
            spec = pod_set.replicated_job.template.spec
            spec.parallelism = pod_set.count
            spec.completions = pod_set.count

    def build(self, info: RuntimeInfo, job: t.TrainJob, reader: Reader) -> list[Desired]:
        meta = job.metadata
        existing = reader.get(API_VERSION, "JobSet", meta.namespace or "", meta.name or "")
        if existing is not None and not job.spec.suspend and not (existing.get("spec") or {}).get("suspend"):
            return []
        return [Desired(self.desired_jobset(info, job))]

    def desired_jobset(self, info: RuntimeInfo, job: t.TrainJob) -> JobSet:
        spec = info.jobset_spec.model_copy(deep=True)
        self._fill_templates(info, job, spec)
        spec.suspend = bool(job.spec.suspend)
        metadata = ObjectMeta(
            name=job.metadata.name,
            namespace=job.metadata.namespace,
            owner_references=[owner_reference(job)],
        )
        if info.labels:
            metadata.labels = dict(info.labels)
        if info.annotations:
            metadata.annotations = dict(info.annotations)
        return JobSet(metadata=metadata, spec=spec)

    def _fill_templates(self, info: RuntimeInfo, job: t.TrainJob, spec: JobSetSpec) -> None:
        by_name = {rjob.name: rjob for rjob in spec.replicated_jobs}
        init = job.spec.initializer
        for pod_set in info.pod_sets:
            rjob = by_name[pod_set.name]
            view = PodSet(pod_set.name, pod_set.ancestor, pod_set.count, rjob)
            if pod_set.ancestor is not None:
                rjob.replicas = 1
            if pod_set.ancestor == t.Ancestor.DATASET_INITIALIZER:
                _inject_initializer(view, init.dataset if init else None)
            elif pod_set.ancestor == t.Ancestor.MODEL_INITIALIZER:
                _inject_initializer(view, init.model if init else None)
            elif pod_set.ancestor == t.Ancestor.TRAINER:
                _inject_trainer(view, job.spec.trainer)
            if pod_set.name not in info.scheduler.excluded_pod_sets:
                _stamp(view.template, info.scheduler.pod_labels, info.scheduler.pod_annotations)


def _initializer_problem(info: RuntimeInfo, name: str) -> str:
    pod_set = info.pod_set(name)
    if pod_set is None:
        return f"the runtime has no replicated job {name!r}"
    container = pod_set.container(name)
    if container is None:
        return f"replicated job {name!r} has no container {name!r}"
    if not any(m.name == "initializer" for m in container.volume_mounts or []):
        return f"container {name!r} has no volume mount named 'initializer'"
    return ""


def _validate_rjob_patch(info: RuntimeInfo, rjob: t.ReplicatedJobPatch, path: str) -> list[FieldError]:
    pod_set = info.pod_set(rjob.name)
    if pod_set is None:
        return [
            FieldError(
                f"{path}.name",
                CauseType.NOT_FOUND,
                "must refer to a replicated job of the runtime",
                rjob.name,
            )
        ]
    pod = rjob.template.spec.template if rjob.template and rjob.template.spec else None
    spec = pod.spec if pod else None
    errors: list[FieldError] = []
    base = f"{path}.template.spec.template.spec"
    for field, find, patches in (
        ("containers", pod_set.container, spec.containers if spec else None),
        ("initContainers", pod_set.init_container, spec.init_containers if spec else None),
    ):
        for k, patch in enumerate(patches or []):
            errors.extend(
                _container_patch_errors(patch, find(patch.name) is not None, f"{base}.{field}[{k}]")
            )
    return errors


def _container_patch_errors(patch: t.ContainerPatch, exists: bool, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not exists:
        errors.append(
            FieldError(
                f"{path}.name", CauseType.NOT_FOUND, "must refer to a container of the runtime", patch.name
            )
        )
    if patch.env and patch.name in _NO_ENV_CONTAINERS:
        detail = (
            f"env of container {patch.name!r} must be set through the TrainJob trainer or initializer fields"
        )
        errors.append(FieldError(f"{path}.env", CauseType.FORBIDDEN, detail))
    return errors


def _patches_of_active_jobs(old: t.TrainJob | None, new: t.TrainJob, reader: Reader) -> list[FieldError]:
    """Upstream JobSet plugin ``ValidateObjects``: while the TrainJob is (being) suspended, its runtime patches
    may change only once no replicated job of its JobSet has active pods (the suspend part of the rule is
    checked with the rest of the update in api/validation)."""
    if old is None or not (old.spec.suspend or new.spec.suspend):
        return []
    if old.spec.runtime_patches == new.spec.runtime_patches:
        return []  # most updates leave the patches alone: no JobSet read inside the store's write lock
    meta = new.metadata
    jobset = reader.get(API_VERSION, "JobSet", meta.namespace or "", meta.name or "")
    statuses = ((jobset or {}).get("status") or {}).get("replicatedJobsStatus") or []
    active = [str(s.get("name")) for s in statuses if int(s.get("active") or 0) > 0]
    return validate_runtime_patches_mutability(old, new, active) if active else []
