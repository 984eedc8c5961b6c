"""Conservative backfill (Mu'alem & Feitelson 2001): a hand-worked case where it differs from EASY, and its
promise that, with exact estimates and one priority, no job starts later than its first reservation."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_conservative import ListPlanned, OccupationList
from sim_builders import jobs

from gangplane.simulator.bounds import check
from gangplane.simulator.cluster import ClusterSpec, uniform_cluster
from gangplane.simulator.engine import FailureModel, simulate
from gangplane.simulator.jobs import JobSpec, with_estimates
from gangplane.simulator.metrics import summarise
from gangplane.simulator.policies import ConservativeBackfill, EasyBackfill, PolicyOptions
from gangplane.simulator.policies.profile import StepProfile

# 4 single-GPU nodes. (arrival, nodes, 1 GPU each, duration):
#   J0 (0, 3, 10)  J1 (0, 2, 10)  J2 (0, 2, 10)  J3 (1, 1, 20)
# At 0 J0 runs [0,10) on 3 nodes; J1 waits for 10. Conservative plans J1 at [10,20) and J2 beside it at
# [10,20) (J0 gone, 4 nodes free). At 1 J3 fits the free node now, but [1,21) crosses [10,20) where J1 and J2
# hold all 4 nodes, so it is planned at 20 and starts then. EASY protects only the head J1: at the shadow time
# 10 there are 4 free nodes, 2 beyond J1's need, so J3 starts at 1 and J2, which then finds 1 node at 10,
# waits until J1 ends at 20.
FOUR = jobs((0, 3, 1, 10), (0, 2, 1, 10), (0, 2, 1, 10), (1, 1, 1, 20))
CLUSTER = uniform_cluster(4, 1)


def test_conservative_protects_every_reservation_where_easy_protects_the_head() -> None:
    conservative = simulate(FOUR, ConservativeBackfill(CLUSTER, PolicyOptions()), CLUSTER)
    easy = simulate(FOUR, EasyBackfill(CLUSTER, PolicyOptions()), CLUSTER)
    assert [r.start for r in conservative.records] == [0, 10, 10, 20]
    assert [r.end for r in conservative.records] == [10, 20, 20, 40]
    assert [r.start for r in easy.records] == [0, 10, 20, 1]
    for result in (conservative, easy):
        assert check(result, summarise(result)) == []


def test_the_plan_holds_a_reservation_for_every_waiting_job() -> None:
    policy = ConservativeBackfill(CLUSTER, PolicyOptions())
    for job in FOUR[:3]:
        policy.submit(job, 0.0)
    (start,) = policy.schedule(0.0)
    assert start.job_id == 0
    assert {job: start for job, (start, _) in policy.reservations.items()} == {1: 10.0, 2: 10.0}
    policy.submit(FOUR[3], 1.0)
    assert policy.schedule(1.0) == []
    assert {job: start for job, (start, _) in policy.reservations.items()} == {1: 10.0, 2: 10.0, 3: 20.0}


class Recording(ConservativeBackfill):
    def __init__(self, cluster: ClusterSpec) -> None:
        super().__init__(cluster, PolicyOptions())
        self.first: dict[int, float] = {}

    def schedule(self, now: float) -> list:  # type: ignore[override]
        decisions = list(super().schedule(now))
        for job_id, (start, _) in self.reservations.items():
            self.first.setdefault(job_id, start)
        return decisions


rows = st.lists(
    st.tuples(
        st.integers(0, 20),
        st.sampled_from([(1, 1), (1, 2), (1, 4), (2, 4), (3, 4), (2, 2)]),
        st.integers(1, 30),
    ),
    min_size=1,
    max_size=20,
)


@settings(max_examples=100, deadline=None)
@given(rows)
def test_no_job_starts_later_than_its_first_reservation(raw: list[tuple[int, tuple[int, int], int]]) -> None:
    cluster = uniform_cluster(3, 4)
    arrival, specs = 0, []
    for i, (gap, (members, per_member), duration) in enumerate(raw):
        arrival += gap
        specs.append(JobSpec(i, float(arrival), members, per_member, float(duration)))
    policy = Recording(cluster)
    result = simulate(specs, policy, cluster)
    assert check(result, summarise(result)) == []
    for job_id, promised in policy.first.items():
        start = result.records[job_id].start
        assert start is not None and start <= promised, (job_id, start, promised)


class Replanning(ConservativeBackfill):
    """Conservative backfill that plans from scratch every cycle: the reference for the kept plan."""

    def _stale(self, now: float) -> bool:
        return True


@settings(max_examples=100, deadline=None)
@given(rows, st.sampled_from([1.0, 2.0, 0.5]))
def test_keeping_the_plan_gives_the_same_schedule_as_replanning(
    raw: list[tuple[int, tuple[int, int], int]], factor: float
) -> None:
    cluster = uniform_cluster(3, 4)
    arrival, specs = 0, []
    for i, (gap, (members, per_member), duration) in enumerate(raw):
        arrival += gap
        specs.append(JobSpec(i, float(arrival), members, per_member, float(duration), priority=i % 2))
    specs = with_estimates(specs, factor=factor)
    kept = simulate(specs, ConservativeBackfill(cluster, PolicyOptions()), cluster)
    replanned = simulate(specs, Replanning(cluster, PolicyOptions()), cluster)
    assert check(kept, summarise(kept)) == []
    assert [(r.start, r.segments[-1].nodes) for r in kept.records] == [
        (r.start, r.segments[-1].nodes) for r in replanned.records
    ]


@settings(max_examples=100, deadline=None)
@given(rows, st.sampled_from([1.0, 2.0, 0.5]), st.sampled_from([0.0, 0.2]))
def test_the_step_profile_plans_as_the_list_of_occupations(
    raw: list[tuple[int, tuple[int, int], int]], factor: float, failures: float
) -> None:
    """The step-function plan and its filtered scan give the schedule of a plain list of occupations with
    every candidate start tried, node for node, with estimates off, priorities that jump the line and
    failures that end runs early."""
    cluster = uniform_cluster(3, 4)
    arrival, specs = 0, []
    for i, (gap, (members, per_member), duration) in enumerate(raw):
        arrival += gap
        specs.append(JobSpec(i, float(arrival), members, per_member, duration / 2, priority=i % 3))
    specs = with_estimates(specs, factor=factor)
    model = FailureModel(failures)
    fast = simulate(specs, ConservativeBackfill(cluster, PolicyOptions()), cluster, seed=3, failures=model)
    listed = simulate(specs, ListPlanned(cluster, PolicyOptions()), cluster, seed=3, failures=model)
    assert [[(s.start, s.end, s.nodes) for s in r.segments] for r in fast.records] == [
        [(s.start, s.end, s.nodes) for s in r.segments] for r in listed.records
    ]


def test_a_job_fills_a_hole_that_ends_exactly_when_a_reservation_begins() -> None:
    """2 single-GPU nodes: J0 runs [0,5) on one, J1 (both nodes) is planned at [5,15); J2 (one node, 5 s)
    fits the other node for [0,5), ending as J1's reservation begins."""
    cluster = uniform_cluster(2, 1)
    result = simulate(
        jobs((0, 1, 1, 5), (0, 2, 1, 10), (0, 1, 1, 5)),
        ConservativeBackfill(cluster, PolicyOptions()),
        cluster,
    )
    assert [r.start for r in result.records] == [0, 5, 0]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 1), st.integers(0, 30), st.integers(0, 2), st.integers(1, 3)),
        min_size=100,
        max_size=300,
    ),
    st.integers(0, 20),
    st.integers(1, 6),
)
def test_the_step_profile_finds_the_peaks_of_the_list_of_occupations(
    steps: list[tuple[int, int, int, int]], length: int, gpus: int
) -> None:
    """Occupations added and the past forgotten, many more than the profile's first arrays hold (they move
    and grow): every candidate the step profile yields has the list's start and peak, and it skips only
    starts where ``gpus`` are not free in all."""
    capacity = np.full(3, 4)
    step, listed, now = StepProfile(0.0, capacity), OccupationList(0.0, 3), 0.0
    for advance, offset, row, count in steps:
        if advance == 0:
            now += 1.0
            step.forget_before(now)
            listed.forget_before(now)
        start = now + offset / 2
        ends = [listed.now, *listed.ends]
        start = min((end for end in ends if end >= start), default=now)  # a candidate, as reservations are
        for plan in (step, listed):
            plan.add(start, start + count, {row: 1})
    fast = {at: peak.tolist() for at, peak in step.windows(length / 2, gpus)}
    full = {at: peak.tolist() for at, peak in listed.windows(length / 2, gpus)}
    assert list(fast) == [at for at in full if at in fast]  # same order, a subset
    assert all(full[at] == peak for at, peak in fast.items())
    assert all(sum(full[at]) > 12 - gpus for at in full if at not in fast)
