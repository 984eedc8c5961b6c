"""Dominant Resource Fairness across queues (Ghodsi et al., NSDI'11), non-preemptive, as Mesos' allocator.

A queue's dominant share is the largest of its running jobs' shares of the cluster's GPUs, CPU and memory,
divided by its ``weight``. Each cycle repeatedly offers the cluster to the queue with the smallest dominant
share whose first waiting job (priority, then arrival) fits now, via ``schedulers.core.place_gang``; a queue
whose first job does not fit is passed over for the rest of the cycle (no reservation). Jobs are never
preempted. CPU and memory enter only the shares: the cluster model places GPUs (see docs/simulator.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gangplane.simulator.cluster import ClusterSpec
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.placement import GangPlacer
from gangplane.simulator.policies.base import Decision, PolicyOptions, Reject, Start
from gangplane.simulator.policies.fifo import NEVER_FITS
from gangplane.simulator.policies.queue import WaitQueue


def demand(job: JobSpec) -> np.ndarray:
    """GPUs, CPU and memory the whole gang holds."""
    return job.members * np.array([job.gpus_per_member, job.cpu_per_member, job.memory_per_member])


class DominantResourceFairness:
    name = "drf"

    def __init__(self, cluster: ClusterSpec, options: PolicyOptions) -> None:
        self.placer = GangPlacer(cluster, options.strategy)
        totals = [sum(getattr(n, r) for n in cluster.nodes) for r in ("gpus", "cpu", "memory")]
        self.capacity = np.array([t if t > 0 else np.inf for t in totals], dtype=np.float64)
        self.weights = {q.name: q.weight for q in cluster.queues}
        self.queues: dict[str, WaitQueue] = {}
        self.usage: dict[str, np.ndarray] = {}
        self._running: dict[int, JobSpec] = {}

    def submit(self, job: JobSpec, now: float) -> None:
        self.queues.setdefault(job.queue, WaitQueue()).push(job)
        self.usage.setdefault(job.queue, np.zeros(3))

    def release(self, job_id: int, now: float) -> None:
        self.placer.release(job_id)
        job = self._running.pop(job_id)
        self.usage[job.queue] -= demand(job)

    def next_cycle(self, now: float) -> float | None:
        return None

    def share(self, queue: str) -> float:
        return float(np.max(self.usage[queue] / self.capacity)) / self.weights.get(queue, 1.0)

    def schedule(self, now: float) -> Sequence[Decision]:
        decisions: list[Decision] = []
        passed: set[str] = set()
        while candidates := [q for q, line in self.queues.items() if len(line) and q not in passed]:
            queue = min(candidates, key=lambda q: (self.share(q), q))
            job = self.queues[queue].head()
            assert job is not None
            nodes = self.placer.place(job) if self.placer.might_fit(job) else None
            if nodes is None:
                if not self._running:
                    self.queues[queue].remove(job)
                    decisions.append(Reject(job.id, NEVER_FITS))
                else:
                    passed.add(queue)
                continue
            self.queues[queue].remove(job)
            self._running[job.id] = job
            self.usage[queue] += demand(job)
            decisions.append(Start(job.id, nodes))
        return decisions


__all__ = ["DominantResourceFairness", "demand"]
