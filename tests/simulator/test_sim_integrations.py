"""Policies that drive an integration's scheduler core: Kueue quota and preemption, Volcano queues,
Coscheduling gangs — each run end to end in the engine and checked by the bounds checker."""

from __future__ import annotations

import numpy as np
import pytest
from sim_builders import jobs

import gangplane.simulator.policies as policies
from gangplane.simulator.bounds import check
from gangplane.simulator.cluster import ClusterSpec, QueueSpec, uniform_cluster
from gangplane.simulator.compare import run_policies
from gangplane.simulator.engine import simulate
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.metrics import busy_series, summarise
from gangplane.simulator.policies import PolicyOptions, default_registry
from gangplane.simulator.policies.kueue import KueueBestEffortFifo


def test_registry_order_and_exports() -> None:
    assert list(default_registry()) == [
        "fifo",
        "backfill",
        "conservative",
        "las",
        "srtf",
        "drf",
        "coscheduling",
        "volcano",
        "kai",
        "kueue",
    ]
    assert sorted(policies.__all__) == policies.__all__


def test_registry_rejects_duplicates() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        policies.merge_registries(default_registry(), {"fifo": policies.StrictFifo})


def _peak_gpus(records: list, queue: str) -> float:
    mine = [r for r in records if r.job.queue == queue]
    return float(np.max(busy_series(mine)[1]))


def test_kueue_nominal_quota_caps_a_queue() -> None:
    """Queue a may hold 4 GPUs (no cohort, so no borrowing) although 8 are free."""
    cluster = ClusterSpec(uniform_cluster(2, 4).nodes, (QueueSpec("a", nominal_gpus=4), QueueSpec("b")))
    work = jobs(*[(0, 1, 2, 10, "a")] * 4, (0, 1, 2, 10, "b"))
    result = simulate(work, KueueBestEffortFifo(cluster, PolicyOptions()), cluster)
    assert check(result, summarise(result)) == []
    assert _peak_gpus(list(result.records), "a") == 4
    assert [r.start for r in result.records] == [0, 0, 11, 11, 0]  # freed at 10, requeued after the 1 s batch
    assert all(r.admitted == r.start for r in result.records)


def test_kueue_preempts_lower_priority_within_the_queue() -> None:
    cluster = ClusterSpec(uniform_cluster(1, 4).nodes, (QueueSpec("a", nominal_gpus=4),))
    low = JobSpec(0, 0.0, 1, 4, 100.0, "a", priority=0)
    high = JobSpec(1, 10.0, 1, 4, 20.0, "a", priority=10)
    result = simulate([low, high], KueueBestEffortFifo(cluster, PolicyOptions()), cluster)
    assert check(result, summarise(result)) == []
    first, second = result.records
    assert (second.start, second.end) == (10, 30)
    assert first.preemptions == 1 and [s.outcome for s in first.segments] == ["preempted", "completed"]
    assert first.end == first.segments[-1].start + 100


def test_kueue_borrowing_in_a_cohort() -> None:
    queues = (QueueSpec("a", nominal_gpus=4, cohort="c"), QueueSpec("b", nominal_gpus=4, cohort="c"))
    cluster = ClusterSpec(uniform_cluster(2, 4).nodes, queues)
    result = simulate(jobs(*[(0, 1, 2, 10, "a")] * 4), KueueBestEffortFifo(cluster, PolicyOptions()), cluster)
    assert [r.start for r in result.records] == [0, 0, 0, 0]  # a borrows b's unused 4 GPUs


@pytest.mark.parametrize("policy", ["coscheduling", "volcano", "kai", "kueue"])
def test_gangs_start_whole_or_not_at_all(policy: str) -> None:
    work = jobs((0, 2, 4, 50), (1, 1, 4, 10), (2, 3, 4, 5), (3, 1, 1, 7))
    (outcome,) = run_policies(work, uniform_cluster(3, 4), [policy]).outcomes
    assert outcome.violations == []
    assert outcome.summary.finished == 4
    assert [len(r.segments[-1].nodes) for r in outcome.result.records] == [2, 1, 3, 1]


def test_volcano_weighted_queues_share_the_cluster() -> None:
    queues = (QueueSpec("a", weight=3), QueueSpec("b", weight=1))
    cluster = ClusterSpec(uniform_cluster(2, 4).nodes, queues)
    work = jobs(*[(0, 1, 1, 30, "a")] * 10, *[(0, 1, 1, 30, "b")] * 10)
    (outcome,) = run_policies(work, cluster, ["volcano"]).outcomes
    assert outcome.violations == []
    assert outcome.summary.finished == 20


def test_kai_reclaims_for_a_queue_below_its_quota() -> None:
    """Queue a fills the cluster while b is idle; b's job then reclaims its 4-GPU quota from a."""
    queues = (QueueSpec("a", nominal_gpus=4), QueueSpec("b", nominal_gpus=4))
    cluster = ClusterSpec(uniform_cluster(2, 4).nodes, queues)
    work = jobs((0, 1, 4, 100, "a"), (0, 1, 4, 100, "a"), (10, 1, 4, 20, "b"))
    (outcome,) = run_policies(work, cluster, ["kai"]).outcomes
    assert outcome.violations == []
    assert outcome.summary.finished == 3
    assert outcome.summary.preemptions == 1
    reclaimed = outcome.result.records[2]
    assert reclaimed.start is not None and reclaimed.start <= 12  # within a schedule period or two


@pytest.mark.parametrize("name", ["coscheduling", "volcano", "kai"])
def test_integration_policies_run_the_scheduler_loops_own_pass(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One pass, every shell: the simulator's cycles go through ``schedulers.loop.run_pass``."""
    import gangplane.schedulers.loop as loop
    import gangplane.simulator.policies.shell as shell

    calls: list[float] = []

    def counting(now: float, *args: object, **kwargs: object) -> loop.PassResult:
        calls.append(now)
        return loop.run_pass(now, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(shell, "run_pass", counting)
    cluster = uniform_cluster(2, 4)
    result = simulate(
        jobs((0, 2, 4, 10), (1, 1, 2, 5)), default_registry()[name](cluster, PolicyOptions()), cluster
    )
    assert all(r.end is not None for r in result.records)
    assert calls and calls[0] == 0.0


def test_a_binding_of_a_pod_that_is_not_pending_is_refused() -> None:
    """The pass validates bindings for the simulator as it does for the live loop."""
    from gangplane.schedulers.base import CycleResult
    from gangplane.schedulers.core.gang import Binding
    from gangplane.simulator.placement import GangPlacer
    from gangplane.simulator.policies.shell import one_pass

    class Rogue:
        name = "rogue"
        watches = ()

        def group_of(self, pod: object) -> None:
            return None

        def cycle(self, view: object) -> CycleResult:
            return CycleResult(bindings=[Binding("sim/nobody-0", "node-000")])

    placer = GangPlacer(uniform_cluster(1, 4))
    with pytest.raises(ValueError, match="not a pending pod"):
        one_pass(placer, Rogue(), 0.0, [], {})
    assert placer.free_gpus().tolist() == [4]


@pytest.mark.parametrize("name", ["volcano", "kai"])
def test_a_pass_that_only_started_gangs_asks_for_no_follow_up_pass(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gangs moving to Running leave nothing a pass without a new event could do (no victim to wait for, no
    gang admitted and still waiting), so the shell runs passes at the trace's events only; the waiting
    gangs start as each one before them ends."""
    import gangplane.schedulers.loop as loop
    import gangplane.simulator.policies.shell as shell

    calls: list[float] = []

    def counting(now: float, *args: object, **kwargs: object) -> loop.PassResult:
        calls.append(now)
        return loop.run_pass(now, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(shell, "run_pass", counting)
    cluster = uniform_cluster(1, 4)
    work = jobs((0, 1, 4, 10), (0, 1, 4, 10), (0, 1, 4, 10))
    result = simulate(work, default_registry()[name](cluster, PolicyOptions()), cluster)
    assert [r.start for r in result.records] == [0.0, 10.0, 20.0]
    assert calls == [0.0, 10.0, 20.0]
