"""Strict FIFO: start jobs in queue order until the head does not fit; nothing passes a blocked head.

This is head-of-line blocking as in Kueue's StrictFIFO queueing strategy and Slurm without backfill. The
head is placed by ``schedulers.core.place_gang`` (bin-pack). A head that does not fit an otherwise empty
cluster never will, and is rejected so that it does not block the line forever.
"""

from __future__ import annotations

from collections.abc import Sequence

from gangplane.simulator.cluster import ClusterSpec
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.placement import GangPlacer
from gangplane.simulator.policies.base import Decision, PolicyOptions, Reject, Start
from gangplane.simulator.policies.queue import WaitQueue

NEVER_FITS = "the gang does not fit the empty cluster"


class StrictFifo:
    name = "fifo"

    def __init__(self, cluster: ClusterSpec, options: PolicyOptions) -> None:
        self.placer = GangPlacer(cluster, options.strategy)
        self.queue = WaitQueue()

    def submit(self, job: JobSpec, now: float) -> None:
        self.queue.push(job)

    def release(self, job_id: int, now: float) -> None:
        self.placer.release(job_id)

    def schedule(self, now: float) -> Sequence[Decision]:
        decisions: list[Decision] = []
        start_heads(self.placer, self.queue, decisions)
        return decisions

    def next_cycle(self, now: float) -> float | None:
        return None


def start_heads(placer: GangPlacer, queue: WaitQueue, decisions: list[Decision]) -> JobSpec | None:
    """Start heads while they fit; reject heads that fit nowhere. The blocked head, or ``None``."""
    while (head := queue.head()) is not None:
        nodes = placer.place(head) if placer.might_fit(head) else None
        if nodes is not None:
            queue.remove(head)
            decisions.append(Start(head.id, nodes))
        elif placer.running == 0:
            queue.remove(head)
            decisions.append(Reject(head.id, NEVER_FITS))
        else:
            return head
    return None


__all__ = ["NEVER_FITS", "StrictFifo", "start_heads"]
