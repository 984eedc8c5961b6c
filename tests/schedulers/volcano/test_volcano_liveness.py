"""Liveness of the embedded Volcano scheduler (hypothesis): a gang that fits the empty cluster runs once
nothing else is pending.

The "Inqueue gang that never binds although the cluster looks free" seen in earlier property worlds is
proportion's per-task cap at ``deserved``: two queues each waiting with a task larger than half the
cluster deserve half each, so neither runs (upstream ``queueAllocatable``; pinned in
test_volcano_scenarios). This property takes that contention away -- every other unfinished job is deleted --
and then asks for the gang to run, over worlds wider than test_volcano_properties: jobs arriving later,
``minMember`` below the size, both share plugins, with and without overcommit, explanations and a scheduler
kept across cycles.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_volcano_properties import _finish as finish_pods_that_ran_two_cycles
from vcworld import Obj, World, hypernode, node

from gangplane.schedulers.volcano import VolcanoConfig, VolcanoScheduler
from gangplane.schedulers.volcano.book import SharePolicy


@dataclass(frozen=True)
class Job:
    size: int
    spare: int  # pods above minMember
    gpu: int
    queue: str
    priority: int
    topology: bool
    min_resources: bool
    arrives: int  # cycle it is created in


jobs_strategy = st.lists(
    st.builds(
        Job,
        st.integers(1, 4),
        st.integers(0, 3),
        st.integers(1, 4),
        st.sampled_from("abc"),
        st.integers(0, 2),
        st.booleans(),
        st.booleans(),
        st.integers(0, 6),
    ),
    min_size=1,
    max_size=8,
)
configs = st.builds(
    VolcanoConfig,
    overcommit_factor=st.sampled_from([None, 1.2]),
    explain=st.booleans(),
    share_policy=st.sampled_from(list(SharePolicy)),
)


def _world(n_nodes: int, caps: tuple[int | None, ...], config: VolcanoConfig, kept: bool) -> World:
    w = World(nodes=[node(f"n{i}", gpu=4) for i in range(n_nodes)], config=config)
    w.hypernodes = [
        hypernode(f"r{i}", 1, nodes=[f"n{j}" for j in range(i, min(i + 2, n_nodes))])
        for i in range(0, n_nodes, 2)
    ]
    for name, cap in zip("abc", caps, strict=True):
        limits = {} if cap is None else {"capability": {"nvidia.com/gpu": str(cap)}}
        if cap is not None and config.share_policy == SharePolicy.CAPACITY:
            limits["deserved"] = {"nvidia.com/gpu": str(cap // 2)}
        w.add_queue(name, **limits)
    w.scheduler = VolcanoScheduler(config) if kept else None
    return w


def _submit(w: World, name: str, job: Job) -> None:
    topology = {"mode": "hard", "highestTierAllowed": 1} if job.topology else None
    w.add_job(
        name,
        job.size,
        gpu=job.gpu,
        queue=job.queue,
        priority=job.priority,
        min_member=max(1, job.size - job.spare),
        topology=topology,
        min_resources=job.min_resources,
    )


def _step(w: World, ages: dict[str, int]) -> None:
    """One cycle; evicted gangs come back pending, pods that ran two cycles succeed."""
    w.cycle()
    w.resubmit_evicted()
    finish_pods_that_ran_two_cycles(w, ages)


def _unfinished(w: World) -> set[str]:
    return {
        key.split("/")[1]
        for key in w.groups
        if any(p["status"]["phase"] != "Succeeded" for p in _pods(w, key.split("/")[1]).values())
    }


def _pods(w: World, job: str) -> dict[str, Obj]:
    return {k: p for k, p in w.pods.items() if k.rsplit("-", 1)[0] == f"ns/{job}"}


def _runs_alone(w: World, job: str, others: set[str], ages: dict[str, int]) -> bool:
    """Delete the other unfinished jobs; the job must bind (or finish) within a few cycles."""
    alone = copy.deepcopy(w)
    for other in others:
        del alone.groups[f"ns/{other}"]
        for key in _pods(alone, other):
            del alone.pods[key]
    ages = dict(ages)
    for _ in range(8):
        _step(alone, ages)
        if any(p["spec"].get("nodeName") for p in _pods(alone, job).values()):
            return True
    return False


def _fits_empty(n_nodes: int, caps: tuple[int | None, ...], config: VolcanoConfig, job: Job) -> bool:
    w = _world(n_nodes, caps, config, kept=False)
    _submit(w, "j0", job)
    w.cycle()
    return bool(w.bound("j0"))


def check_liveness(
    n_nodes: int, caps: tuple[int | None, ...], config: VolcanoConfig, kept: bool, jobs: list[Job]
) -> set[str]:
    """Replay the jobs; every job still unfinished must run alone. Returns those jobs."""
    jobs = [job for job in jobs if _fits_empty(n_nodes, caps, config, job)]
    w = _world(n_nodes, caps, config, kept)
    ages: dict[str, int] = {}
    for cycle in range(6 * len(jobs) + 18):
        for i, job in enumerate(jobs):
            if job.arrives == cycle:
                _submit(w, f"j{i}", job)
        _step(w, ages)
    stuck = _unfinished(w)
    for job in sorted(stuck):
        assert _runs_alone(w, job, stuck - {job}, ages), (job, w.phase(job), sorted(stuck))
    return stuck


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_nodes=st.integers(1, 4),
    caps=st.tuples(*[st.one_of(st.none(), st.integers(2, 12))] * 3),
    config=configs,
    kept=st.booleans(),
    jobs=jobs_strategy,
)
def test_a_gang_that_fits_the_empty_cluster_runs_once_nothing_else_is_pending(
    n_nodes: int, caps: tuple[int | None, ...], config: VolcanoConfig, kept: bool, jobs: list[Job]
) -> None:
    check_liveness(n_nodes, caps, config, kept, jobs)


def test_a_preempted_gang_starved_by_another_queue_runs_once_that_queue_is_empty() -> None:
    """The counterexample the wide search found: j2 (3 GPUs, queue a) runs, is preempted by j1 (priority 1,
    same queue), comes back pending next to j3 (3 GPUs, queue b); each queue deserves 2 of the 4 GPUs, so
    both wait (upstream). With j3 gone, queue a deserves all 4 and j2 runs."""
    config = VolcanoConfig(overcommit_factor=None, explain=False)
    small, large = Job(1, 0, 1, "a", 0, False, False, 0), Job(1, 0, 3, "a", 0, False, False, 0)
    jobs = [small, Job(1, 0, 1, "a", 1, False, False, 1), large, Job(1, 0, 3, "b", 0, False, False, 1)]
    for kept in (False, True):
        assert check_liveness(1, (None, None, None), config, kept, jobs) == {"j2", "j3"}
