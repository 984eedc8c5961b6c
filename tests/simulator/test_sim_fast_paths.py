"""The integration policies' fast paths decide exactly as the passes they shortcut.

Coscheduling hands its scheduler only the gangs that might fit and replays what a failed turn would have
done to the others; this checks the schedule against a variant that hands every waiting gang, on random
traces that leave a long, fragmented waiting line (spread placement, mixed gang shapes, priorities)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from gangplane.simulator.cluster import uniform_cluster
from gangplane.simulator.engine import simulate
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.policies import PolicyOptions
from gangplane.simulator.policies.coscheduling import Coscheduling
from gangplane.simulator.policies.waiting import WaitingBySize

SHAPES = ((1, 1), (1, 2), (1, 4), (2, 4), (1, 3), (3, 2), (4, 4), (2, 1))


class HandEveryGang(Coscheduling):
    """The pass over every waiting gang, as the policy ran before its fast path."""

    def _split(self, now: float) -> tuple[list[JobSpec], list[JobSpec], int]:
        return [], [entry[0] for entry in self._waiting.values()], 0


def random_trace(seed: int, count: int = 120) -> list[JobSpec]:
    rng = np.random.default_rng(seed)
    arrival, out = 0.0, []
    for i in range(count):
        arrival += float(rng.exponential(6.0))
        members, per_member = SHAPES[int(rng.integers(len(SHAPES)))]
        duration = float(rng.integers(5, 200))
        out.append(JobSpec(i, round(arrival), members, per_member, duration, priority=int(rng.integers(2))))
    return out


def schedule(records: Sequence[object]) -> list[tuple[object, ...]]:
    return [(r.start, r.end, tuple(s.nodes for s in r.segments)) for r in records]  # type: ignore[attr-defined]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("placement", [None, "binpack"])
def test_coscheduling_fast_path_matches_a_pass_over_every_gang(seed: int, placement: str | None) -> None:
    cluster = uniform_cluster(4, 4)
    work = random_trace(seed)
    options = PolicyOptions(placement=placement)
    fast = simulate(work, Coscheduling(cluster, options), cluster)
    full = simulate(work, HandEveryGang(cluster, options), cluster)
    assert schedule(fast.records) == schedule(full.records)
    assert all(r.end is not None for r in fast.records)


def test_waiting_by_size_yields_small_enough_jobs_in_id_order() -> None:
    waiting = WaitingBySize()
    work = [JobSpec(i, 0.0, 1, gpus, 1.0) for i, gpus in enumerate((4, 1, 2, 8, 1, 2))]
    for job in reversed(work):  # out of id order, as a preempted job comes back
        waiting.add(job)
    assert [job.id for job in waiting.within(2)] == [1, 2, 4, 5]
    assert [job.id for job in waiting.within(0)] == []
    waiting.remove(work[1])
    waiting.remove(work[3])
    assert [job.id for job in waiting] == [0, 2, 4, 5]
    assert len(waiting) == 4 and waiting
