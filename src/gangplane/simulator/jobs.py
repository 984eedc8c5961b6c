"""The simulator's unit of work: one rigid gang job, and how a trace's GPU count becomes a gang shape.

A job is rigid: it needs all ``members`` placed at once (all-or-nothing), holds them for ``duration`` seconds
and restarts from scratch when preempted or failed (no checkpoints), as in Tiresias' and Pollux's rigid-job
replays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_QUEUE = "default"


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One gang job as submitted: ``members`` pods, each asking for ``gpus_per_member`` GPUs."""

    id: int
    arrival: float
    members: int
    gpus_per_member: int
    duration: float
    queue: str = DEFAULT_QUEUE
    priority: int = 0
    cpu_per_member: float = 0.0
    memory_per_member: float = 0.0
    name: str = ""

    @property
    def gpus(self) -> int:
        return self.members * self.gpus_per_member

    @property
    def shape(self) -> tuple[int, int]:
        """``(members, gpus_per_member)``: jobs of one shape fit wherever any of them fits."""
        return (self.members, self.gpus_per_member)


def pack_gang(total_gpus: int, gpus_per_node: int) -> tuple[int, int]:
    """Split a trace job's GPU count into ``(members, gpus_per_member)`` for nodes of ``gpus_per_node``.

    A job that fits one node is one member (it must not be spread: Philly ran such jobs on one server).
    A larger job becomes the fewest equal members that each fit a node: 16 on 8-GPU nodes -> 2 x 8,
    12 -> 2 x 6, 24 -> 3 x 8. A prime count larger than a node (e.g. 13) degrades to one GPU per member.
    """
    if total_gpus < 1 or gpus_per_node < 1:
        raise ValueError(f"GPU counts must be positive: job {total_gpus}, node {gpus_per_node}")
    if total_gpus <= gpus_per_node:
        return (1, total_gpus)
    members = math.ceil(total_gpus / gpus_per_node)
    while total_gpus % members:
        members += 1
    return (members, total_gpus // members)


__all__ = ["DEFAULT_QUEUE", "JobSpec", "pack_gang"]
