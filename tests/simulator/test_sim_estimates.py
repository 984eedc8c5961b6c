"""Run-time estimates: what planners see (``expected``), and time limits that kill a run, as Slurm does."""

from __future__ import annotations

import pytest

from gangplane.simulator.bounds import check
from gangplane.simulator.cluster import uniform_cluster
from gangplane.simulator.engine import simulate
from gangplane.simulator.jobs import JobSpec, with_estimates
from gangplane.simulator.metrics import summarise
from gangplane.simulator.policies import EasyBackfill, PolicyOptions

CLUSTER = uniform_cluster(2, 1)


def test_exact_estimates_are_the_durations() -> None:
    jobs = [JobSpec(0, 0.0, 1, 1, 10.0)]
    assert with_estimates(jobs) is jobs
    assert jobs[0].expected == 10.0 and jobs[0].run_length == 10.0


def test_a_factor_scales_estimates_without_limits() -> None:
    (job,) = with_estimates([JobSpec(0, 0.0, 1, 1, 10.0)], factor=2.5)
    assert job.expected == 25.0 and job.limit is None and job.run_length == 10.0


def test_trace_estimates_are_requested_times_and_kill_at_them() -> None:
    jobs = [JobSpec(0, 0.0, 1, 1, 10.0, requested=4.0), JobSpec(1, 0.0, 1, 1, 3.0, requested=8.0)]
    jobs.append(JobSpec(2, 0.0, 1, 1, 6.0))  # no requested time: stays exact
    estimated = with_estimates(jobs, "trace")
    assert [(j.expected, j.limit) for j in estimated] == [(4.0, 4.0), (8.0, 8.0), (6.0, None)]
    result = simulate(estimated, EasyBackfill(CLUSTER, PolicyOptions()), CLUSTER)
    assert [(r.start, r.end, r.killed) for r in result.records] == [
        (0, 4, True),
        (0, 3, False),
        (3, 9, False),
    ]
    assert result.records[0].segments[-1].outcome == "killed"
    assert check(result, summarise(result)) == []


def test_an_overestimate_keeps_a_job_from_backfilling() -> None:
    """2 nodes. The head J1 (2 nodes) waits for J0 (ends at 10): shadow time 10, no extra node. J2 (1 node,
    runs 8 s) fits the free node; exactly estimated it ends by 10 and starts at once, but with its requested
    20 s it would run past the shadow time, so it waits until the head has run (10-15)."""
    jobs = [
        JobSpec(0, 0.0, 1, 1, 10.0, requested=10.0),
        JobSpec(1, 0.0, 2, 1, 5.0, requested=5.0),
        JobSpec(2, 0.0, 1, 1, 8.0, requested=20.0),
    ]
    exact = simulate(with_estimates(jobs), EasyBackfill(CLUSTER, PolicyOptions()), CLUSTER)
    requested = simulate(with_estimates(jobs, "trace"), EasyBackfill(CLUSTER, PolicyOptions()), CLUSTER)
    assert [r.start for r in exact.records] == [0, 10, 0]
    assert [r.start for r in requested.records] == [0, 10, 15]


@pytest.mark.parametrize(("source", "factor"), [("guess", 1.0), ("exact", 0.0), ("exact", float("nan"))])
def test_bad_estimate_options(source: str, factor: float) -> None:
    with pytest.raises(ValueError):
        with_estimates([JobSpec(0, 0.0, 1, 1, 1.0)], source, factor)
