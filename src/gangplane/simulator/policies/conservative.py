"""Conservative backfill (Mu'alem & Feitelson, TPDS 2001): every waiting job gets a reservation, in queue
order, at the earliest time it fits beside the running jobs and the reservations made before it; a job whose
reservation is *now* starts. No job can be delayed by one behind it, not only the head.

Reservations are gangs on nodes: the plan is a profile of occupations (running jobs until their expected end,
reservations over ``[start, start + expected)``, GPUs per node row). For a job and a candidate start time
(now, or any end in the profile), each node is charged the most it is used during the job's run, those GPUs
are held by placeholder pods on an empty snapshot, and ``schedulers.core.place_gang`` decides whether and where
the gang fits. The plan is rebuilt from scratch in queue order ("conservative with rescheduling") whenever a
job ends before its estimate, overruns it, or a new job goes ahead of planned ones, so reservations move
earlier when jobs end early; otherwise it is kept and only new arrivals are planned (a test checks that this
gives the same schedule as rebuilding every cycle). With exact estimates no reservation ever moves later.

The plan is a step function (``policies.profile.StepProfile``), so a job's candidate starts are scanned with
array operations, and a cycle that keeps the plan touches only the jobs reserved for now (a heap by reserved
start) and the new arrivals, not the whole waiting line; a property test checks the schedule against the
list-of-occupations plan this replaced.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from gangplane.simulator.cluster import ClusterSpec
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.placement import GangPlacer
from gangplane.simulator.policies.base import Decision, PolicyOptions, Reject, Start
from gangplane.simulator.policies.fifo import NEVER_FITS
from gangplane.simulator.policies.profile import Plan, StepProfile
from gangplane.simulator.policies.queue import OrderKey, WaitQueue, order_key

EARLY = 1e-9
"""A run that ends this much before its expected end ended early (estimates, failures)."""
OVERRUN = 1e-6
"""A running job past its expected end is planned to end this much later (it must end before we can use it)."""


class ConservativeBackfill:
    name = "conservative"

    def __init__(self, cluster: ClusterSpec, options: PolicyOptions) -> None:
        self.placer = GangPlacer(cluster, options.strategy)
        self.planner = self.placer.empty_like()
        self.queue = WaitQueue()
        self.reservations: dict[int, tuple[float, tuple[str, ...]]] = {}
        """The current plan: waiting job -> reserved start time and nodes."""
        self._jobs: dict[int, JobSpec] = {}
        self._ends: dict[int, float] = {}
        self._plan: Plan | None = None
        self._last: OrderKey | None = None
        self._by_start: list[tuple[float, OrderKey, int]] = []  # reservations by start, then queue order
        self._unplanned: list[JobSpec] = []  # submitted since the last cycle

    def new_plan(self, now: float) -> Plan:
        return StepProfile(now, self.planner.free_gpus())

    def submit(self, job: JobSpec, now: float) -> None:
        self._jobs[job.id] = job
        self.queue.push(job)
        self._unplanned.append(job)
        if self._last is not None and order_key(job) < self._last:
            self._plan = None  # it goes ahead of jobs already planned

    def release(self, job_id: int, now: float) -> None:
        self.placer.release(job_id)
        del self._jobs[job_id]
        if now < self._ends.pop(job_id) - EARLY:
            self._plan = None  # ended before expected: reservations may move earlier

    def next_cycle(self, now: float) -> float | None:
        return None

    def schedule(self, now: float) -> Sequence[Decision]:
        """Keep the plan while it holds — nothing ended early, nobody overran its estimate or jumped the
        line — starting the jobs reserved for now and planning only new arrivals; else plan from scratch."""
        decisions: list[Decision] = []
        plan = self._plan
        if plan is None or any(end <= now for end in self._ends.values()) or self._stale(now):
            plan = self._plan = self.new_plan(now)
            for job_id, end in self._ends.items():
                plan.add(now, max(end, now + OVERRUN), self.placer.gpus_by_node(job_id))
            self.reservations, self._by_start, self._last = {}, [], None
            unplanned = self.queue.in_order()
        else:
            plan.forget_before(now)
            self._start_reserved(now, decisions)
            unplanned = sorted(self._unplanned, key=order_key)
        self._unplanned = []
        for job in unplanned:
            if job.id in self._jobs and job.id not in self.reservations:
                self._reserve(job, plan, now, decisions)
        return decisions

    def _start_reserved(self, now: float, decisions: list[Decision]) -> None:
        """Start the jobs reserved for ``now``, in queue order."""
        while self._by_start and self._by_start[0][0] == now:
            _, _, job_id = heapq.heappop(self._by_start)
            self._start(self._jobs[job_id], self.reservations.pop(job_id)[1], now, decisions)

    def _stale(self, now: float) -> bool:
        """Whether a reservation's start passed without it starting."""
        return bool(self._by_start) and self._by_start[0][0] < now

    def _reserve(self, job: JobSpec, plan: Plan, now: float, decisions: list[Decision]) -> None:
        found = self._earliest(job, plan)
        if found is None:
            self.queue.remove(job)
            decisions.append(Reject(job.id, NEVER_FITS))
            return
        start, nodes = found
        plan.add(start, start + job.expected, self._rows(nodes, job))
        self._last = order_key(job)
        if start == now:
            self._start(job, nodes, now, decisions)
        else:
            self.reservations[job.id] = (start, nodes)
            heapq.heappush(self._by_start, (start, order_key(job), job.id))

    def _start(self, job: JobSpec, nodes: tuple[str, ...], now: float, decisions: list[Decision]) -> None:
        self.placer.put(job, nodes)
        self.queue.remove(job)
        self._ends[job.id] = now + job.expected
        decisions.append(Start(job.id, nodes))

    def _earliest(self, job: JobSpec, profile: Plan) -> tuple[float, tuple[str, ...]] | None:
        """The first candidate time at which ``job`` fits for its whole expected run, and its nodes."""
        capacity = self.planner.free_gpus()
        for start, peak in profile.windows(job.expected, job.gpus):
            if not self.planner.might_fit(job, capacity - peak):
                continue
            token = self.planner.block({row: int(gpus) for row, gpus in enumerate(peak) if gpus})
            nodes = self.planner.place_on(job)
            self.planner.unblock(token)
            if nodes is not None:
                return start, nodes
        return None

    def _rows(self, nodes: tuple[str, ...], job: JobSpec) -> dict[int, int]:
        rows: dict[int, int] = {}
        for node in nodes:
            row = self.placer.snapshot.node_position(node)
            rows[row] = rows.get(row, 0) + job.gpus_per_member
        return rows


__all__ = ["ConservativeBackfill"]
