"""Volcano: the Volcano PodGroup and the pod annotation that joins it (upstream ``plugins/volcano``)."""

from __future__ import annotations

from typing import ClassVar

from gangplane.api import trainer as t
from gangplane.api.scheduling import volcano as vc
from gangplane.errors import CauseType, FieldError
from gangplane.runtime.info import RuntimeInfo
from gangplane.runtime.plugins import gang
from gangplane.runtime.plugins.coscheduling import keep_existing_pod_group, pod_group_meta
from gangplane.runtime.points import Desired, Handle, ValidationResult, WatchSource
from gangplane.runtime.reader import Reader

# Built-in priority classes; upstream's validator stops checking at the first one it meets (a defect we do
# not copy: every other pod template is still checked).
SYSTEM_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
_QUEUE_PATH = "spec.runtimePatches"


def _last_priority_class(info: RuntimeInfo) -> str | None:
    """The ``priorityClassName`` of the last replicated job whose pod template sets one (upstream rule)."""
    names = [
        p.template.spec.priority_class_name for p in info.pod_sets if p.template.spec.priority_class_name
    ]
    return names[-1] if names else None


class VolcanoPlugin:
    name: ClassVar[str] = "Volcano"

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    @staticmethod
    def _policy(info: RuntimeInfo) -> t.VolcanoPodGroupPolicySource | None:
        return info.pod_group_policy.volcano if info.pod_group_policy else None

    def watches(self) -> list[WatchSource]:
        return [WatchSource(vc.API_VERSION, vc.POD_GROUP_KIND)]

    def validate(
        self, info: RuntimeInfo, old: t.TrainJob | None, new: t.TrainJob, reader: Reader
    ) -> ValidationResult:
        if self._policy(info) is None:
            return ValidationResult()
        errors: list[FieldError] = []
        if info.annotations.get(vc.QUEUE_NAME_ANNOTATION) == "":
            errors.append(FieldError(_QUEUE_PATH, CauseType.INVALID, "Volcano queue name must not be empty"))
        for pod_set in info.pod_sets:
            name = pod_set.template.spec.priority_class_name
            if name and name not in SYSTEM_PRIORITY_CLASSES and not _priority_class_exists(reader, name):
                detail = f"PriorityClass {name!r} of replicated job {pod_set.name!r} does not exist"
                errors.append(FieldError("spec.runtimeRef", CauseType.NOT_FOUND, detail, name))
        return ValidationResult(errors=errors)

    def enforce_pod_group_policy(self, info: RuntimeInfo, job: t.TrainJob) -> None:
        if self._policy(info) is None:
            return
        gang.exclude_sequential(info, "volcano")
        info.scheduler.pod_annotations[vc.GROUP_NAME_ANNOTATION] = job.metadata.name or ""

    def build(self, info: RuntimeInfo, job: t.TrainJob, reader: Reader) -> list[Desired]:
        policy = self._policy(info)
        if policy is None or keep_existing_pod_group(reader, vc.API_VERSION, job):
            return []
        members = gang.gang_pod_sets(info)
        spec = vc.PodGroupSpec(min_member=gang.min_member(members), min_resources=gang.min_resources(members))
        if (queue := info.annotations.get(vc.QUEUE_NAME_ANNOTATION)) is not None:
            spec.queue = queue
        if (priority_class := _last_priority_class(info)) is not None:
            spec.priority_class_name = priority_class
        if policy.network_topology is not None:
            spec.network_topology = _network_topology(policy.network_topology)
        return [Desired(vc.PodGroup(metadata=pod_group_meta(job), spec=spec))]


def _network_topology(given: t.NetworkTopology) -> vc.NetworkTopology:
    """CRD defaults (mode hard, highestTierAllowed 1) applied here too, so a nil never reaches the PodGroup."""
    return vc.NetworkTopology(
        mode=given.mode or "hard",
        highest_tier_allowed=1 if given.highest_tier_allowed is None else given.highest_tier_allowed,
    )


def _priority_class_exists(reader: Reader, name: str) -> bool:
    return reader.get("scheduling.k8s.io/v1", "PriorityClass", "", name) is not None
