"""Invariants on random workloads (hypothesis): sound schedules, FIFO order, and EASY's promise that
backfilling never delays the head past the shadow time it was given."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane.simulator.bounds import check
from gangplane.simulator.cluster import uniform_cluster
from gangplane.simulator.engine import simulate
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.metrics import summarise
from gangplane.simulator.policies import EasyBackfill, PolicyOptions, StrictFifo
from gangplane.simulator.policies.backfill import Reservation

CLUSTER = uniform_cluster(3, 4)

job_rows = st.lists(
    st.tuples(
        st.integers(0, 40),  # arrival gap
        st.sampled_from([(1, 1), (1, 2), (1, 4), (2, 4), (3, 4), (2, 2), (4, 1)]),
        st.integers(1, 30),  # duration
        st.integers(0, 2),  # priority
    ),
    min_size=1,
    max_size=25,
)


def _jobs(rows: list[tuple[int, tuple[int, int], int, int]]) -> list[JobSpec]:
    arrival, out = 0, []
    for i, (gap, (members, per_member), duration, priority) in enumerate(rows):
        arrival += gap
        out.append(JobSpec(i, float(arrival), members, per_member, float(duration), priority=priority))
    return out


class RecordingBackfill(EasyBackfill):
    """Backfill that remembers every reservation it made."""

    def __init__(self) -> None:
        super().__init__(CLUSTER, PolicyOptions(backfill_depth=3))
        self.promised: list[Reservation] = []

    def _reserve(self, head: JobSpec, now: float) -> Reservation | None:
        before = self.reservation
        reservation = super()._reserve(head, now)
        if reservation is not None and reservation is not before:
            self.promised.append(reservation)
        return reservation


@settings(max_examples=120, deadline=None)
@given(job_rows)
def test_schedules_are_sound(rows: list[tuple[int, tuple[int, int], int, int]]) -> None:
    jobs = _jobs(rows)
    for policy in (
        StrictFifo(CLUSTER, PolicyOptions()),
        EasyBackfill(CLUSTER, PolicyOptions(backfill_depth=2)),
    ):
        result = simulate(jobs, policy, CLUSTER)
        assert check(result, summarise(result)) == []
        assert all(r.end is not None for r in result.records)


@settings(max_examples=120, deadline=None)
@given(job_rows)
def test_fifo_starts_jobs_in_queue_order_among_those_waiting(
    rows: list[tuple[int, tuple[int, int], int, int]],
) -> None:
    """A job never starts while a job ahead of it in queue order is still waiting."""
    result = simulate(_jobs(rows), StrictFifo(CLUSTER, PolicyOptions()), CLUSTER)
    for a in result.records:
        for b in result.records:
            ahead = (-a.job.priority, a.job.arrival, a.job.id) < (-b.job.priority, b.job.arrival, b.job.id)
            if ahead and a.job.arrival <= b.start:  # a was waiting-or-running when b started
                assert a.start <= b.start, (a.job, b.job)


@settings(max_examples=150, deadline=None)
@given(job_rows)
def test_backfill_never_delays_a_reserved_head(rows: list[tuple[int, tuple[int, int], int, int]]) -> None:
    """Unless a higher-priority job arrives and takes the head's place in the line (as in Slurm)."""
    policy = RecordingBackfill()
    result = simulate(_jobs(rows), policy, CLUSTER)
    for reservation in policy.promised:
        head = result.records[reservation.head.id]
        assert head.start is not None
        overtaken = any(
            r.job.priority > head.job.priority and r.job.arrival <= head.start for r in result.records
        )
        assert head.start <= reservation.shadow or overtaken, reservation


@settings(max_examples=100, deadline=None)
@given(job_rows)
def test_backfill_mean_wait_with_one_priority_never_delays_the_first_head(
    rows: list[tuple[int, tuple[int, int], int, int]],
) -> None:
    """With one priority level, the first job ever blocked starts no later under backfill than under FIFO."""
    jobs = [JobSpec(j.id, j.arrival, j.members, j.gpus_per_member, j.duration) for j in _jobs(rows)]
    fifo = simulate(jobs, StrictFifo(CLUSTER, PolicyOptions()), CLUSTER)
    backfill = simulate(jobs, EasyBackfill(CLUSTER, PolicyOptions()), CLUSTER)
    waited = [r.job.id for r in fifo.records if r.start is not None and r.start > r.job.arrival]
    if waited:
        first = waited[0]
        assert backfill.records[first].start <= fifo.records[first].start
