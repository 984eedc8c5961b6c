"""Coscheduling: the default scheduler with the Coscheduling plugin (``schedulers.default.DefaultScheduler``),
driven cycle by cycle exactly as the loop shell drives it.

Every waiting job is one PodGroup (``minMember`` = members, ``minResources`` = its GPUs) whose members carry
the PodGroup label; each cycle is one pass of the scheduler loop (``schedulers.loop.run_pass`` via
``policies.shell.one_pass``) over the policy's snapshot (running jobs counted), and the returned bindings
become the jobs' starts.
Queue order, gang PreFilter, all-or-nothing placement (LeastAllocated spread, kube-scheduler's default) and
the back-off of failed gangs are the scheduler's; a failed gang moves behind the others, so this policy
behaves like greedy backfill without reservations.

Each pass is handed only the gangs that might fit: per gang shape, as many as the free GPUs could hold node
by node (``Coscheduling._split``). Free capacity only shrinks during a pass (gangs never preempt), so every
other gang would fail its turn; what that turn changes is replayed here instead (``_note_failures``): a gang asking
for more GPUs than are free in all at its turn is turned away by PreFilter (``minResources``) with no effect
but a "why pending" reason, any other fails placement and is recorded as failed now, which moves it behind
the others in QueueSort (``GroupBackoff``). The decisions are exactly those of a pass over every gang
(tested), at a cost that follows the gangs that fit instead of the waiting line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from gangplane.api.scheduling import coscheduling as cs
from gangplane.clock import rfc3339
from gangplane.schedulers import coscheduling as cos
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.resources import GPU
from gangplane.schedulers.core.scoring import Strategy
from gangplane.schedulers.default import DefaultScheduler
from gangplane.simulator.cluster import ClusterSpec
from gangplane.simulator.explain import ExplainLog, note_pass
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.placement import NAMESPACE, GangPlacer
from gangplane.simulator.policies.base import Decision, PolicyOptions, Preempt, Start
from gangplane.simulator.policies.shell import Objects, one_pass
from gangplane.simulator.policies.waiting import WaitingBySize
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
        self._by_size = WaitingBySize()
        self._specs: dict[int, cos.GroupSpec] = {}
        self.explain_log = None if options.explain is None else ExplainLog(options.explain)
        self._running: dict[int, JobSpec] = {}

    def submit(self, job: JobSpec, now: float) -> None:
        group = pod_group(job)
        self._waiting[job.id] = (job, group, member_pods(job))
        self._specs[job.id] = cos.GroupSpec.of(group, self.scheduler.args)
        self._by_size.add(job)

    def release(self, job_id: int, now: float) -> None:
        self.placer.release(job_id)
        del self._running[job_id]
        del self._specs[job_id]

    def schedule(self, now: float) -> Sequence[Decision]:
        ranked, handed, free = self._split(now)  # ranks taken before the pass moves anyone
        bound: dict[int, dict[str, str]] = {}
        decisions: list[Decision] = []
        if handed:
            result = one_pass(self.placer, self.scheduler, now, *self._view(handed))
            note_pass(self.explain_log, now, result.pending)
            for pod_key in sorted({e.pod_key.rsplit("-", 1)[0] for e in result.evictions}):
                self._evict(int(pod_key.rsplit("/j", 1)[1]), decisions)
            for binding in result.bindings:
                job_id = int(binding.pod_key.rsplit("/j", 1)[1].rsplit("-", 1)[0])
                bound.setdefault(job_id, {})[binding.pod_key] = binding.node
        self._note_failures(ranked, {id(job) for job in handed}, bound, free, now)
        for job_id, nodes in bound.items():
            job = self._waiting.pop(job_id)[0]
            self._by_size.remove(job)
            self._running[job_id] = job
            decisions.append(Start(job_id, self.placer.bind(job, nodes)))
        return decisions

    def next_cycle(self, now: float) -> float | None:
        return None

    def _split(self, now: float) -> tuple[list[JobSpec], list[JobSpec], int]:
        """The waiting gangs PreFilter could pass, in queue order; those of them worth handing to the pass;
        the free GPUs in all. Of each gang shape only the first ``k`` not backed off are handed, ``k`` being
        how many such gangs the free GPUs could hold node by node: each placed gang of a shape takes exactly
        ``members`` of those slots and other gangs only take more, and placement of one shape succeeds
        exactly while enough slots are left, so every later gang of the shape would fail its turn."""
        free = self.placer.free_gpus()
        total = int(np.maximum(free, 0).sum())
        ranked = sorted(self._by_size.within(total), key=self._rank)
        slots: dict[tuple[int, int], int] = {}
        handed: list[JobSpec] = []
        backoff = self.scheduler.backoff
        for job in ranked:
            if backoff.backed_off(self._specs[job.id].key, now):
                continue  # skipped with a Wait reason either way
            if job.gpus_per_member == 0:
                handed.append(job)
                continue
            shape = (job.members, job.gpus_per_member)
            if shape not in slots:
                slots[shape] = int((np.maximum(free, 0) // job.gpus_per_member).sum())
            if slots[shape] >= job.members:
                slots[shape] -= job.members
                handed.append(job)
        return ranked, self._with_explained(handed), total

    def _with_explained(self, handed: list[JobSpec]) -> list[JobSpec]:
        """``handed`` plus the explained job while it waits: its turn then fails inside the pass with the
        scheduler's own reason instead of being replayed, which changes nothing else."""
        log = self.explain_log
        entry = self._waiting.get(log.job_id) if log is not None else None
        if entry is not None and entry[0] not in handed:
            handed.append(entry[0])
        return handed

    def _rank(self, job: JobSpec) -> tuple[int, float, str]:
        """The gang's place in the scheduler's queue: priority, QueueSort's time (last failure or creation),
        key — the order ``DefaultScheduler`` sorts its units in."""
        spec = self._specs[job.id]
        return -job.priority, self.scheduler.backoff.queue_time(spec), spec.key

    def _note_failures(
        self, ranked: Sequence[JobSpec], handed: set[int], bound: Mapping[int, object], free: int, now: float
    ) -> None:
        """What the pass would have done to each gang it was not handed, at its turn in queue order
        (``ranked``): GPUs of the gangs bound before it are gone; if the rest still cover its
        ``minResources``, PreFilter passes and placement fails, so the failure is recorded (unless the gang is
        backed off and skipped)."""
        backoff, seconds = self.scheduler.backoff, self.scheduler.args.pod_group_backoff_seconds
        left = free
        for job in ranked:
            if job.id in bound:
                left -= job.gpus
            elif id(job) not in handed and job.gpus <= left:
                key = self._specs[job.id].key
                if not backoff.backed_off(key, now):
                    backoff.record_failure(key, now, seconds, complete=True)

    def _view(self, handed: Sequence[JobSpec]) -> tuple[list[PodInfo], Objects]:
        """The pending pods, PodGroups and member pods of ``handed``."""
        entries = [self._waiting[job.id] for job in handed]
        pending = [pod for job, _, _ in entries for pod in self.placer.pods(job)]
        groups = [group for _, group, _ in entries]
        pods = [pod for _, _, members in entries for pod in members]
        return pending, {COSCHEDULING_PODGROUPS: groups, PODS: pods}

    def _evict(self, job_id: int, decisions: list[Decision]) -> None:
        """A preempted member stops its whole job, which waits again (rigid gangs restart together)."""
        job = self._running.pop(job_id, None)
        if job is not None:
            self.placer.release(job_id)
            self.submit(job, job.arrival)
            decisions.append(Preempt(job_id, "preempted by the default scheduler"))


__all__ = ["Coscheduling", "member_pods", "pod_group"]
