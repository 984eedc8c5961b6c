"""A replay never hangs: the engine's watchdog (``simulator.stall``) stops one that makes no progress, names
the stuck jobs, and the CLI exits non-zero through its unfinished-jobs path. Inputs that used to loop
forever are generated here: LAS with a restart cost and the starvation guard (fixed: a restart is not
attained service), every run failing, and KAI reclaiming for a job that never gets the room (upstream KAI
churns the same way; the watchdog ends it)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import typer
from typer.testing import CliRunner

from gangplane.simulator.cluster import ClusterSpec, QueueSpec, uniform_cluster
from gangplane.simulator.engine import FailureModel, simulate
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.policies import PolicyOptions, TiresiasLas, default_registry
from gangplane.simulator.policies.base import Decision, Preempt, Start, policy_preemption
from gangplane.simulator.policies.fifo import StrictFifo as Fifo
from gangplane.simulator.preemption import Preemption
from gangplane.simulator.stall import Watchdog

SHAPES = [(1, 1), (1, 2), (1, 3), (1, 4), (2, 4), (3, 4), (2, 2), (4, 4)]


def contended_las(seed: int) -> tuple[list[JobSpec], PolicyOptions]:
    """Up to 14 small gangs on 3 x 4 GPUs, LAS with low thresholds, the starvation guard and a restart cost
    often longer than a queue's slice (threshold / GPUs): before the fix, seeds 9 and 12 (among others)
    ping-ponged forever, every resumed run demoted while still restarting."""
    r = random.Random(seed)
    arrival, jobs = 0, []
    for i in range(r.randint(1, 14)):
        arrival += r.randint(0, 15)
        members, per = r.choice(SHAPES)
        jobs.append(JobSpec(i, float(arrival), members, per, round(r.uniform(0.5, 60), 2), "ab"[i % 2]))
    options = PolicyOptions(
        las_thresholds=r.choice([(20.0,), (20.0, 80.0), (5.0, 30.0, 200.0), (1.0,)]),
        las_starvation=r.choice([0.5, 1.0, 2.0]),
        preemption=Preemption(True, r.choice([0.5, 1.5, 5.0, 30.0])),
    )
    return jobs, options


def test_las_with_a_restart_cost_and_the_starvation_guard_finishes_every_job() -> None:
    cluster = uniform_cluster(3, 4)
    for seed in range(40):
        jobs, options = contended_las(seed)
        policy = TiresiasLas(cluster, options)
        result = simulate(jobs, policy, cluster, preemption=policy_preemption(policy, options))
        assert result.stall is None, (seed, result.stall.message())
        assert all(r.end is not None or r.rejected for r in result.records), seed


def test_las_restart_cost_is_not_attained_service() -> None:
    """One node, 2 GPUs, queue 0 below 10 GPU-s (a 5 s slice), restart cost 6 s, K = 1. J0 runs 0-6 and is
    demoted at 5; J1 arrives at 6 and preempts it. Each resumed run pays 6 s and then gets its whole 5 s
    slice of progress before it is demoted: progress every run, and both jobs end."""
    options = PolicyOptions(las_thresholds=(10.0,), las_starvation=1.0, preemption=Preemption(True, 6.0))
    cluster = uniform_cluster(1, 2)
    policy = TiresiasLas(cluster, options)
    jobs = [JobSpec(0, 0.0, 1, 2, 30.0), JobSpec(1, 6.0, 1, 2, 20.0)]
    result = simulate(jobs, policy, cluster, preemption=policy_preemption(policy, options))
    assert result.stall is None and all(r.end is not None for r in result.records)
    resumed = [s for r in result.records for s in r.segments[1:] if s.outcome == "preempted"]
    assert resumed and all(s.work >= 5.0 - 1e-9 for s in resumed)


def test_a_run_where_every_run_fails_is_stopped_naming_its_jobs() -> None:
    cluster = uniform_cluster(1, 4)
    jobs = [JobSpec(0, 0.0, 1, 4, 10.0), JobSpec(1, 0.0, 1, 4, 10.0)]
    result = simulate(jobs, Fifo(cluster, PolicyOptions()), cluster, failures=FailureModel(1.0))
    assert result.stall is not None and result.stall.kind == "starts"
    assert result.stall.waiting == (0, 1) and result.stall.cycling == (0,)  # the failed head goes first again
    assert "no progress" in result.stall.message() and "unfinished: 0, 1" in result.stall.message()
    assert all(r.end is None for r in result.records)


class PingPong:
    """A test double: two gangs that each need the whole cluster evict each other every second."""

    name = "pingpong"

    def __init__(self, cluster: ClusterSpec) -> None:
        self.nodes = tuple(node.name for node in cluster.nodes)
        self.running: int | None = None
        self.waiting: list[int] = []

    def submit(self, job: JobSpec, now: float) -> None:
        self.waiting.append(job.id)

    def release(self, job_id: int, now: float) -> None:
        self.running = None

    def schedule(self, now: float) -> Sequence[Decision]:
        decisions: list[Decision] = []
        if self.running is not None:
            decisions.append(Preempt(self.running))
            self.waiting.append(self.running)
        self.running = self.waiting.pop(0) if self.waiting else None
        if self.running is not None:
            decisions.append(Start(self.running, self.nodes[:1]))
        return decisions

    def next_cycle(self, now: float) -> float | None:
        return now + 1.0


class Sleeper(PingPong):
    """A test double: wakes every second and never starts anything."""

    def schedule(self, now: float) -> Sequence[Decision]:
        return []


def test_the_watchdog_stops_a_policy_that_ping_pongs() -> None:
    cluster = uniform_cluster(1, 1)
    jobs = [JobSpec(0, 0.0, 1, 1, 100.0), JobSpec(1, 0.0, 1, 1, 100.0)]
    result = simulate(jobs, PingPong(cluster), cluster, watchdog=Watchdog(start_budget=50, per_job=0))
    assert result.stall is not None and result.stall.kind == "starts"
    assert result.stall.starts == 51 and result.stall.cycling == (0, 1)
    assert result.stall.since == 0.0 and result.stall.at == 50.0


def test_the_watchdog_stops_a_policy_that_never_starts_its_jobs() -> None:
    cluster = uniform_cluster(1, 1)
    jobs = [JobSpec(0, 0.0, 1, 1, 10.0), JobSpec(1, 3.0, 1, 1, 10.0)]
    result = simulate(jobs, Sleeper(cluster), cluster, watchdog=Watchdog(idle_cycles=20))
    assert result.stall is not None and result.stall.kind == "idle"
    assert result.stall.since == 3.0 and result.stall.at == 23.0  # 21 idle cycles after the last arrival
    assert result.stall.waiting == (0, 1) and result.stall.cycling == ()


def test_progress_resets_the_watchdog() -> None:
    """Every job here is started and undone by the same double, but a new arrival every 10 s counts as
    progress; after the last one it stalls."""
    cluster = uniform_cluster(1, 1)
    jobs = [JobSpec(i, 10.0 * i, 1, 1, 100.0) for i in range(6)]
    result = simulate(jobs, PingPong(cluster), cluster, watchdog=Watchdog(start_budget=15, per_job=0))
    assert result.stall is not None and result.stall.since == 50.0


def test_a_long_job_under_a_periodic_scheduler_is_not_a_stall() -> None:
    """A job running alone for a long time while the policy wakes every second: nothing to stop."""

    class Periodic(Fifo):
        def next_cycle(self, now: float) -> float | None:
            return now + 1.0 if now < 5000 else None

    cluster = uniform_cluster(1, 1)
    jobs = [JobSpec(0, 0.0, 1, 1, 3000.0), JobSpec(1, 0.0, 1, 1, 1000.0)]
    result = simulate(jobs, Periodic(cluster, PolicyOptions()), cluster, watchdog=Watchdog(idle_cycles=10))
    assert result.stall is None and [r.end for r in result.records] == [3000.0, 4000.0]


def kai_reclaim_loop() -> tuple[list[JobSpec], ClusterSpec]:
    """4 x 4 GPUs; queue a (quota 4) has a 16-GPU gang at its head and a 4-GPU gang within its quota; queue b
    (quota 12) two 8-GPU gangs. Found by the 160-job generator of the session report, cut down."""
    cluster = ClusterSpec(uniform_cluster(4, 4).nodes, (QueueSpec("a", 4), QueueSpec("b", 12)))
    jobs = [
        JobSpec(0, 0.0, 4, 4, 100.0, "a"),
        JobSpec(1, 0.0, 4, 1, 100.0, "a"),
        JobSpec(2, 0.0, 2, 4, 100.0, "b"),
        JobSpec(3, 0.0, 4, 2, 100.0, "b"),
        JobSpec(4, 5.0, 4, 4, 100.0, "a"),  # an arrival: a cycle while both b gangs run
    ]
    return jobs, cluster


def test_kai_reclaim_ping_pong_is_stopped_by_the_watchdog() -> None:
    """Upstream KAI churns here too (docs/kai.md, *Reclaim churn*): queue a's best job (j0, 16 GPUs) sorts
    a after b in allocate, so b's evicted gang takes the freed room back before a's 4-GPU j1, which then
    reclaims again (a at 4 of its fair share 4, b at 16 of 12). Nothing holds a reclaimer's room across
    cycles upstream, so j2 and j3 evict each other; the watchdog ends the replay naming them."""
    jobs, cluster = kai_reclaim_loop()
    policy = default_registry()["kai"](cluster, PolicyOptions())
    result = simulate(jobs, policy, cluster, watchdog=Watchdog(start_budget=200))  # stops the loop sooner
    assert result.stall is not None and result.stall.kind == "starts"
    assert result.stall.cycling == (2, 3) and result.stall.waiting == (0, 1, 2, 3, 4)
    assert result.stall.since == 5.0  # the last arrival: j4 wakes the cycle whose reclaim starts the churn
    by_id = {r.job.id: r for r in result.records}
    assert not by_id[0].segments and not by_id[1].segments  # j1 reclaims every cycle and never runs
    assert all(sum(s.outcome == "preempted" for s in by_id[i].segments) >= 100 for i in (2, 3))


def test_cli_stops_a_stuck_replay_with_an_error_naming_the_jobs(app: typer.Typer, tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("arrival,gang_size,gpus_per_member,duration\n0,1,4,10\n5,1,4,10\n")
    args = ["simulate", "--trace", str(trace), "--nodes", "1", "--gpus-per-node", "4", "--no-progress"]
    result = CliRunner().invoke(app, [*args, "-p", "fifo", "--failure-probability", "1"])
    assert result.exit_code == 3, result.output
    said = " ".join(result.output.split())
    assert "error: fifo: no progress from 5.0 s" in said and "jobs left unfinished: 0, 1" in said
