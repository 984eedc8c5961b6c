"""KAI Scheduler: queue routing for TrainJobs, and the PodGroup KAI's pod-grouper derives from their JobSet.

Trainer has no KAI plugin (trainer-api.md §12): a runtime opts in with ``schedulerName: kai-scheduler`` on its
pod templates and the TrainJob carries the ``kai.scheduler/queue`` label. KAI's pod-grouper then skips the
TrainJob (skip-top-owner grouper), merges its labels and annotations into the JobSet's, and runs the JobSet
grouper (kai.md §4.3; KAI ``pkg/podgrouper/podgrouper/plugins/{skiptopowner,jobset,defaultgrouper}``). This
plugin renders that PodGroup with ``applied_by=KAI_PODGROUPER``: on a real cluster KAI creates it, never
gangplane. It is rendered only once the JobSet exists, because the JobSet UID is part of its name.

gangplane's gang rule (``gang.py``) cannot remove pods from KAI's PodGroup; it is expressed through the one
knob the JobSet grouper reads: ``kai.scheduler/batch-min-member: "1"`` on the JobSet, so the root needs one
satisfied replicated job instead of all of them (the mitigation kai.md §4.3 recommends).
"""

from __future__ import annotations

from typing import ClassVar

from gangplane.api import trainer as t
from gangplane.api.core import PodTemplateSpec
from gangplane.api.jobset import API_VERSION as JOBSET_API_VERSION
from gangplane.api.jobset import JobSet
from gangplane.api.meta import ObjectMeta, OwnerReference
from gangplane.api.scheduling import kai
from gangplane.errors import CauseType, FieldError
from gangplane.runtime.info import RuntimeInfo
from gangplane.runtime.plugins import gang, kai_grouper
from gangplane.runtime.plugins.jobset import JobSetPlugin
from gangplane.runtime.points import AppliedBy, Desired, Handle, ValidationResult
from gangplane.runtime.reader import Reader

_QUEUE_PATH = f"metadata.labels[{kai.QUEUE_LABEL}]"
_MIN_MEMBER_PATH = f"metadata.annotations[{kai.BATCH_MIN_MEMBER_ANNOTATION}]"


def uses_kai(info: RuntimeInfo) -> bool:
    return info.scheduler_name() == kai.SCHEDULER_NAME


# ---------------------------------------------------------------- validation


def _gang_policy_errors(info: RuntimeInfo, job: t.TrainJob) -> list[FieldError]:
    policy = info.pod_group_policy
    if policy is None or (policy.coscheduling is None and policy.volcano is None):
        return []
    detail = (
        f"runtime {job.spec.runtime_ref.name!r} schedules with {kai.SCHEDULER_NAME}, whose pod-grouper "
        "builds the gang; it must not also set a Trainer podGroupPolicy (a second PodGroup that KAI ignores)"
    )
    return [FieldError("spec.podGroupPolicy", CauseType.INVALID, detail)]


def _queue_problems(info: RuntimeInfo, job: t.TrainJob) -> tuple[list[FieldError], list[str]]:
    labels = {**info.labels, **(job.metadata.labels or {})}
    queue = labels.get(kai.QUEUE_LABEL)
    if queue == "":
        return [FieldError(_QUEUE_PATH, CauseType.INVALID, "KAI queue name must not be empty", queue)], []
    if queue is None and kai.PROJECT_LABEL not in labels:
        warning = (
            f"TrainJob has no {kai.QUEUE_LABEL} label: KAI schedules it in queue {kai.DEFAULT_QUEUE!r} "
            "(kai.md §4.3); label the TrainJob with a leaf queue"
        )
        return [], [warning]
    return [], []


def _min_member_errors(job: t.TrainJob) -> list[FieldError]:
    given = (job.metadata.annotations or {}).get(kai.BATCH_MIN_MEMBER_ANNOTATION)
    if given is None or kai_grouper.positive_int(given) is not None:
        return []
    return [FieldError(_MIN_MEMBER_PATH, CauseType.INVALID, "must be a base-10 integer >= 1", given)]


# ---------------------------------------------------------------- the derived PodGroup


def _merged(job_values: dict[str, str] | None, jobset_values: dict[str, str] | None) -> dict[str, str]:
    """Skip-top-owner rule: TrainJob labels/annotations fill in only keys the JobSet does not have."""
    return {**(job_values or {}), **(jobset_values or {})}


def _pod_template(info: RuntimeInfo, jobset: JobSet) -> PodTemplateSpec:
    """The pod the grouper sees; all pods of one JobSet share the PodGroup, the trainer's is taken."""
    trainer = info.trainer_pod_set()
    rjobs = jobset.spec.replicated_jobs
    chosen = next((r for r in rjobs if trainer and r.name == trainer.name), rjobs[0])
    return chosen.template.spec.template


def pod_group_for(info: RuntimeInfo, job: t.TrainJob, jobset: JobSet, reader: Reader) -> kai.PodGroup | None:
    """The PodGroup KAI (>= v0.16) derives from ``jobset`` (live UID set); ``None`` where KAI would fail.
    The rule is ``kai_grouper``'s, the one the embedded KAI scheduler applies to pods without a PodGroup."""
    labels = _merged(job.metadata.labels, jobset.metadata.labels)
    annotations = _merged(job.metadata.annotations, jobset.metadata.annotations)
    spec = kai_grouper.pod_group_spec(
        labels,
        annotations,
        jobset.spec.to_dict(),
        _pod_template(info, jobset).to_dict(),
        lambda name: reader.get("scheduling.k8s.io/v1", "PriorityClass", "", name) is not None,
    )
    if spec is None:
        return None
    return kai.PodGroup(
        metadata=_pod_group_meta(jobset, labels, annotations), spec=kai.PodGroupSpec.model_validate(spec)
    )


def _pod_group_meta(jobset: JobSet, labels: dict[str, str], annotations: dict[str, str]) -> ObjectMeta:
    """``pg-<jobset>-<jobsetUID>``, owned (not controlled) by the JobSet, with the merged owner metadata."""
    name, uid = jobset.metadata.name or "", jobset.metadata.uid or ""
    owner = OwnerReference(api_version=JOBSET_API_VERSION, kind="JobSet", name=name, uid=uid)
    meta = ObjectMeta(
        name=kai_grouper.pod_group_name(name, uid),
        namespace=jobset.metadata.namespace,
        owner_references=[owner],
    )
    if labels:
        meta.labels = labels
    if annotations:
        meta.annotations = annotations
    return meta


# ---------------------------------------------------------------- the plugin


class KAIPlugin:
    name: ClassVar[str] = "KAI"

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def validate(
        self, info: RuntimeInfo, old: t.TrainJob | None, new: t.TrainJob, reader: Reader
    ) -> ValidationResult:
        if not uses_kai(info):
            return ValidationResult()
        queue_errors, warnings = _queue_problems(info, new)
        errors = [*_gang_policy_errors(info, new), *queue_errors, *_min_member_errors(new)]
        return ValidationResult(errors=errors, warnings=warnings)

    def enforce_pod_group_policy(self, info: RuntimeInfo, job: t.TrainJob) -> None:
        if not uses_kai(info):
            return
        gang.exclude_sequential(info, "kai")
        if queue := (job.metadata.labels or {}).get(kai.QUEUE_LABEL):
            info.labels[kai.QUEUE_LABEL] = queue
            info.scheduler.pod_labels[kai.QUEUE_LABEL] = queue
            _label_excluded(info, queue)
        if info.scheduler.excluded_pod_sets:
            _relax_root(info, job)

    def build(self, info: RuntimeInfo, job: t.TrainJob, reader: Reader) -> list[Desired]:
        if not uses_kai(info):
            return []
        live = reader.get(JOBSET_API_VERSION, "JobSet", job.metadata.namespace or "", job.metadata.name or "")
        if live is None or not (live.get("metadata") or {}).get("uid"):
            return []
        jobset = JobSetPlugin(self.handle).desired_jobset(info, job)
        jobset.metadata.uid = live["metadata"]["uid"]
        group = pod_group_for(info, job, jobset, reader)
        return [] if group is None else [Desired(group, applied_by=AppliedBy.KAI_PODGROUPER)]


def _label_excluded(info: RuntimeInfo, queue: str) -> None:
    """The JobSet builder stamps hints only on gang members; the queue label belongs on every pod."""
    for pod_set in info.pod_sets:
        if pod_set.name in info.scheduler.excluded_pod_sets:
            meta = pod_set.template.metadata or ObjectMeta()
            meta.labels = {**(meta.labels or {}), kai.QUEUE_LABEL: queue}
            pod_set.template.metadata = meta


def _relax_root(info: RuntimeInfo, job: t.TrainJob) -> None:
    """Sequential pod sets: let the root gang form from one replicated job, unless the user chose a value."""
    if kai.BATCH_MIN_MEMBER_ANNOTATION in {**info.annotations, **(job.metadata.annotations or {})}:
        return
    info.annotations[kai.BATCH_MIN_MEMBER_ANNOTATION] = "1"
    if len(gang.gang_pod_sets(info)) > 1:
        names = ", ".join(p.name for p in gang.gang_pod_sets(info))
        info.warnings.append(
            f"kai: {kai.BATCH_MIN_MEMBER_ANNOTATION}=1 lets each of the replicated jobs {names} start as its "
            "own gang; KAI cannot gang them together while sequential replicated jobs share its PodGroup"
        )
