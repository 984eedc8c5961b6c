"""Coscheduling: the scheduler-plugins PodGroup and the pod label that joins it (upstream ``plugins/coscheduling``).

Also the gang half of the Slurm Bridge integration, whose scheduler reads the same PodGroup.
"""

from __future__ import annotations

from typing import ClassVar

from gangplane.api import trainer as t
from gangplane.api.meta import ObjectMeta
from gangplane.api.scheduling import coscheduling as cs
from gangplane.runtime.info import RuntimeInfo
from gangplane.runtime.plugins import gang, slurm
from gangplane.runtime.plugins.common import owner_reference
from gangplane.runtime.points import Desired, Handle, WatchSource
from gangplane.runtime.reader import Reader

# CRD default of podGroupPolicy.coscheduling.scheduleTimeoutSeconds; upstream dereferences it unchecked.
DEFAULT_SCHEDULE_TIMEOUT_SECONDS = 60


def keep_existing_pod_group(reader: Reader, api_version: str, job: t.TrainJob) -> bool:
    """Upstream rule: a PodGroup is never updated once the TrainJob runs; it is re-applied while suspended."""
    found = reader.get(api_version, "PodGroup", job.metadata.namespace or "", job.metadata.name or "")
    return found is not None and not job.spec.suspend


def pod_group_meta(job: t.TrainJob) -> ObjectMeta:
    """Same name and namespace as the TrainJob, controller-owned, no labels."""
    return ObjectMeta(
        name=job.metadata.name, namespace=job.metadata.namespace, owner_references=[owner_reference(job)]
    )


class CoschedulingPlugin:
    name: ClassVar[str] = "CoScheduling"

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    @staticmethod
    def _policy(info: RuntimeInfo) -> t.CoschedulingPodGroupPolicySource | None:
        return info.pod_group_policy.coscheduling if info.pod_group_policy else None

    def watches(self) -> list[WatchSource]:
        return [WatchSource(cs.API_VERSION, cs.POD_GROUP_KIND)]

    def enforce_pod_group_policy(self, info: RuntimeInfo, job: t.TrainJob) -> None:
        if self._policy(info) is None:
            return
        gang.exclude_sequential(info, "coscheduling")
        info.scheduler.pod_labels[cs.POD_GROUP_LABEL] = job.metadata.name or ""

    def build(self, info: RuntimeInfo, job: t.TrainJob, reader: Reader) -> list[Desired]:
        policy = self._policy(info)
        if policy is None or keep_existing_pod_group(reader, cs.API_VERSION, job):
            return []
        members = gang.gang_pod_sets(info)
        timeout = policy.schedule_timeout_seconds
        spec = cs.PodGroupSpec(
            min_member=gang.min_member(members),
            min_resources=gang.min_resources(members),
            schedule_timeout_seconds=DEFAULT_SCHEDULE_TIMEOUT_SECONDS if timeout is None else timeout,
        )
        metadata = pod_group_meta(job)
        if annotations := slurm.pod_group_annotations(info):
            metadata.annotations = annotations  # slurm-bridge reads its job options from the PodGroup only
        return [Desired(cs.PodGroup(metadata=metadata, spec=spec))]
