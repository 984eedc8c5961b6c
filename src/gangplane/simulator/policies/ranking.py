"""The preemptive policies' granting walk without ranking every job every cycle.

Walking all active jobs in rank order, a job is granted if its GPUs fit what is left of the cluster's total
(skipped otherwise); running jobs not granted are preempted. On the whole Philly trace thousands of jobs wait
while a few hundred run, so sorting all of them every cycle was most of a replay. The walk here gives the same
grants from

- ``WaitingLines``: waiting jobs by total GPUs, each size's line sorted by its rank key, which is constant
  while a job waits (SRTF: its remaining time; LAS: its queue and entry order);
- the running jobs' ranks at ``now``, sorted (at most one job per GPU; ``RunningTable`` computes them with a
  few array operations).

A waiting job that does not fit what is left changes nothing, and what is left only shrinks along the walk,
so only waiting jobs that fit are visited: the next one is the best line head among the sizes that fit, and
a size that does not fit is never looked at again in that cycle. Runs of running jobs between two such
visits are granted in bulk from prefix sums of their GPUs; each one skipped is a preemption.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np

Rank = tuple[float, ...]
T = TypeVar("T")


class WaitingLines:
    """Waiting job ids by total GPUs, each size's line in rank-key order."""

    def __init__(self) -> None:
        self._lines: dict[int, list[tuple[Rank, int]]] = {}
        self._sizes: list[int] = []

    def __len__(self) -> int:
        return sum(len(line) for line in self._lines.values())

    def add(self, key: Rank, job_id: int, gpus: int) -> None:
        line = self._lines.get(gpus)
        if line is None:
            bisect.insort(self._sizes, gpus)
            line = self._lines[gpus] = []
        bisect.insort(line, (key, job_id))

    def remove(self, key: Rank, job_id: int, gpus: int) -> None:
        line = self._lines[gpus]
        index = bisect.bisect_left(line, (key, job_id))
        if index >= len(line) or line[index][1] != job_id:
            raise KeyError(f"job {job_id} is not waiting with rank {key}")
        del line[index]
        if not line:
            del self._lines[gpus]
            self._sizes.remove(gpus)

    def best_within(self, free: int, taken: dict[int, int]) -> tuple[Rank, int, int] | None:
        """The best ``(key, job id, gpus)`` among sizes of at most ``free`` GPUs, past the first
        ``taken[size]`` of each line (those already visited in this walk)."""
        best: tuple[Rank, int, int] | None = None
        for size in self._sizes:
            if size > free:
                break
            line, pos = self._lines[size], taken.get(size, 0)
            if pos < len(line) and (best is None or line[pos] < (best[0], best[1])):
                best = (*line[pos], size)
        return best


@dataclass(slots=True)
class RunningRanks:
    """The running jobs in rank order at one instant: their rank keys, table slots and the prefix sums of
    their GPUs (``cum[i]`` = GPUs of the first ``i``)."""

    keys: list[Rank]
    slots: list[int]
    cum: list[int]


@dataclass(slots=True)
class Grants:
    preempted: list[int] = field(default_factory=list)
    """Positions in the running ranking of the running jobs not granted, in rank order."""
    granted: list[int] = field(default_factory=list)
    """Ids of the waiting jobs granted, in rank order."""


def grant(running: RunningRanks, waiting: WaitingLines, total: int) -> Grants:
    """Tiresias' count rule (fit-first) down the merged ranking of running and waiting jobs."""
    cum = running.cum
    grants, taken = Grants(), dict[int, int]()
    free, pos = total, 0
    while True:
        head = waiting.best_within(free, taken)
        stop = len(running.keys) if head is None else bisect.bisect_left(running.keys, head[0], lo=pos)
        free, pos = _grant_running(cum, pos, stop, free, grants.preempted)
        if head is None:
            return grants
        _, job_id, size = head
        taken[size] = taken.get(size, 0) + 1
        if size <= free:
            grants.granted.append(job_id)
            free -= size


def _grant_running(cum: list[int], pos: int, stop: int, free: int, preempted: list[int]) -> tuple[int, int]:
    """Grant running jobs ``pos..stop-1`` in order while they fit; record the skipped ones."""
    while pos < stop:
        if cum[stop] - cum[pos] <= free:
            return free - (cum[stop] - cum[pos]), stop
        skipped = bisect.bisect_right(cum, cum[pos] + free, lo=pos) - 1  # the first that does not fit
        free -= cum[skipped] - cum[pos]
        preempted.append(skipped)
        pos = skipped + 1
    return free, pos


class RunningTable(Generic[T]):
    """Running jobs as numpy columns, one slot each: three rank components ``a, b, c`` and the run's
    ``start`` and ``overhead``, so a policy ranks all of them with a few array operations."""

    COLUMNS = ("a", "b", "c", "start", "overhead", "gpus")

    def __init__(self) -> None:
        self._data = np.zeros((len(self.COLUMNS), 16))
        self._items: list[T | None] = [None] * 16
        self._slots: dict[int, int] = {}
        self._free: list[int] = list(range(15, -1, -1))

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, job_id: int) -> bool:
        return job_id in self._slots

    def add(self, job_id: int, item: T, values: Sequence[float]) -> None:
        if not self._free:
            self._grow()
        slot = self._free.pop()
        self._slots[job_id] = slot
        self._items[slot] = item
        self._data[:, slot] = values

    def set(self, job_id: int, column: str, value: float) -> None:
        self._data[self.COLUMNS.index(column), self._slots[job_id]] = value

    def remove(self, job_id: int) -> None:
        slot = self._slots.pop(job_id)
        self._items[slot] = None
        self._free.append(slot)

    def columns(self) -> tuple[np.ndarray, np.ndarray]:
        """The live slots and the table's columns at them (rows in ``COLUMNS`` order)."""
        slots = np.fromiter(self._slots.values(), dtype=np.int64, count=len(self._slots))
        return slots, self._data[:, slots]

    def item(self, slot: int) -> T:
        item = self._items[slot]
        if item is None:
            raise KeyError(f"slot {slot} is empty")
        return item

    def ranked(self, first: np.ndarray, slots: np.ndarray, data: np.ndarray) -> RunningRanks:
        """Running jobs ordered by ``(first, b, c)`` (``first`` computed by the policy from the columns)."""
        order = np.lexsort((data[2], data[1], first))
        keys: list[Rank] = list(
            zip(first[order].tolist(), data[1][order].tolist(), data[2][order].tolist(), strict=True)
        )
        cum = np.zeros(len(order) + 1, dtype=np.int64)
        cum[1:] = np.cumsum(data[5][order])  # whole GPU counts, exact in float64
        return RunningRanks(keys, slots[order].tolist(), cum.tolist())

    def _grow(self) -> None:
        size = self._data.shape[1]
        self._data = np.concatenate([self._data, np.zeros_like(self._data)], axis=1)
        self._items.extend([None] * size)
        self._free.extend(range(2 * size - 1, size - 1, -1))


__all__ = ["Grants", "Rank", "RunningRanks", "RunningTable", "WaitingLines", "grant"]
