"""A Volcano scheduler that keeps what it parsed between cycles (``memo.py``) decides exactly as a fresh one.

Driven the way the live loop drives it: objects carry a resourceVersion that changes with their content (as
a store sets it), pods are kept by the loop's scheduler cache (one ``PodInfo`` per resourceVersion) and each
pass runs over the cache's incremental snapshot. Every cycle, the kept scheduler and a fresh one see the same
view and must return the same bindings, evictions, status writes and pending reasons.
"""

from __future__ import annotations

import copy
import json
from functools import partial
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_volcano_properties import jobs_strategy
from vcworld import World, node

from gangplane.schedulers.base import CycleResult
from gangplane.schedulers.cache import SchedulerCache
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.resources import ResourceIndex
from gangplane.schedulers.core.snapshot import Snapshot
from gangplane.schedulers.passes import group_key, run_pass
from gangplane.schedulers.volcano import VolcanoConfig, VolcanoScheduler
from gangplane.schedulers.volcano.memo import Memo
from gangplane.schedulers.volcano.queues import policy_of
from gangplane.store.catalog import PODS

Obj = dict[str, Any]


class Stamps:
    """A store's resourceVersions: an object keeps its version (and identity) while its content is the same."""

    def __init__(self) -> None:
        self.serial = 0
        self.kept: dict[str, tuple[str, Obj]] = {}

    def __call__(self, key: str, obj: Obj) -> Obj:
        body = json.dumps(obj, sort_keys=True)
        kept = self.kept.get(key)
        if kept is not None and kept[0] == body:
            return kept[1]
        self.serial += 1
        stamped = copy.deepcopy(obj)
        stamped["metadata"]["resourceVersion"] = str(self.serial)
        self.kept[key] = (body, stamped)
        return stamped


class Driver:
    def __init__(self, world: World, config: VolcanoConfig) -> None:
        self.world, self.config = world, config
        self.kept = VolcanoScheduler(config)
        self.cache = SchedulerCache(partial(group_key, {"volcano": self.kept}))
        self.stamps = Stamps()
        self.snapshot: Snapshot | None = None

    def sync(self) -> tuple[dict[Any, list[Obj]], dict[str, list[PodInfo]], Snapshot]:
        """The world as a store and the loop's cache hold it: stamped objects, pending pods, the snapshot."""
        w = self.world
        for n in w.nodes:
            self.cache.set_node(self.stamps(f"node/{n['metadata']['name']}", n))
        pods = {key: self.stamps(f"pod/{key}", pod) for key, pod in w.pods.items()}
        for key in [k for k in self.cache.pods if k not in pods]:
            self.cache.delete_pod(key)
        for pod in pods.values():
            self.cache.set_pod(pod)
        objects: dict[Any, list[Obj]] = {
            rt: [self.stamps(f"{rt}/{i}", o) for i, o in enumerate(objs)] for rt, objs in w.objects().items()
        }
        objects[PODS] = list(pods.values())
        snapshot = self.snapshot = self.cache.update_snapshot(self.snapshot)
        infos = [e.info for e in self.cache.pending_infos() if e.info is not None]
        return objects, {"volcano": sorted(infos, key=lambda p: (p.created, p.key))}, snapshot

    def cycle(self) -> CycleResult:
        objects, pending, snapshot = self.sync()
        return self.same_decisions(
            objects, pending, snapshot, [(self.kept, None), (VolcanoScheduler(self.config), None)]
        )

    def same_decisions(
        self,
        objects: dict[Any, list[Obj]],
        pending: dict[str, list[PodInfo]],
        snapshot: Snapshot,
        runs: list[tuple[Any, Any]],
    ) -> CycleResult:
        """Each (scheduler, known changes) decides on the same snapshot; all must agree. The first's result
        is applied to the world, which moves on a second."""
        w = self.world
        results = []
        for scheduler, known in runs:
            token = snapshot.checkpoint()
            passed = run_pass(w.now, snapshot, pending, objects, {"volcano": scheduler}, known)
            results.append(passed.results[0][1])
            snapshot.rollback(token)
        first = results[0]
        assert all(result == first for result in results[1:])
        w.last = first
        w.apply(first)
        w.now += 1.0
        return first


def _finish(w: World, ages: dict[str, int], life: int) -> None:
    """Pods that ran ``life`` cycles succeed (a PodGroup may then be unchanged while its pods change)."""
    for key, pod in w.pods.items():
        if pod["status"]["phase"] == "Running":
            ages[key] = ages.get(key, 0) + 1
            if ages[key] >= life:
                pod["status"]["phase"] = "Succeeded"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_nodes=st.integers(1, 4),
    cap=st.one_of(st.none(), st.integers(2, 12)),
    jobs=jobs_strategy,
    explain=st.booleans(),
    life=st.integers(2, 4),
)
def test_a_scheduler_keeping_its_parses_decides_as_a_fresh_one(
    n_nodes: int, cap: int | None, jobs: list[tuple[int, int, str, int, bool, bool]], explain: bool, life: int
) -> None:
    config = VolcanoConfig(explain=explain)
    w = World(nodes=[node(f"n{i}", gpu=4) for i in range(n_nodes)], config=config)
    w.add_queue("a", **({"capability": {"nvidia.com/gpu": str(cap)}} if cap is not None else {}))
    w.add_queue("b", weight=2)
    w.add_queue("c")
    for i, (size, gpu, queue, prio, _topology, minres) in enumerate(jobs):
        w.add_job(f"j{i}", size, gpu=gpu, queue=queue, priority=prio, min_resources=minres)
    driver = Driver(w, config)
    ages: dict[str, int] = {}
    for _ in range(4 * len(jobs) + 4):
        driver.cycle()
        w.resubmit_evicted()
        _finish(w, ages, life)


def test_a_built_in_queue_without_resource_version_is_parsed_again_only_when_it_changes() -> None:
    """The in-memory root queue has no resourceVersion; its policy is kept while what it reads recurs
    (a new object every pass defeated the kept water-filling's capability cache)."""
    memo, index = Memo(), ResourceIndex()
    root = {"metadata": {"name": "root"}, "spec": {"weight": 1, "reclaimable": False}}
    first = memo.policy(root, index, partial(policy_of, root, index))
    assert memo.policy(copy.deepcopy(root), index, partial(policy_of, root, index)) is first
    heavier = {**root, "spec": {"weight": 3, "reclaimable": False}}
    changed = memo.policy(heavier, index, partial(policy_of, heavier, index))
    assert changed is not first and changed.weight == 3
