"""SRTF and Tiresias' LAS walk only the jobs that can change the grants (``policies.ranking``) and re-rank only
the LAS jobs due to change; a straightforward reference that sorts every job every cycle
(``reference_priority.py``) must give the same schedule: every run's start, end, nodes and outcome."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from reference_priority import ReferenceLas, ReferenceSrtf

from gangplane.simulator.cluster import uniform_cluster
from gangplane.simulator.engine import FailureModel, simulate
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.policies import PolicyOptions, Srtf, TiresiasLas
from gangplane.simulator.policies.base import Policy, policy_preemption
from gangplane.simulator.preemption import Preemption

CLUSTER = uniform_cluster(3, 4)

rows = st.lists(
    st.tuples(
        st.integers(0, 15),
        st.sampled_from([(1, 1), (1, 2), (1, 3), (1, 4), (2, 4), (3, 4), (2, 2), (4, 4)]),
        st.floats(0.5, 60.0, allow_nan=False).map(lambda d: round(d, 2)),
    ),
    min_size=1,
    max_size=30,
)

Runs = list[list[tuple[float, float | None, tuple[str, ...], str]]]


def _replay(policy: Policy, jobs: list[JobSpec], options: PolicyOptions, failures: float) -> Runs:
    result = simulate(
        jobs,
        policy,
        CLUSTER,
        seed=7,
        failures=FailureModel(failures),
        preemption=policy_preemption(policy, options),
    )
    return [
        [(s.start, s.end, s.nodes, s.outcome) for s in r.segments] + [(-1, r.end, (r.rejected,), "")]
        for r in result.records
    ]


def _jobs(raw: list[tuple[int, tuple[int, int], float]]) -> list[JobSpec]:
    arrival, jobs = 0, []
    for i, (gap, (members, per), duration) in enumerate(raw):
        arrival += gap
        jobs.append(JobSpec(i, float(arrival), members, per, duration, "ab"[i % 2]))
    return jobs


@settings(max_examples=80, deadline=None)
@given(
    rows,
    st.sampled_from([(20.0,), (20.0, 80.0), (5.0, 30.0, 200.0)]),
    st.sampled_from([0.0, 0.5, 2.0]),
    st.sampled_from([0.0, 1.5]),
    st.sampled_from([0.0, 0.2]),
)
def test_las_matches_the_full_ranking(
    raw: list[tuple[int, tuple[int, int], float]],
    thresholds: tuple[float, ...],
    starvation: float,
    restart_cost: float,
    failures: float,
) -> None:
    options = PolicyOptions(
        las_thresholds=thresholds, las_starvation=starvation, preemption=Preemption(True, restart_cost)
    )
    jobs = _jobs(raw)
    fast = _replay(TiresiasLas(CLUSTER, options), jobs, options, failures)
    assert fast == _replay(ReferenceLas(CLUSTER, options), jobs, options, failures)


@settings(max_examples=80, deadline=None)
@given(rows, st.booleans(), st.sampled_from([0.0, 1.5]), st.sampled_from([0.0, 0.2]))
def test_srtf_matches_the_full_ranking(
    raw: list[tuple[int, tuple[int, int], float]], checkpoint: bool, restart_cost: float, failures: float
) -> None:
    options = PolicyOptions(preemption=Preemption(checkpoint, restart_cost))
    jobs = _jobs(raw)
    fast = _replay(Srtf(CLUSTER, options), jobs, options, failures)
    assert fast == _replay(ReferenceSrtf(CLUSTER, options), jobs, options, failures)
