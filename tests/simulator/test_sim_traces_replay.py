"""Trace replays against the reference traces: lower bounds for every policy, FIFO versus backfill."""

from __future__ import annotations

from pathlib import Path

import pytest

from gangplane.simulator.cluster import uniform_cluster
from gangplane.simulator.compare import run_policies
from gangplane.simulator.policies import default_registry
from gangplane.simulator.traces import load_philly, load_tiresias

TIRESIAS_MEAN_DURATION = 10_705 / 60  # performance-anchors.md §2.2
TIRESIAS_LONGEST_JOB_BOUND = 3_271.0  # §4 worked example


@pytest.mark.parametrize("nodes", [16, 4, 3], ids=["16x4 (anchor)", "4x4 (queueing)", "3x4 (overload)"])
def test_tiresias_every_policy_respects_the_bounds(tiresias_csv: Path, nodes: int) -> None:
    jobs = load_tiresias(tiresias_csv, gpus_per_node=4)
    comparison = run_policies(jobs, uniform_cluster(nodes, 4), list(default_registry()))
    assert comparison.bounds.longest_job == TIRESIAS_LONGEST_JOB_BOUND
    assert comparison.bounds.mean_duration == pytest.approx(TIRESIAS_MEAN_DURATION)
    for outcome in comparison.outcomes:
        assert outcome.violations == [], outcome.summary.policy
        assert outcome.summary.finished == 60
        assert outcome.summary.makespan >= TIRESIAS_LONGEST_JOB_BOUND
        assert outcome.summary.mean_jct >= TIRESIAS_MEAN_DURATION - 1e-9


def test_tiresias_on_64_gpus_nobody_waits(tiresias_csv: Path) -> None:
    """16 x 4 GPUs hold the whole 60-job trace: both orders meet the bounds exactly."""
    jobs = load_tiresias(tiresias_csv, gpus_per_node=4)
    comparison = run_policies(jobs, uniform_cluster(16, 4), ["fifo", "backfill"])
    for outcome in comparison.outcomes:
        assert outcome.summary.mean_jct == pytest.approx(TIRESIAS_MEAN_DURATION)
        assert outcome.summary.makespan == TIRESIAS_LONGEST_JOB_BOUND


@pytest.mark.parametrize("nodes", [16, 4, 3])
def test_tiresias_backfill_mean_jct_is_at_most_fifo(tiresias_csv: Path, nodes: int) -> None:
    jobs = load_tiresias(tiresias_csv, gpus_per_node=4)
    fifo, backfill = run_policies(jobs, uniform_cluster(nodes, 4), ["fifo", "backfill"]).outcomes
    assert backfill.summary.mean_jct <= fifo.summary.mean_jct
    assert backfill.summary.mean_wait <= fifo.summary.mean_wait
    if nodes < 16:  # with queueing, backfill is strictly better
        assert backfill.summary.mean_jct < fifo.summary.mean_jct


def test_philly_vc_ee9e8c_backfill_beats_fifo(philly_csv: Path) -> None:
    """The gang-heavy VC on 128 GPUs in 8-GPU nodes (offered load about 0.91): both policies reported."""
    jobs = load_philly(philly_csv, gpus_per_node=8, vc="ee9e8c")
    assert len(jobs) == 1_511
    fifo, backfill = run_policies(jobs, uniform_cluster(16, 8), ["fifo", "backfill"]).outcomes
    for outcome in (fifo, backfill):
        assert outcome.violations == []
        assert outcome.summary.finished == 1_511
    assert backfill.summary.utilisation > fifo.summary.utilisation
    assert backfill.summary.utilisation_backlogged > fifo.summary.utilisation_backlogged
    assert backfill.summary.mean_jct < fifo.summary.mean_jct
    assert backfill.summary.makespan <= fifo.summary.makespan
