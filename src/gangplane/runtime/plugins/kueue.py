"""Kueue: the TrainJob webhook defaults, and the Workload Kueue derives from a queued TrainJob.

Kueue's TrainJob integration lives in kueue ``pkg/controller/jobs/trainjob/`` (reference kueue.md §10,
trainer-api.md §11). Trainer itself knows nothing of Kueue; this plugin reproduces what Kueue does so that
gangplane can render it and its embedded admission can consume it:

- ``default``: Kueue's mutating webhook (create only) suspends a queued TrainJob and appends its own, empty
  runtime patch ``manager: kueue.x-k8s.io/manager`` once (kueue PR #15213 removed duplicates);
- ``build``: the Workload Kueue's job reconciler creates (``applied_by=KUEUE``: on a real cluster Kueue
  creates it, never gangplane);
- ``admission_patch``: what Kueue's start (``RunWithPodSetsInfo``) writes into its patch on admission.

Must not unsuspend a job or touch any runtime patch except Kueue's own (trainer-api.md §11 contract).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from gangplane.api import trainer as t
from gangplane.api.core import PodTemplateSpec, Toleration
from gangplane.api.jobset import JobSet, ReplicatedJob
from gangplane.api.meta import ObjectMeta
from gangplane.api.scheduling import kueue as kq
from gangplane.api.scheduling import kueue_workload as kw
from gangplane.api.validation.common import dns1123_subdomain
from gangplane.clock import Clock
from gangplane.runtime.info import RuntimeInfo
from gangplane.runtime.plugins.common import owner_reference
from gangplane.runtime.plugins.jobset import JobSetPlugin
from gangplane.runtime.points import AppliedBy, Desired, Handle, ValidationResult
from gangplane.runtime.reader import Reader, StaticReader

# kueue pkg/controller/jobframework/workload_names.go: 253 (a CRD name) - 1 ('-') - 5 (hash). With the
# ShortWorkloadNames feature gate the total is 63 instead.
WORKLOAD_NAME_MAX_LENGTH = 253
SHORT_WORKLOAD_NAME_MAX_LENGTH = 63
_HASH_LENGTH = 5
_QUEUE_PATH = f"metadata.labels[{kq.QUEUE_NAME_LABEL}]"


def queue_name(job: t.TrainJob) -> str:
    """The LocalQueue a TrainJob is sent to; ``""`` when it is not Kueue-managed."""
    return (job.metadata.labels or {}).get(kq.QUEUE_NAME_LABEL, "")


def is_managed(job: t.TrainJob) -> bool:
    """Kueue manages jobs with a non-empty queue label (manageJobsWithoutQueueName is not modelled)."""
    return queue_name(job) != ""


def workload_name(job_name: str, job_uid: str, *, max_length: int = WORKLOAD_NAME_MAX_LENGTH) -> str:
    """Kueue ``GetWorkloadNameForOwnerWithGVK`` for a TrainJob: ``trainjob-<name>-<sha1[:5]>``.

    The hash covers ``Kind\\nGroup\\nname\\nuid`` (kueue ``jobframework/workload_names.go`` ``getHash``); the
    prefix is truncated so the whole name fits ``max_length``.
    """
    digest = hashlib.sha1("\n".join([t.TRAINJOB_KIND, t.GROUP, job_name, job_uid]).encode()).hexdigest()
    prefix = f"{t.TRAINJOB_KIND.lower()}-{job_name}"[: max_length - 1 - _HASH_LENGTH]
    return f"{prefix}-{digest[:_HASH_LENGTH]}"


def _pod_set(rjob: ReplicatedJob) -> kw.PodSet:
    """One Kueue PodSet per replicated job: count = replicas x min(parallelism, completions)."""
    spec = rjob.template.spec
    parallelism = 1 if spec.parallelism is None else spec.parallelism
    completions = parallelism if spec.completions is None else spec.completions
    count = (1 if rjob.replicas is None else rjob.replicas) * min(parallelism, completions)
    template = PodTemplateSpec.model_validate(spec.template.to_dict())
    return kw.PodSet(name=rjob.name.lower(), count=count, template=template)


def _priority_value(reader: Reader, ref: kw.PriorityClassRef) -> int | None:
    api_version = kq.API_VERSION if ref.group == kq.GROUP else "scheduling.k8s.io/v1"
    found = reader.get(api_version, ref.kind, "", ref.name)
    value = found.get("value") if found else None
    return value if isinstance(value, int) else None


def _priority_class_ref(job: t.TrainJob, jobset: JobSet) -> kw.PriorityClassRef | None:
    """The label's WorkloadPriorityClass, else the first pod template's PriorityClass (kueue.md §1)."""
    if wpc := (job.metadata.labels or {}).get(kq.PRIORITY_CLASS_LABEL):
        return kw.PriorityClassRef(group=kq.GROUP, kind=kw.WORKLOAD_PRIORITY_CLASS_REF_KIND, name=wpc)
    names = (r.template.spec.template.spec.priority_class_name for r in jobset.spec.replicated_jobs)
    if pod_class := next((n for n in names if n), None):
        group, kind = kw.POD_PRIORITY_CLASS_GROUP, kw.POD_PRIORITY_CLASS_KIND
        return kw.PriorityClassRef(group=group, kind=kind, name=pod_class)
    return None


def _workload_meta(job: t.TrainJob) -> ObjectMeta:
    """Kueue ``jobframework.NewWorkload`` plus the controller reference and the job-uid label."""
    uid = job.metadata.uid or ""
    meta = ObjectMeta(
        name=workload_name(job.metadata.name or "", uid),
        namespace=job.metadata.namespace,
        finalizers=[kq.RESOURCE_IN_USE_FINALIZER],
        owner_references=[owner_reference(job)],
    )
    if uid:
        meta.labels = {kq.JOB_UID_LABEL: uid}
    return meta


def workload_for(
    info: RuntimeInfo, job: t.TrainJob, clock: Clock, reader: Reader | None = None
) -> kw.Workload:
    """The Workload Kueue creates for ``job`` (v1beta2 shape), from the JobSet Trainer would build.

    Kueue runs Trainer's framework in-process; gangplane reuses its own JobSet builder on the enforced
    ``info`` for the same result. Call after the enforce and pre-build phases. ``reader`` resolves the
    priority value from the named (Workload)PriorityClass; without it, or when the class is missing,
    ``spec.priority`` is left unset.
    """
    reader = reader if reader is not None else StaticReader()
    jobset = JobSetPlugin(Handle(clock)).desired_jobset(info, job)
    spec = kw.WorkloadSpec(
        pod_sets=[_pod_set(rjob) for rjob in jobset.spec.replicated_jobs],
        queue_name=queue_name(job) or None,
    )
    if (ref := _priority_class_ref(job, jobset)) is not None:
        spec.priority_class_ref = ref
        if (value := _priority_value(reader, ref)) is not None:
            spec.priority = value
    else:
        spec.priority = 0
    return kw.Workload(metadata=_workload_meta(job), spec=spec)


# ---------------------------------------------------------------- admission


@dataclass(frozen=True)
class PodSetAdmission:
    """What Kueue injects into one admitted PodSet (kueue ``podset.PodSetInfo``).

    ``tolerations`` is the full list to write: Trainer's list is atomic, so a patch replaces the runtime's
    tolerations, and Kueue writes the template's own tolerations merged with the flavor's (kueue.md §10).
    """

    name: str
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


def _replicated_job_patch(admission: PodSetAdmission) -> t.ReplicatedJobPatch:
    labels = {**admission.labels, kq.PODSET_LABEL: admission.name}
    metadata = t.PatchMetadata(labels=labels, annotations=dict(admission.annotations) or None)
    spec = t.PodSpecPatch(
        node_selector=dict(admission.node_selector) or None,
        tolerations=list(admission.tolerations) or None,
    )
    pod = t.PodTemplatePatch(metadata=metadata, spec=spec)
    return t.ReplicatedJobPatch(
        name=admission.name, template=t.JobTemplatePatch(spec=t.JobSpecPatch(template=pod))
    )


def kueue_patch(job: t.TrainJob) -> t.RuntimePatch | None:
    return next((p for p in job.spec.runtime_patches or [] if p.manager == kq.MANAGER), None)


def admission_patch(job: t.TrainJob, admissions: Iterable[PodSetAdmission]) -> t.RuntimePatch:
    """Kueue's patch entry after admission: one replicated-job patch per admitted PodSet, in the given order.

    Keeps what the existing Kueue entry sets at JobSet level; ``time`` is left to Trainer's webhook, which
    re-stamps a changed entry (trainer-api.md §4).
    """
    existing = kueue_patch(job)
    old = existing.training_runtime_spec if existing else None
    metadata = old.template.metadata if old and old.template else None
    spec = t.JobSetSpecPatch(replicated_jobs=[_replicated_job_patch(a) for a in admissions])
    template = t.JobSetTemplatePatch(metadata=metadata, spec=spec)
    return t.RuntimePatch(
        manager=kq.MANAGER, training_runtime_spec=t.TrainingRuntimeSpecPatch(template=template)
    )


# ---------------------------------------------------------------- the plugin


def _is_create(job: t.TrainJob) -> bool:
    """A create request never carries a resourceVersion (the API server rejects one); an update does."""
    return job.metadata.resource_version is None


class KueuePlugin:
    name: ClassVar[str] = "Kueue"

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def default(self, info: RuntimeInfo, job: t.TrainJob) -> None:
        # Kueue's TrainJob webhook is registered for create only.
        if not is_managed(job) or not _is_create(job):
            return
        job.spec.suspend = True
        if kueue_patch(job) is None:
            job.spec.runtime_patches = [*(job.spec.runtime_patches or []), t.RuntimePatch(manager=kq.MANAGER)]

    def validate(
        self, info: RuntimeInfo, old: t.TrainJob | None, new: t.TrainJob, reader: Reader
    ) -> ValidationResult:
        name = queue_name(new)
        return ValidationResult(errors=dns1123_subdomain(_QUEUE_PATH, name) if name else [])

    def build(self, info: RuntimeInfo, job: t.TrainJob, reader: Reader) -> list[Desired]:
        if not is_managed(job):
            return []
        return [Desired(workload_for(info, job, self.handle.clock, reader), applied_by=AppliedBy.KUEUE)]
