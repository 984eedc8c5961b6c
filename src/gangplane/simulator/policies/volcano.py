"""Volcano: the embedded Volcano scheduler (``schedulers.volcano.VolcanoScheduler``) over PodGroups in
weighted queues, driven through the store-shaped shell (``policies.shell``).

Each simulator queue is a Volcano ``Queue`` (``weight`` = ``QueueSpec.weight``, ``capability`` =
``nominal_gpus + borrowing_limit`` GPUs when both are set, else unlimited); each job is a ``PodGroup``
(``minMember`` = members) whose pods carry the group annotation and ``schedulerName: volcano``. Volcano runs
every ``schedulePeriod`` (1 s), which is the shell's period. It builds "why pending" text only when a job is
to be explained (``--explain``).
"""

from __future__ import annotations

from collections.abc import Mapping

from gangplane.api.scheduling import volcano as vc
from gangplane.clock import rfc3339
from gangplane.schedulers.core.resources import GPU
from gangplane.schedulers.volcano.config import VolcanoConfig
from gangplane.schedulers.volcano.scheduler import VolcanoScheduler
from gangplane.simulator.cluster import ClusterSpec, QueueSpec
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.placement import NAMESPACE
from gangplane.simulator.policies.base import PolicyOptions
from gangplane.simulator.policies.shell import GroupShell, Obj
from gangplane.store.base import ResourceType
from gangplane.store.catalog import VOLCANO_PODGROUPS, VOLCANO_QUEUES


def queue_object(queue: QueueSpec) -> Obj:
    spec: Obj = {"weight": max(1, round(queue.weight)), "reclaimable": True}
    if queue.nominal_gpus is not None and queue.borrowing_limit is not None:
        spec["capability"] = {GPU: str(queue.nominal_gpus + queue.borrowing_limit)}
    meta = {"name": queue.name, "uid": f"queue-{queue.name}", "creationTimestamp": rfc3339(0)}
    return {"apiVersion": vc.API_VERSION, "kind": vc.QUEUE_KIND, "metadata": meta, "spec": spec, "status": {}}


def pod_group_object(job: JobSpec) -> Obj:
    meta = {"name": f"j{job.id}", "namespace": NAMESPACE, "uid": f"pg-{job.id}",
            "creationTimestamp": rfc3339(job.arrival)}  # fmt: skip
    spec = {
        "minMember": job.members,
        "queue": job.queue,
        "minResources": {GPU: str(job.gpus)} if job.gpus else {},
    }
    return {"apiVersion": vc.API_VERSION, "kind": vc.POD_GROUP_KIND, "metadata": meta, "spec": spec,
            "status": {"phase": vc.PodGroupPhase.PENDING.value}}  # fmt: skip


def pod_object(job: JobSpec, member: int, node: str = "") -> Obj:
    meta = {
        "name": f"j{job.id}-{member}",
        "namespace": NAMESPACE,
        "uid": f"pod-{job.id}-{member}",
        "creationTimestamp": rfc3339(job.arrival),
        "annotations": {vc.GROUP_NAME_ANNOTATION: f"j{job.id}"},
    }
    requests = {GPU: str(job.gpus_per_member)} if job.gpus_per_member else {}
    spec: Obj = {"schedulerName": vc.SCHEDULER_NAME, "priority": job.priority,
                 "containers": [{"name": "main", "resources": {"requests": requests}}]}  # fmt: skip
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


class VolcanoObjects:
    """The ``Integration`` for Volcano."""

    group_type: ResourceType = VOLCANO_PODGROUPS
    queue_type: ResourceType = VOLCANO_QUEUES

    def __init__(self, cluster: ClusterSpec, explain: bool = False) -> None:
        self.scheduler = VolcanoScheduler(VolcanoConfig(explain=explain))
        self._queues = cluster.queues

    def static_objects(self) -> Mapping[ResourceType, list[Obj]]:
        return {}

    def queue_objects(self) -> dict[str, Obj]:
        return {q.name: queue_object(q) for q in self._queues}

    def pod_group(self, job: JobSpec) -> Obj:
        return pod_group_object(job)

    def pod(self, job: JobSpec, member: int, node: str = "") -> Obj:
        return pod_object(job, member, node)


class Volcano(GroupShell):
    name = "volcano"

    def __init__(self, cluster: ClusterSpec, options: PolicyOptions) -> None:
        super().__init__(cluster, options, VolcanoObjects(cluster, explain=options.explain is not None))


__all__ = ["Volcano", "VolcanoObjects", "pod_group_object", "pod_object", "queue_object"]
