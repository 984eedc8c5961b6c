"""``--explain JOB``: why one job waited, in the scheduler's own words, without changing any decision."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from sim_builders import jobs
from test_sim_fast_paths import random_trace, schedule
from typer.testing import CliRunner

from gangplane.simulator.cluster import ClusterSpec, QueueSpec, uniform_cluster
from gangplane.simulator.engine import simulate
from gangplane.simulator.explain import ExplainLog
from gangplane.simulator.policies import PolicyOptions, default_registry

# job 1 (2 x 4 GPUs) waits 100 s behind job 0, which holds one of the two 4-GPU nodes
BLOCKED = jobs((0, 1, 4, 100), (1, 2, 4, 10))


@pytest.mark.parametrize(
    ("policy", "words"),
    [
        ("coscheduling", "pod group sim/j1 needs nvidia.com/gpu=8 free (minResources)"),
        ("volcano", "nvidia.com/gpu=8, 4 in use, 8 more requested"),
        ("kai", "0/2 nodes are available"),
        ("kueue", "insufficient unused quota for nvidia.com/gpu in flavor default, 4 more needed"),
    ],
)
def test_a_blocked_gang_is_explained_until_it_starts(policy: str, words: str) -> None:
    cluster = uniform_cluster(2, 4).with_queues(["default"])
    replay = default_registry()[policy](cluster, PolicyOptions(explain=1))
    result = simulate(BLOCKED, replay, cluster)
    assert result.records[1].start is not None and result.records[1].start >= 100
    reasons = result.explained
    assert reasons and reasons[0].since == 1.0
    assert any(words in reason.message for reason in reasons), reasons
    assert all(reason.until < result.records[1].start for reason in reasons)


def test_kueue_explains_an_admitted_gang_that_fits_no_node() -> None:
    """Quota admits job 2 (6 of 8 GPUs in use), but each node has only 1 GPU left."""
    cluster = ClusterSpec(uniform_cluster(2, 4).nodes, (QueueSpec("default"),))
    replay = default_registry()["kueue"](cluster, PolicyOptions(explain=2))
    result = simulate(jobs((0, 1, 3, 100), (0, 1, 3, 50), (1, 1, 2, 10)), replay, cluster)
    (reason,) = result.explained
    assert reason.status == "Admitted"
    assert "0/2 nodes are available: 2 Insufficient nvidia.com/gpu" in reason.message
    assert (reason.since, result.records[2].start) == (1.0, 50.0)


@pytest.mark.parametrize("policy", ["coscheduling", "volcano", "kai", "kueue"])
def test_explaining_changes_no_decision(policy: str) -> None:
    cluster = uniform_cluster(4, 4).with_queues(["default"])
    work = random_trace(3, count=60)
    plain = simulate(work, default_registry()[policy](cluster, PolicyOptions()), cluster)
    waited = max(plain.records, key=lambda r: (r.start or 0) - r.job.arrival)
    options = PolicyOptions(explain=waited.job.id)
    told = simulate(work, default_registry()[policy](cluster, options), cluster)
    assert schedule(told.records) == schedule(plain.records)
    assert told.explained and plain.explained == ()


def test_repeats_fold_into_one_entry() -> None:
    log = ExplainLog(4)
    for now in (1.0, 2.0, 3.0):
        log.note(now, "Unschedulable", "full")
    log.note(4.0, "Unschedulable", "fuller")
    assert [(r.since, r.until, r.times, r.message) for r in log.reasons] == [
        (1.0, 3.0, 3, "full"),
        (4.0, 4.0, 1, "fuller"),
    ]


def test_cli_prints_the_reasons_per_policy(app: typer.Typer, tmp_path: Path) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_text("arrival,gang_size,gpus_per_member,duration\n0,1,4,100\n1,2,4,10\n")
    args = ["simulate", "--trace", str(trace), "--nodes", "2", "--gpus-per-node", "4", "--no-progress"]
    result = CliRunner().invoke(app, [*args, "-p", "coscheduling", "-p", "fifo", "--explain", "1"])
    assert result.exit_code == 0, result.output
    assert "coscheduling: job 1 arrived 1 s, started 100 s" in result.output
    assert "needs nvidia.com/gpu=8 free (minResources)" in result.output
    assert "(fifo gives no explanations)" in result.output
    wrong = CliRunner().invoke(app, [*args, "--explain", "2"])
    assert wrong.exit_code == 1 and "numbered 0..1" in wrong.output
