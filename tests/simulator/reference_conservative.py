"""Conservative backfill's plan as a plain list of occupations, every candidate start tried in full: the
straightforward reference for ``policies.profile.StepProfile`` (``test_sim_conservative.py``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from gangplane.simulator.policies import ConservativeBackfill
from gangplane.simulator.policies.profile import Plan


class OccupationList:
    """``starts[i]``, ``ends[i]``, ``usage[i]`` (GPUs per node row) of every occupation."""

    def __init__(self, now: float, rows: int) -> None:
        self.now, self.rows = now, rows
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.usage: list[np.ndarray] = []

    def add(self, start: float, end: float, gpus: Mapping[int, int]) -> None:
        vector = np.zeros(self.rows, dtype=np.int64)
        for row, count in gpus.items():
            vector[row] += count
        self.starts.append(start)
        self.ends.append(end)
        self.usage.append(vector)

    def forget_before(self, now: float) -> None:
        keep = [i for i, end in enumerate(self.ends) if end > now]
        self.starts = [self.starts[i] for i in keep]
        self.ends = [self.ends[i] for i in keep]
        self.usage = [self.usage[i] for i in keep]
        self.now = now

    def windows(self, length: float, gpus: int) -> Iterator[tuple[float, np.ndarray]]:
        for start in sorted({self.now, *(end for end in self.ends if end > self.now)}):
            yield start, self.peak(start, length)

    def peak(self, start: float, length: float) -> np.ndarray:
        """Per row, the most GPUs in use at any instant of ``[start, start + length)``."""
        if not self.usage:
            return np.zeros(self.rows, dtype=np.int64)
        starts, ends = np.array(self.starts), np.array(self.ends)
        inside = starts[(starts > start) & (starts < start + length)]
        instants = np.concatenate(([start], inside))
        active = (starts[None, :] <= instants[:, None]) & (ends[None, :] > instants[:, None])
        used: np.ndarray = (active.astype(np.int64) @ np.vstack(self.usage)).max(axis=0)
        return used


class ListPlanned(ConservativeBackfill):
    """Conservative backfill planning on ``OccupationList``."""

    def new_plan(self, now: float) -> Plan:
        return OccupationList(now, len(self.placer.snapshot))
