"""The discrete-event loop: virtual time on a ``ManualClock``, one scheduling cycle per instant with events.

The engine holds no scheduling logic. It replays arrivals, asks the policy for decisions, turns each start
into a completion (or, with a failure model, a failure) event and records every job's timeline. The same
jobs, policy and seed always give the same result: the heap breaks ties by kind and insertion order, and the
only randomness is a numpy ``Generator`` seeded from ``seed``. A replay that stops getting anywhere (a policy
cycling forever) is stopped by a ``Watchdog`` and says so in ``SimResult.stall``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gangplane.clock import ManualClock
from gangplane.simulator.cluster import ClusterSpec
from gangplane.simulator.events import EventKind, EventQueue
from gangplane.simulator.explain import explained
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.policies.base import Admit, Decision, Policy, Preempt, Reject, Start
from gangplane.simulator.preemption import Preemption
from gangplane.simulator.stall import Stall, Watchdog
from gangplane.simulator.timeline import JobRecord, Segment, SimResult

ProgressCallback = Callable[[int], None]
"""Called with the number of jobs settled (finished or rejected) so far; the engine calls it sparingly."""


@dataclass(frozen=True, slots=True)
class FailureModel:
    """Each run of a job fails with ``probability`` at a uniformly drawn point of its duration; the job is
    requeued and restarts from scratch (no checkpoints)."""

    probability: float = 0.0


class Simulation:
    """One replay of ``jobs`` (sorted by arrival) under ``policy`` on ``cluster``."""

    def __init__(
        self,
        jobs: Sequence[JobSpec],
        policy: Policy,
        cluster: ClusterSpec,
        *,
        seed: int = 0,
        failures: FailureModel | None = None,
        clock: ManualClock | None = None,
        progress: ProgressCallback | None = None,
        preemption: Preemption | None = None,
        watchdog: Watchdog | None = None,
    ) -> None:
        _check_order(jobs)
        self._jobs = jobs
        self._policy = policy
        self._cluster = cluster
        self._failures = failures or FailureModel()
        self._rng = np.random.default_rng(seed)
        self._clock = clock or ManualClock(0.0)
        self._origin = self._clock.now()
        self._progress = progress
        self._records = [JobRecord(job) for job in jobs]
        self._epochs = [0] * len(jobs)
        self._preemption = preemption or Preemption()
        self._saved = [0.0] * len(jobs)  # progress kept across runs (checkpoint-restart only)
        self._queue = EventQueue()
        self._wakes: set[float] = set()
        self._settled = 0
        self._events = 0
        self._cycles = 0
        self._running = 0
        self._watchdog = watchdog or Watchdog()
        self._stall: Stall | None = None

    def run(self) -> SimResult:
        next_arrival = 0
        while True:
            now = self._next_instant(next_arrival)
            if now is None:
                break
            self._clock.set(self._origin + now)
            self._drain_before_arrivals(now)
            next_arrival = self._arrive(now, next_arrival)
            self._drain_cycles(now)
            self._cycle(now)
            if self._stalled(now, next_arrival):
                break
        if self._progress is not None:
            self._progress(self._settled)
        log = explained(self._policy)
        reasons = tuple(log.reasons) if log is not None else ()
        return SimResult(
            self._policy.name,
            self._cluster,
            tuple(self._records),
            self._events,
            self._cycles,
            reasons,
            self._stall,
        )

    def _stalled(self, now: float, next_arrival: int) -> bool:
        """Whether the watchdog gives up on this replay (then ``_stall`` says why and on which jobs)."""
        active = next_arrival - self._settled
        left = next_arrival < len(self._jobs)
        kind = self._watchdog.check(running=self._running, arrivals_left=left, active=active)
        if kind is None:
            return False
        waiting = tuple(r.job.id for r in self._records[:next_arrival] if r.end is None and not r.rejected)
        if waiting:  # else every job is done: the policy's own wake-ups are all that is left
            self._stall = self._watchdog.stall(kind, now, waiting)
        return True

    def _next_instant(self, next_arrival: int) -> float | None:
        heap_time = self._queue.peek_time()
        arrival = self._jobs[next_arrival].arrival if next_arrival < len(self._jobs) else None
        if heap_time is None:
            return arrival
        return heap_time if arrival is None else min(heap_time, arrival)

    def _drain_before_arrivals(self, now: float) -> None:
        queue = self._queue
        while queue.due(now, EventKind.ARRIVAL):
            _, kind, job_id, epoch = queue.pop()
            if epoch != self._epochs[job_id]:
                continue  # the run this event belonged to was preempted
            self._events += 1
            self._end_run(job_id, now, _outcome(kind, self._records[job_id].job))

    def _arrive(self, now: float, next_arrival: int) -> int:
        jobs, first = self._jobs, next_arrival
        while next_arrival < len(jobs) and jobs[next_arrival].arrival == now:
            self._policy.submit(jobs[next_arrival], now)
            self._events += 1
            next_arrival += 1
        if next_arrival > first:
            self._watchdog.progressed(now)
        return next_arrival

    def _drain_cycles(self, now: float) -> None:
        while self._queue.peek_time() == now:
            self._queue.pop()
            self._wakes.discard(now)
            self._events += 1

    def _cycle(self, now: float) -> None:
        self._cycles += 1
        for decision in self._policy.schedule(now):
            self._apply(decision, now)
        wake = self._policy.next_cycle(now)
        if wake is not None and wake > now and wake not in self._wakes:
            self._wakes.add(wake)
            self._queue.push(wake, EventKind.CYCLE)

    def _apply(self, decision: Decision, now: float) -> None:
        record = self._records[decision.job_id]
        if isinstance(decision, Start):
            self._start(record, decision.nodes, now)
        elif isinstance(decision, Admit):
            record.admitted = now if record.admitted is None else record.admitted
        elif isinstance(decision, Preempt):
            self._preempt(record, now)
        elif isinstance(decision, Reject):
            record.rejected = decision.reason
            self._settle(now)

    def _start(self, record: JobRecord, nodes: tuple[str, ...], now: float) -> None:
        job = record.job
        if record.admitted is None:
            record.admitted = now
        if record.start is None:
            record.start = now
        overhead = self._preemption.overhead(resumed=bool(record.segments))
        record.segments.append(Segment(now, nodes, overhead=overhead))
        self._running += 1
        self._watchdog.started(job.id)
        epoch = self._epochs[job.id]
        length = job.run_length - self._saved[job.id] + overhead
        if self._failures.probability > 0 and self._rng.random() < self._failures.probability:
            self._queue.push(now + length * self._rng.random(), EventKind.FAILURE, job.id, epoch)
        else:
            self._queue.push(now + length, EventKind.COMPLETION, job.id, epoch)

    def _end_run(self, job_id: int, now: float, outcome: str) -> None:
        record = self._records[job_id]
        segment = record.segments[-1]
        segment.end, segment.outcome = now, outcome
        if outcome != "failed":  # a crash keeps nothing of its run
            segment.work = now - segment.start - segment.overhead
        self._epochs[job_id] += 1
        self._running -= 1
        self._policy.release(job_id, now)
        if outcome in ("completed", "killed"):
            record.end = now
            record.killed = outcome == "killed"
            self._settle(now)
        else:
            record.failures += 1
            self._policy.submit(record.job, now)

    def _preempt(self, record: JobRecord, now: float) -> None:
        segment = record.segments[-1]
        segment.end, segment.outcome = now, "preempted"
        segment.work = self._preemption.kept(now - segment.start, segment.overhead)
        self._saved[record.job.id] += segment.work
        record.preemptions += 1
        self._epochs[record.job.id] += 1
        self._running -= 1
        self._watchdog.kept(now, segment.work, record.job.run_length)

    def _settle(self, now: float) -> None:
        self._settled += 1
        self._watchdog.progressed(now)
        if self._progress is not None and self._settled % 1024 == 0:
            self._progress(self._settled)


def _outcome(kind: EventKind, job: JobSpec) -> str:
    if kind != EventKind.COMPLETION:
        return "failed"
    return "killed" if job.killed_at_limit else "completed"


def _check_order(jobs: Sequence[JobSpec]) -> None:
    for index, job in enumerate(jobs):
        if job.id != index:
            raise ValueError(f"job ids must be 0..n-1 in list order; position {index} holds job {job.id}")
        if index and job.arrival < jobs[index - 1].arrival:
            raise ValueError(f"jobs must be sorted by arrival; job {job.id} arrives before job {job.id - 1}")


def simulate(
    jobs: Sequence[JobSpec],
    policy: Policy,
    cluster: ClusterSpec,
    *,
    seed: int = 0,
    failures: FailureModel | None = None,
    progress: ProgressCallback | None = None,
    preemption: Preemption | None = None,
    watchdog: Watchdog | None = None,
) -> SimResult:
    """Replay ``jobs`` under ``policy``; see ``Simulation``."""
    return Simulation(
        jobs,
        policy,
        cluster,
        seed=seed,
        failures=failures,
        progress=progress,
        preemption=preemption,
        watchdog=watchdog,
    ).run()


__all__ = ["FailureModel", "ProgressCallback", "Simulation", "simulate"]
