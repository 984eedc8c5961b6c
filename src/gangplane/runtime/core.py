"""TrainJob + runtime -> RuntimeInfo -> desired objects: the phases in their fixed order.

Port of upstream ``pkg/runtime/core`` (``newRuntimeInfo`` and ``NewObjects``). Pure: callers pass the runtime
and a ``Reader``; nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gangplane.api.jobset import JobSetSpec, ReplicatedJob
from gangplane.api.merge import strategic_merge
from gangplane.api.trainer import MLPolicy, TrainingRuntime, TrainJob
from gangplane.runtime.framework import Framework
from gangplane.runtime.info import PodSet, RuntimeInfo
from gangplane.runtime.points import Desired, ValidationResult
from gangplane.runtime.reader import Reader
from gangplane.runtime.requests import pod_requests


def _merged_metadata(runtime: TrainingRuntime, job: TrainJob, field: str) -> dict[str, str]:
    values = dict(getattr(runtime.spec.template.metadata, field, None) or {})
    for patch in job.spec.runtime_patches or []:
        template = patch.training_runtime_spec.template if patch.training_runtime_spec else None
        values.update(getattr(template.metadata, field, None) or {} if template else {})
    return values


def patched_jobset_spec(runtime: TrainingRuntime, job: TrainJob) -> JobSetSpec:
    """The runtime's JobSet spec with every runtime patch merged in list order (later wins)."""
    spec: dict[str, Any] = runtime.spec.template.spec.to_dict()
    for patch in job.spec.runtime_patches or []:
        template = patch.training_runtime_spec.template if patch.training_runtime_spec else None
        if template is not None and template.spec is not None:
            spec = strategic_merge(spec, template.spec.to_dict())
    return JobSetSpec.model_validate(spec)


def _is_trainer_node(rjob: ReplicatedJob, ancestor: str | None, ml_policy: MLPolicy | None) -> bool:
    launcher_as_node = (
        ml_policy is not None and ml_policy.mpi is not None and ml_policy.mpi.run_launcher_as_node
    )
    return ancestor == "trainer" or bool(launcher_as_node and rjob.name == "node")


def _apply_resources_per_node(rjob: ReplicatedJob, job: TrainJob) -> None:
    wanted = job.spec.trainer.resources_per_node if job.spec.trainer else None
    node = next((c for c in rjob.template.spec.template.spec.containers if c.name == "node"), None)
    if wanted is None or node is None:
        return
    base = node.resources.to_dict() if node.resources else {}
    node.resources = type(wanted).model_validate(strategic_merge(base, wanted.to_dict()))


def _pod_set(rjob: ReplicatedJob, job: TrainJob, ml_policy: MLPolicy | None) -> PodSet:
    labels = (rjob.template.metadata.labels if rjob.template.metadata else None) or {}
    ancestor = labels.get("trainer.kubeflow.org/trainjob-ancestor-step")
    count = rjob.template.spec.parallelism if rjob.template.spec.parallelism is not None else 1
    if ancestor == "trainer" and ml_policy is not None:
        count = ml_policy.num_nodes if ml_policy.num_nodes is not None else 1
    if _is_trainer_node(rjob, ancestor, ml_policy):
        _apply_resources_per_node(rjob, job)
    requests = pod_requests(rjob.template.spec.template.spec)
    return PodSet(rjob.name, ancestor, max(count, 1), rjob, single_pod_requests=requests)


def new_runtime_info(job: TrainJob, runtime: TrainingRuntime) -> RuntimeInfo:
    """Upstream ``newRuntimeInfo``: metadata, patched spec and PodSets, before any enforce phase."""
    spec = patched_jobset_spec(runtime, job)
    ml_policy = runtime.spec.ml_policy
    return RuntimeInfo(
        labels=_merged_metadata(runtime, job, "labels"),
        annotations=_merged_metadata(runtime, job, "annotations"),
        ml_policy=ml_policy.model_copy(deep=True) if ml_policy else None,
        pod_group_policy=runtime.spec.pod_group_policy,
        jobset_spec=spec,
        pod_sets=[_pod_set(rjob, job, ml_policy) for rjob in spec.replicated_jobs],
    )


def enforce(framework: Framework, info: RuntimeInfo, job: TrainJob) -> None:
    """The enforce phases and pre-build, in upstream order."""
    framework.run_enforce_ml_policy(info, job)
    framework.run_enforce_pod_group_policy(info, job)
    framework.run_enforce_pod_spec(info, job)
    framework.run_pre_build(info, job)


@dataclass
class Built:
    """The desired objects of one TrainJob, in apply order, and the warnings the phases raised."""

    objects: list[Desired]
    warnings: list[str]
    info: RuntimeInfo


def new_objects(framework: Framework, job: TrainJob, runtime: TrainingRuntime, reader: Reader) -> Built:
    """Every desired object for ``job``, in apply order."""
    info = new_runtime_info(job, runtime)
    enforce(framework, info, job)
    return Built(framework.run_build(info, job, reader), info.warnings, info)


def default_and_validate(
    framework: Framework, job: TrainJob, runtime: TrainingRuntime, reader: Reader, old: TrainJob | None = None
) -> ValidationResult:
    """Admission: mutate ``job`` as the webhooks would, then run every validator (no enforce phases)."""
    framework.run_default(new_runtime_info(job, runtime), job)
    return framework.run_validate(new_runtime_info(job, runtime), old, job, reader)
