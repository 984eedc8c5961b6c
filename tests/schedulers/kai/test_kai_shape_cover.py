"""Gang shapes a failed shape covers (``placement.covered``): a uniform gang asking at least as much of each
resource, for at least as many members, as one that found no room cannot fit either, so allocate over the
lines marks its line failed without a try and ends the pass once no line that may fit is left
(``lines._fail_covered``). Checked against ``place_gang`` itself, and the whole scheduler against one
with the shortcut off, on random worlds."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kaiworld import World
from kaiworld import node as kai_node
from test_kai_kept import jobs_strategy

from gangplane.schedulers.core.gang import place_gang
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.kai import lines, placement
from gangplane.schedulers.kai.session import KaiConfig
from gangplane.simulator.cluster import ClusterSpec, QueueSpec, uniform_cluster
from gangplane.simulator.engine import simulate
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.policies import PolicyOptions
from gangplane.simulator.policies.kai import Kai
from schedulers.kube_builders import node, pod, snapshot


def _shape(pods: list[PodInfo], minimum: int) -> object:
    return minimum, tuple((p.requests.tobytes(), p.constraints) for p in pods)


@settings(max_examples=300, deadline=None)
@given(
    nodes=st.lists(st.tuples(st.integers(1, 8), st.integers(0, 8)), min_size=1, max_size=5),
    bound=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 6))),
    small=st.tuples(st.integers(1, 4), st.integers(0, 4), st.integers(0, 3)),  # members, cpu, gpu
    more=st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 2)),  # what the larger adds
    short=st.integers(0, 3),  # members the smaller gang may place beyond its minimum
)
def test_a_covered_gang_never_fits(
    nodes: list[tuple[int, int]],
    bound: list[tuple[int, int]],
    small: tuple[int, int, int],
    more: tuple[int, int, int],
    short: int,
) -> None:
    node_dicts = [node(f"n{i}", cpu=str(cpu), gpu=gpu) for i, (cpu, gpu) in enumerate(nodes)]
    held = [
        pod(f"b{i}", cpu=None, gpu=gpu, node_name=f"n{at % len(nodes)}") for i, (at, gpu) in enumerate(bound)
    ]
    (count, cpu, gpu), (extra, more_cpu, more_gpu) = small, more
    smaller = [pod(f"s{i}", cpu=str(cpu), gpu=gpu) for i in range(count + short)]
    larger = [pod(f"l{i}", cpu=str(cpu + more_cpu), gpu=gpu + more_gpu) for i in range(count + extra)]
    snap, pods = snapshot(node_dicts, held, smaller + larger)
    smaller_pods, larger_pods = pods[: len(smaller)], pods[len(smaller) :]
    failed: placement.Failed = {_shape(smaller_pods, count): placement.Attempt(False)}
    assert placement.covered(failed, _shape(larger_pods, count + extra))
    if not place_gang(snap, smaller_pods, min_member=count, explain=False).ok:
        assert not place_gang(snap, larger_pods, min_member=count + extra, explain=False).ok


def test_only_uniform_gangs_of_the_same_constraints_are_covered() -> None:
    node_dicts = [node("n0", cpu="8", gpu=8)]
    gangs = [pod("a0", gpu=2), pod("b0", gpu=4), pod("b1", gpu=2), pod("c0", gpu=4, nodeSelector={"x": "y"})]
    _, (a, b0, b1, c) = snapshot(node_dicts, [], gangs)
    failed: placement.Failed = {_shape([a], 1): placement.Attempt(False)}
    assert not placement.covered(failed, _shape([b0, b1], 2))  # two shapes: placed group by group
    assert not placement.covered(failed, _shape([c], 1))  # other nodes may hold it
    assert placement.covered(failed, _shape([b0], 1))
    assert not placement.covered({_shape([b0], 1): placement.Attempt(False)}, _shape([a], 1))


def test_a_gang_covered_by_one_that_found_no_room_is_not_tried(monkeypatch: Any) -> None:
    world = World(config=KaiConfig(explain=False), nodes=[kai_node("n0"), kai_node("n1")])
    world.add_queue("default-queue", gpu_quota=-1)
    world.add_job("three", 3, gpu=8)  # older: tried first, no room for three 8-GPU pods
    world.add_job("four", 4, gpu=8)
    tried: list[str] = []

    def counted(session: Any, job: Any, *args: Any, **kw: Any) -> placement.Attempt:
        tried.append(job.key)
        return placement_place(session, job, *args, **kw)

    placement_place = placement.place
    monkeypatch.setattr(placement, "place", counted)
    world.cycle()
    assert world.bound("three") == world.bound("four") == []
    assert tried == ["ns/three"]


def _exact_only(failed: placement.Failed, shape: object) -> bool:
    return shape in failed


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=jobs_strategy, quota_a=st.sampled_from((None, 4, 8)), nodes=st.integers(2, 4))
def test_the_shortcut_decides_as_the_full_walk(
    jobs: list[tuple[int, int, int, int, str, int, float]], quota_a: int | None, nodes: int
) -> None:
    """Two worlds over one trace: in one, a try is skipped only for a shape that itself failed (the walk
    before covered shapes); the bindings, evictions and their times must be the same."""
    queues = (QueueSpec("a", nominal_gpus=quota_a, weight=2), QueueSpec("b"), QueueSpec("c"))
    cluster = ClusterSpec(uniform_cluster(nodes, 4).nodes, queues)
    specs = [
        JobSpec(i, float(t), m, g, float(d), q, priority=p, memory_per_member=mem)
        for i, (t, m, g, d, q, p, mem) in enumerate(sorted(jobs))
    ]
    with_shortcut = simulate(specs, Kai(cluster, PolicyOptions()), cluster).records
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(placement, "covered", _exact_only)
        patch.setattr(lines, "_fail_covered", lambda cursors, failed: 0)
        without = simulate(specs, Kai(cluster, PolicyOptions()), cluster).records
    assert with_shortcut == without
