"""Conservative backfill's plan as a step function: GPUs in use per node row over time, from ``now`` on.

Breakpoint ``k`` begins interval ``k``, which lasts until breakpoint ``k + 1`` (the last one forever); each
interval holds the GPUs in use per node row and the GPUs free in all. An occupation (a running job until its
expected end, or a reservation) adds its GPUs to the intervals it covers, splitting an interval at its start
or end where there is no breakpoint yet. New reservations mostly go at the end of the plan, where inserting
a breakpoint moves little.

A job's candidate starts are ``now`` and every end in the plan — every breakpoint: a start after ``now`` is
always the end of another occupation or ``now`` itself, since reservations are made at candidate starts. For a
start and run length, the most GPUs each row has in use during the run is the maximum over the intervals the
run overlaps (the usage only rises at a start); a candidate at which some overlapped interval has fewer GPUs
free in all than the job needs cannot fit and is skipped without looking at rows.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping
from typing import Protocol

import numpy as np


class Plan(Protocol):
    """What conservative backfill needs of its plan."""

    def add(self, start: float, end: float, gpus: Mapping[int, int]) -> None: ...

    def forget_before(self, now: float) -> None: ...

    def windows(self, length: float, gpus: int) -> Iterator[tuple[float, np.ndarray]]: ...


class StepProfile:
    def __init__(self, now: float, capacity: np.ndarray) -> None:
        self.now = now
        self.rows = len(capacity)
        self.times: list[float] = [now]
        self._usage = np.zeros((64, self.rows), dtype=np.int32)
        self._free = np.zeros(64, dtype=np.int64)
        self._free[0] = int(capacity.sum())

    def __len__(self) -> int:
        return len(self.times)

    def add(self, start: float, end: float, gpus: Mapping[int, int]) -> None:
        first, last = self._split(start), self._split(end)
        if last > first and gpus:
            rows = np.fromiter(gpus.keys(), dtype=np.int64, count=len(gpus))
            counts = np.fromiter(gpus.values(), dtype=np.int32, count=len(gpus))
            self._usage[first:last, rows] += counts
            self._free[first:last] -= int(counts.sum())

    def forget_before(self, now: float) -> None:
        """Drop what is over by ``now``: the interval holding ``now`` becomes the first."""
        drop = bisect.bisect_right(self.times, now) - 1
        if drop > 0:
            size = len(self.times)
            self._usage[: size - drop] = self._usage[drop:size]
            self._free[: size - drop] = self._free[drop:size]
            del self.times[:drop]
        self.times[0] = self.now = now

    def windows(self, length: float, gpus: int) -> Iterator[tuple[float, np.ndarray]]:
        """Candidate starts in time order with the most GPUs in use per row during ``[start, start +
        length)``, skipping starts at which the job's ``gpus`` are not free in all for its whole run."""
        size = len(self.times)
        times = np.asarray(self.times)
        ends = np.searchsorted(times, times + length, side="left")
        ends = np.maximum(ends, np.arange(1, size + 1))
        short = np.flatnonzero(self._free[:size] < gpus)
        blocked = np.append(short, size)[np.searchsorted(short, np.arange(size))]
        for first in np.flatnonzero(blocked >= ends).tolist():
            yield self.times[first], self._usage[first : ends[first]].max(axis=0)

    def _split(self, when: float) -> int:
        """The index of the breakpoint at ``when``, inserted if missing (``when`` >= ``now``)."""
        index = bisect.bisect_left(self.times, when)
        if index < len(self.times) and self.times[index] == when:
            return index
        if index == 0:
            raise ValueError(f"an occupation cannot begin at {when}, before the plan's start {self.now}")
        size = len(self.times)
        if size == len(self._free):
            self._usage = np.concatenate([self._usage, np.zeros_like(self._usage)])
            self._free = np.concatenate([self._free, np.zeros_like(self._free)])
        # the new interval begins as a copy of the one it splits; numpy copies overlapping slices safely
        self._usage[index + 1 : size + 1] = self._usage[index:size]
        self._free[index + 1 : size + 1] = self._free[index:size]
        self._usage[index] = self._usage[index - 1]
        self._free[index] = self._free[index - 1]
        self.times.insert(index, when)
        return index


__all__ = ["Plan", "StepProfile"]
