"""KAI: the embedded KAI scheduler (``schedulers.kai.KaiScheduler``, hierarchical queues with fair share,
reclaim and preempt) driven through the store-shaped shell (``policies.shell``).

Each simulator queue is a KAI ``Queue`` whose GPU ``quota`` is ``QueueSpec.nominal_gpus`` (unlimited when
unset), ``limit`` is ``nominal + borrowing_limit`` when both are set (else unlimited) and
``overQuotaWeight`` is ``QueueSpec.weight``; CPU and memory are unlimited. Each job is a KAI ``PodGroup``
(``minMember`` = members) whose pods carry the ``pod-group-name`` annotation and the queue label; a job's
priority becomes a PriorityClass ``sim-p<priority>`` of that value (KAI treats priorities below 100 as
preemptible, so default jobs can be reclaimed by a queue below its fair share). Without ``--explain`` the
scheduler builds no why-pending text and writes no PodGroup or Queue status: nothing in a replay reads them.
"""

from __future__ import annotations

from collections.abc import Mapping

from gangplane.api.scheduling import kai
from gangplane.clock import rfc3339
from gangplane.schedulers.core.resources import GPU
from gangplane.schedulers.kai.scheduler import KaiScheduler
from gangplane.schedulers.kai.session import KaiConfig
from gangplane.simulator.cluster import ClusterSpec, QueueSpec
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.placement import NAMESPACE
from gangplane.simulator.policies.base import PolicyOptions
from gangplane.simulator.policies.shell import GroupShell, Obj
from gangplane.store.base import ResourceType
from gangplane.store.catalog import KAI_PODGROUPS, KAI_QUEUES, PRIORITY_CLASSES

UNLIMITED = {"quota": kai.UNLIMITED, "limit": kai.UNLIMITED, "overQuotaWeight": 1}


def queue_object(queue: QueueSpec) -> Obj:
    quota = kai.UNLIMITED if queue.nominal_gpus is None else queue.nominal_gpus
    bounded = queue.nominal_gpus is not None and queue.borrowing_limit is not None
    limit = (queue.nominal_gpus or 0) + (queue.borrowing_limit or 0) if bounded else kai.UNLIMITED
    gpu = {"quota": quota, "limit": limit, "overQuotaWeight": queue.weight}
    meta = {"name": queue.name, "uid": f"queue-{queue.name}", "creationTimestamp": rfc3339(0)}
    spec = {"resources": {"gpu": gpu, "cpu": dict(UNLIMITED), "memory": dict(UNLIMITED)}}
    return {"apiVersion": kai.QUEUE_API_VERSION, "kind": kai.QUEUE_KIND, "metadata": meta, "spec": spec}


def priority_class(priority: int) -> str:
    return f"sim-p{priority}"


def pod_group_object(job: JobSpec) -> Obj:
    meta = {"name": f"j{job.id}", "namespace": NAMESPACE, "uid": f"pg-{job.id}",
            "creationTimestamp": rfc3339(job.arrival)}  # fmt: skip
    spec = {"minMember": job.members, "queue": job.queue, "priorityClassName": priority_class(job.priority)}
    return {
        "apiVersion": kai.POD_GROUP_API_VERSION,
        "kind": kai.POD_GROUP_KIND,
        "metadata": meta,
        "spec": spec,
    }


def pod_object(job: JobSpec, member: int, node: str = "") -> Obj:
    meta = {"name": f"j{job.id}-{member}", "namespace": NAMESPACE, "uid": f"pod-{job.id}-{member}",
            "creationTimestamp": rfc3339(job.arrival), "annotations": {kai.POD_GROUP_ANNOTATION: f"j{job.id}"},
            "labels": {kai.QUEUE_LABEL: job.queue}}  # fmt: skip
    requests = {GPU: str(job.gpus_per_member)} if job.gpus_per_member else {}
    spec: Obj = {"schedulerName": kai.SCHEDULER_NAME, "priority": job.priority,
                 "containers": [{"name": "main", "resources": {"requests": requests}}]}  # fmt: skip
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


class KaiObjects:
    """The ``Integration`` for KAI."""

    group_type: ResourceType = KAI_PODGROUPS
    queue_type: ResourceType = KAI_QUEUES

    def __init__(self, cluster: ClusterSpec, explain: bool = False) -> None:
        self.scheduler = KaiScheduler(KaiConfig(explain=explain))
        self._queues = cluster.queues
        self._priorities: set[int] = set()

    def static_objects(self) -> Mapping[ResourceType, list[Obj]]:
        classes = [{"metadata": {"name": priority_class(p)}, "value": p} for p in sorted(self._priorities)]
        return {PRIORITY_CLASSES: classes}

    def queue_objects(self) -> dict[str, Obj]:
        return {q.name: queue_object(q) for q in self._queues}

    def pod_group(self, job: JobSpec) -> Obj:
        self._priorities.add(job.priority)
        return pod_group_object(job)

    def pod(self, job: JobSpec, member: int, node: str = "") -> Obj:
        return pod_object(job, member, node)


class Kai(GroupShell):
    name = "kai"

    def __init__(self, cluster: ClusterSpec, options: PolicyOptions) -> None:
        super().__init__(cluster, options, KaiObjects(cluster, explain=options.explain is not None))


__all__ = ["Kai", "KaiObjects", "pod_group_object", "pod_object", "queue_object"]
