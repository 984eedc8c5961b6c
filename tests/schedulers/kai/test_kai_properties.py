"""Invariants of the embedded KAI scheduler over random clusters and workloads (hypothesis)."""

from __future__ import annotations

import re
from collections import defaultdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kaiworld import World, node

from gangplane.api.scheduling import kai

BY = re.compile(r"by (\S+) \(priority (-?\d+), queue (\S+)\)")
CLASSES = ["train", "build-preemptible", "build"]

jobs_strategy = st.lists(
    st.tuples(
        st.integers(1, 4),  # size
        st.integers(1, 4),  # gpu per pod
        st.sampled_from(["a", "b"]),  # queue
        st.sampled_from(CLASSES),
        st.booleans(),  # required rack topology
    ),
    min_size=1,
    max_size=8,
)


def _world(n_nodes: int, quotas: tuple[int, int], limits: tuple[int, int], jobs: list) -> World:  # type: ignore[type-arg]
    w = World(nodes=[node(f"n{i}", gpu=4, labels={"rack": f"r{i // 2}"}) for i in range(n_nodes)])
    w.add_queue("top", -1)
    for name, quota, limit in zip("ab", quotas, limits, strict=True):
        w.add_queue(name, quota, parent="top", limit=limit)
    for i, (size, gpu, queue, klass, topo) in enumerate(jobs):
        topology = {"topology": "t", "requiredTopologyLevel": "rack"} if topo else None
        w.add_job(f"j{i}", size, gpu=gpu, queue=queue, priority_class=klass, topology=topology)
    return w


def _check(w: World, limits: dict[str, int]) -> None:
    per_node: dict[str, int] = defaultdict(int)
    per_queue: dict[str, int] = defaultdict(int)
    for key, group in w.groups.items():
        name = key.split("/")[1]
        pods = [p for p in w.pods.values() if p["metadata"]["annotations"][kai.POD_GROUP_ANNOTATION] == name]
        bound = [p for p in pods if p["spec"].get("nodeName") and p["status"]["phase"] == "Running"]
        done = [p for p in pods if p["status"]["phase"] == "Succeeded"]
        assert not bound or len(bound) + len(done) >= group["spec"]["minMember"], f"{name} partially bound"
        for p in bound:
            gpus = int(p["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"])
            per_node[p["spec"]["nodeName"]] += gpus
            per_queue[group["spec"]["queue"]] += gpus
    assert all(used <= 4 for used in per_node.values()), per_node
    for queue, used in per_queue.items():
        assert limits[queue] == -1 or used <= limits[queue], (queue, used)
    assert w.last is not None
    for eviction in w.last.evictions:
        _by, prio, queue = BY.search(eviction.message).groups()  # type: ignore[union-attr]
        victim = w.groups[f"ns/{eviction.pod_key.split('/')[1].rsplit('-', 1)[0]}"]
        assert kai.PRIORITY_CLASSES[victim["spec"]["priorityClassName"]] < kai.NON_PREEMPTIBLE_PRIORITY
        if eviction.reason == "Preempted":
            assert victim["spec"]["queue"] == queue
            assert kai.PRIORITY_CLASSES[victim["spec"]["priorityClassName"]] < int(prio)
        else:
            assert eviction.reason == "Reclaimed" and victim["spec"]["queue"] != queue


def _step(w: World, ages: dict[str, int]) -> None:
    """Evicted gangs come back pending; pods that ran two cycles succeed."""
    w.resubmit_evicted()
    for key, pod in w.pods.items():
        if pod["status"]["phase"] == "Running":
            ages[key] = ages.get(key, 0) + 1
            if ages[key] >= 2:
                pod["status"]["phase"] = "Succeeded"


def _simulate(n_nodes: int, quotas: tuple[int, int], limits: tuple[int, int], jobs: list) -> set[str]:  # type: ignore[type-arg]
    w = _world(n_nodes, quotas, limits, jobs)
    ages: dict[str, int] = {}
    ever: set[str] = set()
    for _ in range(4 * len(jobs) + 6):
        w.cycle()
        _check(w, dict(zip("ab", limits, strict=True)))
        ever |= {k.split("/")[1].rsplit("-", 1)[0] for k, p in w.pods.items() if p["spec"].get("nodeName")}
        _step(w, ages)
    return ever


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_nodes=st.integers(1, 4),
    quotas=st.tuples(st.integers(0, 8), st.integers(0, 8)),
    limits=st.tuples(st.sampled_from([-1, 4, 8]), st.sampled_from([-1, 4, 8])),
    jobs=jobs_strategy,
)
def test_invariants_hold_every_cycle(
    n_nodes: int, quotas: tuple[int, int], limits: tuple[int, int], jobs: list
) -> None:  # type: ignore[type-arg]
    _simulate(n_nodes, quotas, limits, jobs)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_nodes=st.integers(1, 4), jobs=jobs_strategy)
def test_every_gang_that_fits_an_empty_cluster_runs_eventually(n_nodes: int, jobs: list) -> None:  # type: ignore[type-arg]
    jobs = [
        (size, gpu, queue, "train", topo) for size, gpu, queue, _, topo in jobs
    ]  # preemptible, no quota traps
    jobs = [job for job in jobs if _fits_alone(n_nodes, job)]
    ever = _simulate(n_nodes, (0, 0), (-1, -1), jobs)
    assert ever == {f"j{i}" for i in range(len(jobs))}


def _fits_alone(n_nodes: int, job: tuple) -> bool:  # type: ignore[type-arg]
    alone = _world(n_nodes, (0, 0), (-1, -1), [job])
    alone.cycle()
    return bool(alone.bound("j0"))
