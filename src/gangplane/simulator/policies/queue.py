"""The waiting line of the queue-order policies, indexed by gang shape.

Order is Kueue's StrictFIFO order: higher priority first, then earlier arrival, then job id. Jobs are kept
in one sorted list per shape (members, GPUs, CPU and memory per member), so the head is the best of a
handful of list heads, and a policy can rule out a whole shape with one fit check instead of scanning every
waiting job of that shape.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Iterator

from gangplane.simulator.jobs import JobSpec

OrderKey = tuple[int, float, int]
ShapeKey = tuple[int, int, float, float]


def order_key(job: JobSpec) -> OrderKey:
    return (-job.priority, job.arrival, job.id)


def shape_key(job: JobSpec) -> ShapeKey:
    return (job.members, job.gpus_per_member, job.cpu_per_member, job.memory_per_member)


class WaitQueue:
    def __init__(self) -> None:
        self._by_shape: dict[ShapeKey, list[tuple[OrderKey, JobSpec]]] = {}
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def push(self, job: JobSpec) -> None:
        bisect.insort(
            self._by_shape.setdefault(shape_key(job), []), (order_key(job), job), key=lambda e: e[0]
        )
        self._size += 1

    def remove(self, job: JobSpec) -> None:
        line = self._by_shape[shape_key(job)]
        key = order_key(job)
        index = bisect.bisect_left(line, key, key=lambda e: e[0])
        if index >= len(line) or line[index][1].id != job.id:
            raise KeyError(f"job {job.id} is not waiting")
        del line[index]
        if not line:
            del self._by_shape[shape_key(job)]
        self._size -= 1

    def head(self) -> JobSpec | None:
        heads = [line[0] for line in self._by_shape.values()]
        return min(heads, key=lambda e: e[0])[1] if heads else None

    def shapes(self) -> Iterator[list[tuple[OrderKey, JobSpec]]]:
        """Each shape's waiting jobs in order (read-only views; do not mutate while iterating)."""
        yield from self._by_shape.values()

    def cutoff(self, window: int) -> OrderKey | None:
        """The order key of the ``window``-th waiting job, or ``None`` when fewer wait (O(window + shapes))."""
        if self._size <= window:
            return None
        keys = heapq.merge(*([key for key, _ in line[:window]] for line in self._by_shape.values()))
        return next(itertools.islice(keys, window - 1, None))

    def in_order(self) -> list[JobSpec]:
        """Every waiting job in queue order (O(n log n); for inspection and tests)."""
        return [
            job
            for _, job in sorted((e for line in self._by_shape.values() for e in line), key=lambda e: e[0])
        ]


__all__ = ["OrderKey", "ShapeKey", "WaitQueue", "order_key", "shape_key"]
