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
        # intervals live at rows lo..lo+len(times)-1 of the arrays: forgetting the past only moves lo
        self._lo = 0
        self._times = np.zeros(64)
        self._times[0] = now
        self._usage = np.zeros((64, self.rows), dtype=np.int32)
        self._free = np.zeros(64, dtype=np.int64)
        self._free[0] = int(capacity.sum())

    def __len__(self) -> int:
        return len(self.times)

    def add(self, start: float, end: float, gpus: Mapping[int, int]) -> None:
        first, last = self._split(start), self._split(end)  # both may move the rows: offset after
        first, last = first + self._lo, last + self._lo
        if last > first and gpus:
            rows = np.fromiter(gpus.keys(), dtype=np.int64, count=len(gpus))
            counts = np.fromiter(gpus.values(), dtype=np.int32, count=len(gpus))
            self._usage[first:last, rows] += counts
            self._free[first:last] -= int(counts.sum())

    def forget_before(self, now: float) -> None:
        """Drop what is over by ``now``: the interval holding ``now`` becomes the first."""
        drop = bisect.bisect_right(self.times, now) - 1
        if drop > 0:
            self._lo += drop
            del self.times[:drop]
        self.times[0] = self._times[self._lo] = self.now = now

    def windows(self, length: float, gpus: int) -> Iterator[tuple[float, np.ndarray]]:
        """Candidate starts in time order with the most GPUs in use per row during ``[start, start +
        length)``, skipping starts at which the job's ``gpus`` are not free in all for its whole run.
        Candidates are examined in chunks that double, since the first fit is often early."""
        size, lo = len(self.times), self._lo
        times, usage = self._times[lo : lo + size], self._usage[lo : lo + size]
        short = np.flatnonzero(self._free[lo : lo + size] < gpus)
        next_short = np.append(short, size)
        begin, chunk = 0, 32
        while begin < size:
            candidates = np.arange(begin, min(size, begin + chunk))
            ends = np.searchsorted(times, times[candidates] + length, side="left")
            ends = np.maximum(ends, candidates + 1)
            blocked = next_short[np.searchsorted(short, candidates)]
            for first in candidates[blocked >= ends].tolist():
                yield self.times[first], usage[first : ends[first - begin]].max(axis=0)
            begin, chunk = begin + chunk, chunk * 2

    def _split(self, when: float) -> int:
        """The index of the breakpoint at ``when``, inserted if missing (``when`` >= ``now``)."""
        index = bisect.bisect_left(self.times, when)
        if index < len(self.times) and self.times[index] == when:
            return index
        if index == 0:
            raise ValueError(f"an occupation cannot begin at {when}, before the plan's start {self.now}")
        self._make_room()
        size, lo = len(self.times), self._lo
        at, past = lo + index, lo + size
        # the new interval begins as a copy of the one it splits; numpy copies overlapping slices safely
        for array in (self._times, self._usage, self._free):
            array[at + 1 : past + 1] = array[at:past]
            array[at] = array[at - 1]
        self._times[at] = when
        self.times.insert(index, when)
        return index

    def _make_room(self) -> None:
        """Room for one more interval: move the live rows to the front, or double the arrays."""
        size, lo = len(self.times), self._lo
        if lo + size < len(self._free):
            return
        if lo > size:
            for array in (self._times, self._usage, self._free):
                array[:size] = array[lo : lo + size]
        else:
            self._times = np.concatenate([self._times, np.zeros_like(self._times)])
            self._usage = np.concatenate([self._usage, np.zeros_like(self._usage)])
            self._free = np.concatenate([self._free, np.zeros_like(self._free)])
        self._lo = 0 if lo > size else lo


__all__ = ["Plan", "StepProfile"]
