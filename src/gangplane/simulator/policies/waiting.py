"""Waiting jobs indexed by total GPUs, so a policy can hand its scheduler only the gangs that could pass.

A scheduler pass tries every gang it is handed; on the whole Philly trace the waiting line holds thousands of
gangs while a few GPUs are free, so most tries fail the same way every pass. ``WaitingBySize.within`` yields
the waiting jobs asking for no more GPUs than are free in total, in job-id order, visiting only the size
classes that qualify (Philly has about twenty), not every waiting job.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from gangplane.simulator.jobs import JobSpec


class WaitingBySize:
    """Waiting jobs by total GPUs; ids ascend within a size (jobs are submitted in id order, and a job
    submitted again after a preemption is re-inserted in its place)."""

    def __init__(self) -> None:
        self._by_size: dict[int, dict[int, JobSpec]] = {}
        self._sizes: list[int] = []

    def __len__(self) -> int:
        return sum(len(jobs) for jobs in self._by_size.values())

    def __bool__(self) -> bool:
        return bool(self._sizes)

    def add(self, job: JobSpec) -> None:
        jobs = self._by_size.get(job.gpus)
        if jobs is None:
            bisect.insort(self._sizes, job.gpus)
            jobs = self._by_size[job.gpus] = {}
        if jobs and job.id < next(reversed(jobs)):
            jobs[job.id] = job
            self._by_size[job.gpus] = dict(sorted(jobs.items()))
        else:
            jobs[job.id] = job

    def remove(self, job: JobSpec) -> None:
        jobs = self._by_size[job.gpus]
        del jobs[job.id]
        if not jobs:
            del self._by_size[job.gpus]
            self._sizes.remove(job.gpus)

    def within(self, gpus: int) -> list[JobSpec]:
        """Waiting jobs asking for at most ``gpus`` GPUs in all, by id."""
        cut = bisect.bisect_right(self._sizes, gpus)
        chosen = [job for size in self._sizes[:cut] for job in self._by_size[size].values()]
        return sorted(chosen, key=lambda job: job.id) if cut > 1 else chosen

    def __iter__(self) -> Iterator[JobSpec]:
        return iter(self.within(self._sizes[-1]) if self._sizes else [])


__all__ = ["WaitingBySize"]
