"""Coscheduling: the default scheduler with the Coscheduling plugin (``schedulers.default.DefaultScheduler``),
driven cycle by cycle exactly as the loop shell drives it.

Every waiting job is one PodGroup (``minMember`` = members, ``minResources`` = its GPUs) whose members carry
the PodGroup label; each cycle is one pass of the scheduler loop (``schedulers.loop.run_pass`` via
``policies.shell.one_pass``) over the policy's snapshot (running jobs counted), and the returned bindings
become the jobs' starts.
Queue order, gang PreFilter, all-or-nothing placement (LeastAllocated spread, kube-scheduler's default) and
the back-off of failed gangs are the scheduler's; a failed gang moves behind the others, so this policy
behaves like greedy backfill without reservations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gangplane.api.scheduling import coscheduling as cs
from gangplane.clock import rfc3339
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.resources import GPU
from gangplane.schedulers.core.scoring import Strategy
from gangplane.schedulers.default import DefaultScheduler
from gangplane.simulator.cluster import ClusterSpec
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.placement import NAMESPACE, GangPlacer
from gangplane.simulator.policies.base import Decision, PolicyOptions, Preempt, Start
from gangplane.simulator.policies.shell import Objects, one_pass
from gangplane.store.catalog import COSCHEDULING_PODGROUPS, PODS

Obj = Mapping[str, Any]


def pod_group(job: JobSpec) -> dict[str, Any]:
    meta = {"name": f"j{job.id}", "namespace": NAMESPACE, "creationTimestamp": rfc3339(job.arrival)}
    spec = {"minMember": job.members, "minResources": {GPU: str(job.gpus)} if job.gpus else {}}
    return {"apiVersion": cs.API_VERSION, "kind": cs.POD_GROUP_KIND, "metadata": meta, "spec": spec}


def member_pods(job: JobSpec) -> list[dict[str, Any]]:
    labels = {cs.POD_GROUP_LABEL: f"j{job.id}"}
    return [
        {"metadata": {"name": f"j{job.id}-{i}", "namespace": NAMESPACE, "labels": labels}, "spec": {}}
        for i in range(job.members)
    ]


class Coscheduling:
    name = "coscheduling"

    def __init__(self, cluster: ClusterSpec, options: PolicyOptions) -> None:
        self.placer = GangPlacer(cluster)
        self.scheduler = DefaultScheduler(strategy=options.strategy_or(Strategy.SPREAD))
        self._waiting: dict[int, tuple[JobSpec, dict[str, Any], list[dict[str, Any]]]] = {}
        self._running: dict[int, JobSpec] = {}

    def submit(self, job: JobSpec, now: float) -> None:
        self._waiting[job.id] = (job, pod_group(job), member_pods(job))

    def release(self, job_id: int, now: float) -> None:
        self.placer.release(job_id)
        del self._running[job_id]

    def schedule(self, now: float) -> Sequence[Decision]:
        if not self._waiting:
            return []
        result = one_pass(self.placer, self.scheduler, now, *self._view())
        decisions: list[Decision] = []
        for pod_key in sorted({e.pod_key.rsplit("-", 1)[0] for e in result.evictions}):
            self._evict(int(pod_key.rsplit("/j", 1)[1]), decisions)
        bound: dict[int, dict[str, str]] = {}
        for binding in result.bindings:
            job_id = int(binding.pod_key.rsplit("/j", 1)[1].rsplit("-", 1)[0])
            bound.setdefault(job_id, {})[binding.pod_key] = binding.node
        for job_id, nodes in bound.items():
            job = self._waiting.pop(job_id)[0]
            self._running[job_id] = job
            decisions.append(Start(job_id, self.placer.bind(job, nodes)))
        return decisions

    def next_cycle(self, now: float) -> float | None:
        return None

    def _view(self) -> tuple[list[PodInfo], Objects]:
        pending = [pod for job, _, _ in self._waiting.values() for pod in self.placer.pods(job)]
        groups = [group for _, group, _ in self._waiting.values()]
        pods = [pod for _, _, members in self._waiting.values() for pod in members]
        return pending, {COSCHEDULING_PODGROUPS: groups, PODS: pods}

    def _evict(self, job_id: int, decisions: list[Decision]) -> None:
        """A preempted member stops its whole job, which waits again (rigid gangs restart together)."""
        job = self._running.pop(job_id, None)
        if job is not None:
            self.placer.release(job_id)
            self.submit(job, job.arrival)
            decisions.append(Preempt(job_id, "preempted by the default scheduler"))


__all__ = ["Coscheduling", "member_pods", "pod_group"]
