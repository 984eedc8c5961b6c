"""Gang-aware EASY backfill: the blocked head gets a reservation; later jobs start now if they cannot delay it.

With known durations (the trace's), the head's *shadow time* is the first instant at which, releasing running
jobs in end-time order, ``place_gang`` finds room for the head; the nodes it would take there are reserved.
A waiting job may start now if it fits now and either

- ends by the shadow time (it is gone before the head needs the room), or
- fits beside the reservation: on each reserved node it may use only what is free now minus the part of the
  head's need that jobs ending before the shadow time will not free (placeholders block exactly that).

So backfilling never delays the head (Lifka's EASY; Slurm's ``sched/backfill`` without reservations for
the jobs behind the head). All placements, real and hypothetical, go through ``schedulers.core.place_gang``.

Bounded work per cycle (a documented difference from a full queue scan): waiting jobs are indexed by gang
shape; a shape that cannot fit (GPU-count check, then the core) is skipped whole; within a shape only the
first ``PolicyOptions.backfill_depth`` jobs are examined for the shadow-time rule (Slurm bounds its scan with
``bf_max_job_test``, globally). A job passed over by the cap waits for a later cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gangplane.simulator.cluster import ClusterSpec
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.placement import GangPlacer
from gangplane.simulator.policies.base import Decision, PolicyOptions, Reject, Start
from gangplane.simulator.policies.fifo import NEVER_FITS, start_heads
from gangplane.simulator.policies.queue import OrderKey, ShapeKey, WaitQueue, order_key, shape_key


@dataclass(slots=True)
class Reservation:
    """The head's room at ``shadow``: ``need[row]`` GPUs per node row, of which ``to_release[row]`` are held
    now by the running jobs in ``early`` (job -> GPUs per reserved row), all ending by ``shadow``."""

    head: int
    shadow: float
    need: dict[int, int]
    early: dict[int, dict[int, int]] = field(default_factory=dict)
    to_release: dict[int, int] = field(default_factory=dict)

    def blocked(self) -> dict[int, int]:
        """GPUs per row that no job outliving the shadow time may take now."""
        return {row: max(0, gpus - self.to_release.get(row, 0)) for row, gpus in self.need.items()}

    def forget_early(self, job_id: int) -> None:
        """An early job ended: its GPUs are free now, so they count as blocked from here on."""
        for row, gpus in self.early.pop(job_id, {}).items():
            self.to_release[row] -= gpus


def shadow_reservation(placer: GangPlacer, head: JobSpec, ends: dict[int, float]) -> Reservation | None:
    """The head's reservation, or ``None`` if it does not fit even with every running job gone."""
    token = placer.snapshot.checkpoint()
    try:
        order = sorted(ends.items(), key=lambda item: (item[1], item[0]))
        released: dict[int, dict[int, int]] = {}
        for i, (job_id, end) in enumerate(order):
            released[job_id] = placer.vacate(job_id)
            if (i + 1 < len(order) and order[i + 1][1] == end) or not placer.might_fit(head):
                continue
            need = placer.trial(head)
            if need is not None:
                return _reservation(head.id, end, need, released)
        return None
    finally:
        placer.snapshot.rollback(token)


def _reservation(
    head: int, shadow: float, need: dict[int, int], released: dict[int, dict[int, int]]
) -> Reservation:
    reservation = Reservation(head, shadow, need)
    for job_id, rows in released.items():
        mine = {row: gpus for row, gpus in rows.items() if row in need}
        if mine:
            reservation.early[job_id] = mine
            for row, gpus in mine.items():
                reservation.to_release[row] = reservation.to_release.get(row, 0) + gpus
    return reservation


@dataclass(slots=True)
class _Search:
    """One candidate search: free GPUs now and beside the reservation, with per-size fit counts cached."""

    free: np.ndarray
    beside: np.ndarray
    failed: set[tuple[ShapeKey, bool]]
    _slots: dict[tuple[int, bool], int] = field(default_factory=dict)

    def might_fit(self, job: JobSpec, beside: bool) -> bool:
        if (shape_key(job), beside) in self.failed:
            return False
        if job.gpus_per_member == 0:
            return True
        key = (job.gpus_per_member, beside)
        if key not in self._slots:
            free = self.beside if beside else self.free
            self._slots[key] = int((np.maximum(free, 0) // job.gpus_per_member).sum())
        return self._slots[key] >= job.members


class EasyBackfill:
    name = "backfill"

    def __init__(self, cluster: ClusterSpec, options: PolicyOptions) -> None:
        self.placer = GangPlacer(cluster)
        self.queue = WaitQueue()
        self.depth = options.backfill_depth
        self.window = options.backfill_window
        self._jobs: dict[int, JobSpec] = {}
        self._ends: dict[int, float] = {}
        self._reservation: Reservation | None = None

    def submit(self, job: JobSpec, now: float) -> None:
        self._jobs[job.id] = job
        self.queue.push(job)

    def release(self, job_id: int, now: float) -> None:
        self.placer.release(job_id)
        del self._ends[job_id]
        del self._jobs[job_id]
        if self._reservation is not None:
            self._reservation.forget_early(job_id)

    def schedule(self, now: float) -> Sequence[Decision]:
        decisions: list[Decision] = []
        while (head := start_heads(self.placer, self.queue, decisions)) is not None:
            self._record_ends(decisions, now)
            reservation = self._reserve(head)
            if reservation is not None:
                self._backfill(head, reservation, now, decisions)
                break
            self.queue.remove(head)
            decisions.append(Reject(head.id, NEVER_FITS))
        self._record_ends(decisions, now)
        return decisions

    def _record_ends(self, decisions: list[Decision], now: float) -> None:
        for decision in decisions:
            if isinstance(decision, Start) and decision.job_id not in self._ends:
                self._ends[decision.job_id] = now + self._jobs[decision.job_id].duration

    def next_cycle(self, now: float) -> float | None:
        return None

    @property
    def reservation(self) -> Reservation | None:
        return self._reservation

    def _reserve(self, head: JobSpec) -> Reservation | None:
        if self._reservation is None or self._reservation.head != head.id:
            self._reservation = shadow_reservation(self.placer, head, self._ends)
        return self._reservation

    def _backfill(
        self, head: JobSpec, reservation: Reservation, now: float, decisions: list[Decision]
    ) -> None:
        failed: set[tuple[ShapeKey, bool]] = set()  # free capacity only shrinks within a cycle
        while (pick := self._candidate(head, reservation, now, failed)) is not None:
            job, beside = pick
            nodes = self._place(job, reservation if beside else None)
            if nodes is None:
                failed.add((shape_key(job), beside))
                continue
            self.queue.remove(job)
            decisions.append(Start(job.id, nodes))

    def _candidate(
        self, head: JobSpec, reservation: Reservation, now: float, failed: set[tuple[ShapeKey, bool]]
    ) -> tuple[JobSpec, bool] | None:
        """The first waiting job in queue order that may start now, and whether it must fit beside."""
        free = self.placer.free_gpus()
        if not free.any():
            return None
        beside = free.copy()
        for row, gpus in reservation.blocked().items():
            beside[row] -= gpus
        search = _Search(free, beside, failed)
        cutoff = self.queue.cutoff(self.window) if self.window is not None else None
        best: tuple[OrderKey, JobSpec, bool] | None = None
        for line in self.queue.shapes():
            found = self._first_in_shape(line, head, reservation.shadow - now, search)
            if found is None:
                continue
            key = order_key(found[0])
            if (cutoff is None or key <= cutoff) and (best is None or key < best[0]):
                best = (key, found[0], found[1])
        return None if best is None else (best[1], best[2])

    def _first_in_shape(
        self, line: list[tuple[OrderKey, JobSpec]], head: JobSpec, slack: float, search: _Search
    ) -> tuple[JobSpec, bool] | None:
        """The first job of one shape that may start: beside the reservation, or ending within ``slack``."""
        first = 1 if line[0][1].id == head.id else 0
        if first >= len(line) or not search.might_fit(line[first][1], beside=False):
            return None
        if search.might_fit(line[first][1], beside=True):
            job = line[first][1]
            return job, job.duration > slack
        for _, job in line[first : first + self.depth]:
            if job.duration <= slack:
                return job, False
        return None

    def _place(self, job: JobSpec, reservation: Reservation | None) -> tuple[str, ...] | None:
        if reservation is None:
            return self.placer.place(job)
        token = self.placer.block(reservation.blocked())
        nodes = self.placer.place(job)
        self.placer.unblock(token, keep=job.id if nodes is not None else None)
        return nodes


__all__ = ["EasyBackfill", "Reservation", "shadow_reservation"]
