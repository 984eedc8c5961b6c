"""Research policies on hand-worked cases: Tiresias 2D-LAS (demotion, preemption, starvation guard), SRTF,
DRF across queues, and checkpoint-restart with a restart cost."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane.simulator.bounds import check
from gangplane.simulator.cluster import ClusterSpec, QueueSpec, uniform_cluster
from gangplane.simulator.engine import simulate
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.metrics import summarise
from gangplane.simulator.policies import DominantResourceFairness, PolicyOptions, Srtf, TiresiasLas
from gangplane.simulator.policies.base import policy_preemption
from gangplane.simulator.preemption import Preemption
from gangplane.simulator.timeline import SimResult

ONE_NODE = uniform_cluster(1, 2)


def _runs(result: SimResult) -> list[list[tuple[float, float | None, str, float]]]:
    assert check(result, summarise(result)) == []
    return [[(s.start, s.end, s.outcome, s.work) for s in r.segments] for r in result.records]


def _las(jobs: list[JobSpec], options: PolicyOptions) -> SimResult:
    policy = TiresiasLas(ONE_NODE, options)
    return simulate(jobs, policy, ONE_NODE, preemption=policy_preemption(policy, options))


# One node, 2 GPUs, queue 0 below 10 GPU-s. J0 (2 GPUs, 100 s) reaches 10 GPU-s at 5 and drops to queue 1;
# J1 (2 GPUs, 3 s) arrives at 6 in queue 0, outranks it, and runs 6-9.
DEMOTED = [JobSpec(0, 0.0, 1, 2, 100.0), JobSpec(1, 6.0, 1, 2, 3.0)]


def test_las_demotes_a_long_job_and_lets_a_new_one_preempt_it() -> None:
    runs = _runs(_las(DEMOTED, PolicyOptions(las_thresholds=(10.0,), preemption=Preemption(checkpoint=True))))
    assert runs == [[(0, 6, "preempted", 6), (9, 103, "completed", 94)], [(6, 9, "completed", 3)]]


def test_las_never_demotes_a_job_without_gpus() -> None:
    """Attained service is GPU time: a CPU-only job stays in queue 0 (it used to divide by zero)."""
    jobs = [JobSpec(0, 0.0, 1, 0, 30.0, cpu_per_member=1.0), JobSpec(1, 0.0, 1, 2, 30.0)]
    runs = _runs(_las(jobs, PolicyOptions(las_thresholds=(10.0,), preemption=Preemption(checkpoint=True))))
    assert runs == [[(0, 30, "completed", 30)], [(0, 30, "completed", 30)]]


def test_las_refuses_restart_from_scratch_and_checkpoints_by_default() -> None:
    with pytest.raises(ValueError, match="checkpoint-restart"):
        TiresiasLas(ONE_NODE, PolicyOptions(preemption=Preemption(checkpoint=False)))
    assert policy_preemption(TiresiasLas(ONE_NODE, PolicyOptions()), PolicyOptions()) == Preemption(True, 0.0)


def test_checkpoint_restart_keeps_progress_and_pays_the_restart_cost() -> None:
    """J0 keeps its 6 s, pays 2 s to restart at 9 and needs 94 more: it ends at 105, not 109."""
    options = PolicyOptions(las_thresholds=(10.0,), preemption=Preemption(checkpoint=True, restart_cost=2.0))
    result = _las(DEMOTED, options)
    assert _runs(result)[0] == [(0, 6, "preempted", 6), (9, 105, "completed", 94)]
    assert summarise(result).wasted_gpu_hours * 3600 == pytest.approx(2 * 2)  # the restart, on 2 GPUs


def test_las_starvation_guard_promotes_a_job_that_waited_its_executed_time() -> None:
    """J1 (20 s) reaches queue 1 at 11 and keeps running (a running job keeps its place in its queue); J0
    has executed 6 s and, with K = 1, after waiting 6 s (at 12) goes back to queue 0 and preempts J1. The two
    then alternate every 6 s until J1 finishes (it keeps its progress)."""
    options = PolicyOptions(
        las_thresholds=(10.0,), las_starvation=1.0, preemption=Preemption(checkpoint=True)
    )
    runs = _runs(_las([JobSpec(0, 0.0, 1, 2, 100.0), JobSpec(1, 6.0, 1, 2, 20.0)], options))
    assert [start for start, *_ in runs[0]] == [0, 12, 24, 36, 44]
    assert [start for start, *_ in runs[1]] == [6, 18, 30, 42]
    assert runs[1][-1] == (42, 44, "completed", 2)
    assert runs[0][-1] == (44, 120, "completed", 76)
    without = _runs(
        _las(
            [JobSpec(0, 0.0, 1, 2, 100.0), JobSpec(1, 6.0, 1, 2, 20.0)], PolicyOptions(las_thresholds=(10.0,))
        )
    )
    assert without[1] == [(6, 26, "completed", 20)]


def test_srtf_preempts_for_a_shorter_job() -> None:
    cluster = uniform_cluster(1, 1)
    jobs = [JobSpec(0, 0.0, 1, 1, 10.0), JobSpec(1, 2.0, 1, 1, 3.0)]
    scratch = simulate(jobs, Srtf(cluster, PolicyOptions(preemption=Preemption())), cluster)
    assert _runs(scratch) == [[(0, 2, "preempted", 0), (5, 15, "completed", 10)], [(2, 5, "completed", 3)]]
    assert summarise(scratch).wasted_gpu_hours * 3600 == pytest.approx(2)  # the lost first run
    options = PolicyOptions(preemption=Preemption(checkpoint=True))
    kept = _runs(simulate(jobs, Srtf(cluster, options), cluster, preemption=options.preemption))
    assert kept[0] == [(0, 2, "preempted", 2), (5, 13, "completed", 8)]


def test_drf_offers_the_cluster_to_the_queue_with_the_smallest_dominant_share() -> None:
    """4 GPUs, 40 CPUs. Queue a's jobs are CPU-heavy (1 GPU, 20 CPUs: dominant share CPU), queue b's
    GPU-heavy (1 GPU, 1 CPU). Ties go by name: a0 starts (share 0.5), then b gets the offers while its share
    is smaller: b0 (0.25), b1 (0.5). Tied at 0.5, a is offered first but a1 does not fit the 18 CPUs left, so
    a is passed over and b2 takes the last GPU; a1 and a2 start when the CPUs come back at 10."""
    nodes = uniform_cluster(1, 4).nodes
    cluster = ClusterSpec((type(nodes[0])(nodes[0].name, 4, cpu=40.0),), (QueueSpec("a"), QueueSpec("b")))
    a = [JobSpec(i, 0.0, 1, 1, 10.0, "a", cpu_per_member=20.0) for i in range(3)]
    b = [JobSpec(3 + i, 0.0, 1, 1, 10.0, "b", cpu_per_member=1.0) for i in range(3)]
    result = simulate(a + b, DominantResourceFairness(cluster, PolicyOptions()), cluster)
    assert check(result, summarise(result)) == []
    assert [r.start for r in result.records] == [0, 10, 10, 0, 0, 0]


rows = st.lists(
    st.tuples(
        st.integers(0, 20), st.sampled_from([(1, 1), (1, 2), (1, 4), (2, 4), (3, 4)]), st.integers(1, 40)
    ),
    min_size=1,
    max_size=20,
)


@settings(max_examples=60, deadline=None)
@given(rows, st.booleans())
def test_preemptive_policies_are_sound(raw: list[tuple[int, tuple[int, int], int]], checkpoint: bool) -> None:
    cluster = uniform_cluster(3, 4)
    arrival, jobs = 0, []
    for i, (gap, (members, per), duration) in enumerate(raw):
        arrival += gap
        jobs.append(JobSpec(i, float(arrival), members, per, float(duration), "ab"[i % 2]))
    options = PolicyOptions(
        las_thresholds=(20.0, 80.0), las_starvation=2.0, preemption=Preemption(checkpoint, 1.0)
    )
    for policy in (
        (TiresiasLas, Srtf, DominantResourceFairness) if checkpoint else (Srtf, DominantResourceFairness)
    ):
        instance = policy(cluster, options)
        result = simulate(jobs, instance, cluster, preemption=policy_preemption(instance, options))
        assert check(result, summarise(result)) == [], policy.name
        assert all(r.end is not None for r in result.records), policy.name
