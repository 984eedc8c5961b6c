"""EASY backfill against Lifka's counting rule, job for job.

On identical single-GPU nodes node identity cannot matter, so gangplane's gang-aware EASY (placements through
``schedulers.core``, reservations that move to keep room for backfill) must give exactly the start times of
the textbook rule, written here independently with node counts only (Lifka 1995; Mu'alem & Feitelson 2001,
section 2): start heads while they fit; the blocked head's shadow time is the first expected end at which
enough nodes are free, ``extra`` the nodes free then beyond its need; in queue order a waiting job starts if
it fits now and either ends by the shadow time or needs no more than ``extra`` (which it then uses up).
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane.simulator.cluster import uniform_cluster
from gangplane.simulator.engine import simulate
from gangplane.simulator.jobs import JobSpec, with_estimates
from gangplane.simulator.policies import EasyBackfill, PolicyOptions

Row = tuple[float, int, float]  # arrival, nodes, duration


class CountingEasy:
    """Counting EASY over ``nodes`` identical nodes; runs are planned with ``factor * duration``."""

    def __init__(
        self, rows: list[Row], nodes: int, factor: float, priorities: list[int] | None = None
    ) -> None:
        self.rows, self.nodes, self.factor = rows, nodes, factor
        self.priorities = priorities or [0] * len(rows)
        self.starts: list[float] = [-1.0] * len(rows)
        self.running: dict[int, tuple[float, float]] = {}  # job -> (actual end, expected end)
        self.waiting: list[int] = []
        self.now, self.free = 0.0, nodes

    def start(self, job: int) -> None:
        size, duration = self.rows[job][1], self.rows[job][2]
        self.starts[job] = self.now
        self.running[job] = (self.now + duration, self.now + self.factor * duration)
        self.waiting.remove(job)
        self.free -= size

    def cycle(self) -> None:
        rows = self.rows
        while self.waiting and rows[self.waiting[0]][1] <= self.free:
            self.start(self.waiting[0])
        if not self.waiting:
            return
        shadow, extra = _shadow(self.running, rows, self.free, rows[self.waiting[0]][1], self.now)
        for job in list(self.waiting[1:]):
            size, duration = rows[job][1], rows[job][2]
            if size > self.free:
                continue
            if self.now + self.factor * duration <= shadow:
                self.start(job)
            elif size <= extra:
                self.start(job)
                extra -= size

    def run(self) -> list[float]:
        rows, arrived = self.rows, 0
        while arrived < len(rows) or self.running:
            ends = [end for end, _ in self.running.values()]
            self.now = min(ends + ([rows[arrived][0]] if arrived < len(rows) else []))
            self.running = {j: ends for j, ends in self.running.items() if ends[0] > self.now}
            while arrived < len(rows) and rows[arrived][0] == self.now:
                self.waiting.append(arrived)
                arrived += 1
            self.waiting.sort(key=lambda j: (-self.priorities[j], rows[j][0], j))  # Kueue StrictFIFO order
            self.free = self.nodes - sum(rows[j][1] for j in self.running)
            self.cycle()
        return self.starts


def reference_easy(
    rows: list[Row], nodes: int, factor: float = 1.0, priorities: list[int] | None = None
) -> list[float]:
    """Start time of every job under counting EASY."""
    return CountingEasy(rows, nodes, factor, priorities).run()


def _shadow(
    running: dict[int, tuple[float, float]], rows: list[Row], free: int, need: int, now: float
) -> tuple[float, int]:
    ends = sorted((max(expected, now), rows[j][1]) for j, (_, expected) in running.items())
    for i, (end, size) in enumerate(ends):
        free += size
        if i + 1 < len(ends) and ends[i + 1][0] == end:
            continue
        if free >= need:
            return end, free - need
    raise AssertionError("every job fits the empty cluster")


def _jobs(rows: list[Row], priorities: list[int] | None = None) -> list[JobSpec]:
    ranks = priorities or [0] * len(rows)
    return [
        JobSpec(i, arrival, size, 1, duration, priority=ranks[i])
        for i, (arrival, size, duration) in enumerate(rows)
    ]


def _gangplane(
    rows: list[Row], nodes: int, factor: float = 1.0, priorities: list[int] | None = None
) -> list[float]:
    cluster = uniform_cluster(nodes, 1)
    jobs = with_estimates(_jobs(rows, priorities), factor=factor)
    result = simulate(jobs, EasyBackfill(cluster, PolicyOptions()), cluster)
    return [r.start if r.start is not None else -1.0 for r in result.records]


def _random_rows(rng: random.Random, count: int, nodes: int) -> list[Row]:
    arrival, rows = 0.0, []
    for _ in range(count):
        arrival += rng.choice([0, 0, 1, 2, 5, 10])
        size = rng.choice([1, 1, 1, 2, 3, 4, nodes // 2, nodes - 3, nodes])
        rows.append((arrival, size, float(rng.randint(1, 60))))
    return rows


def test_a_late_job_takes_the_extra_node_the_reservation_leaves() -> None:
    """The issue's case: 16 nodes; the head needs 12, 1 node is free now and 13 at the shadow time, so a
    1-node job that runs past the shadow time may start at once on the extra node."""
    rows: list[Row] = [(0, 15, 10), (0, 12, 5), (0, 1, 100)]
    assert reference_easy(rows, 16) == [0, 10, 0]
    assert _gangplane(rows, 16) == [0, 10, 0]


def test_a_higher_priority_arrival_that_starts_ahead_of_the_head_moves_its_shadow_time() -> None:
    """Found by hypothesis: the 8-node head reserved t=2 at t=0; at t=1 a priority-1 arrival jumps the line and
    starts, so the head's shadow time moves to t=3 and the 2-second job behind it may backfill at t=1."""
    rows: list[Row] = [(0, 1, 1), (0, 1, 1), (0, 1, 1), (0, 1, 2), (0, 8, 1), (1, 1, 2), (1, 1, 2)]
    priorities = [0, 0, 0, 0, 0, 0, 1]
    assert reference_easy(rows, 8, priorities=priorities) == [0, 0, 0, 0, 3, 1, 1]
    assert _gangplane(rows, 8, priorities=priorities) == [0, 0, 0, 0, 3, 1, 1]


def test_three_hundred_random_jobs_start_exactly_as_counting_easy() -> None:
    for seed in range(3):
        rows = _random_rows(random.Random(seed), 300, 16)
        assert _gangplane(rows, 16) == reference_easy(rows, 16), seed


def test_overestimated_runs_start_exactly_as_counting_easy() -> None:
    """Planned with twice the true run time: jobs end early and the reservation must be recomputed."""
    for seed in range(2):
        rows = _random_rows(random.Random(100 + seed), 200, 16)
        assert _gangplane(rows, 16, factor=2.0) == reference_easy(rows, 16, factor=2.0), seed


rows_strategy = st.lists(
    st.tuples(st.sampled_from([0, 0, 1, 3, 7]), st.integers(1, 8), st.integers(1, 30)),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(rows_strategy, st.sampled_from([1.0, 1.5, 3.0]))
def test_random_traces_start_exactly_as_counting_easy(raw: list[tuple[int, int, int]], factor: float) -> None:
    arrival, rows = 0.0, []
    for gap, size, duration in raw:
        arrival += gap
        rows.append((arrival, size, float(duration)))
    assert _gangplane(rows, 8, factor) == reference_easy(rows, 8, factor)


@settings(max_examples=100, deadline=None)
@given(rows_strategy, st.data())
def test_random_traces_with_priorities_start_exactly_as_counting_easy(
    raw: list[tuple[int, int, int]], data: st.DataObject
) -> None:
    """Higher-priority arrivals jump the line (and may take the head's place), as in Kueue's StrictFIFO."""
    arrival, rows = 0.0, []
    for gap, size, duration in raw:
        arrival += gap
        rows.append((arrival, size, float(duration)))
    priorities = data.draw(st.lists(st.integers(0, 2), min_size=len(rows), max_size=len(rows)))
    assert _gangplane(rows, 8, priorities=priorities) == reference_easy(rows, 8, priorities=priorities)
