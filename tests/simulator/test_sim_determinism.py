"""Same seed, same result — including a failure model and Poisson arrivals; another seed differs."""

from __future__ import annotations

import pytest

from gangplane.simulator.cluster import uniform_cluster
from gangplane.simulator.compare import run_policies
from gangplane.simulator.engine import FailureModel
from gangplane.simulator.policies import PolicyOptions
from gangplane.simulator.scenario import Scenario, generate

SCENARIO = {
    "name": "mix",
    "seed": 11,
    "cluster": {"nodeGroups": [{"name": "n", "count": 4, "gpus": 8}]},
    "queues": [{"name": "a"}, {"name": "b"}],
    "workloads": [
        {
            "class": "small",
            "queue": "a",
            "count": 80,
            "members": 1,
            "gpusPerMember": 2,
            "duration": {"distribution": "exponential", "mean": 300},
            "arrival": {"poisson": 0.05},
        },
        {
            "class": "large",
            "queue": "b",
            "count": 15,
            "members": 3,
            "gpusPerMember": 8,
            "duration": {"distribution": "lognormal", "median": 900, "sigma": 0.5},
            "arrival": {"every": 120},
        },
    ],
}


def _timelines(seed: int) -> list[list[tuple[object, ...]]]:
    scenario = Scenario.model_validate(SCENARIO)
    jobs = generate(scenario, seed=seed)
    comparison = run_policies(
        jobs,
        scenario.cluster_spec(),
        ["fifo", "backfill"],
        options=PolicyOptions(seed=seed),
        failures=FailureModel(0.2),
    )
    assert all(not o.violations for o in comparison.outcomes)
    return [
        [
            (r.job.arrival, r.job.duration, r.start, r.end, r.failures, tuple(s.nodes for s in r.segments))
            for r in o.result.records
        ]
        for o in comparison.outcomes
    ]


def test_identical_seeds_give_identical_results() -> None:
    assert _timelines(3) == _timelines(3)


def test_another_seed_gives_another_workload() -> None:
    assert _timelines(3) != _timelines(4)


def test_failures_requeue_and_still_finish() -> None:
    scenario = Scenario.model_validate(SCENARIO)
    jobs = generate(scenario)
    cluster = uniform_cluster(4, 8)
    (outcome,) = run_policies(jobs, cluster, ["backfill"], failures=FailureModel(0.5)).outcomes
    assert outcome.summary.failures > 0
    assert outcome.summary.finished == len(jobs)
    assert outcome.violations == []
    failed = [r for r in outcome.result.records if r.failures]
    assert all(r.segments[-1].outcome == "completed" and len(r.segments) == r.failures + 1 for r in failed)


@pytest.mark.parametrize("policy", ["coscheduling", "volcano", "kai", "kueue"])
def test_integration_policies_are_deterministic_and_survive_failures(policy: str) -> None:
    scenario = Scenario.model_validate(
        {**SCENARIO, "workloads": [{**w, "count": 12} for w in SCENARIO["workloads"]]}
    )
    jobs = generate(scenario)

    def run() -> list[tuple[object, ...]]:
        (outcome,) = run_policies(
            jobs, scenario.cluster_spec(), [policy], failures=FailureModel(0.3)
        ).outcomes
        assert outcome.violations == []
        assert outcome.summary.finished == len(jobs)
        return [
            (r.start, r.end, r.failures, tuple(s.nodes for s in r.segments)) for r in outcome.result.records
        ]

    assert run() == run()
