"""A pod whose binding the loop is still writing: the loop's cache counts it on its node (assumed) while its
``nodeName`` is still empty. Volcano reads it as bound, as upstream's cache holds an assumed task on its node;
read as pending, it was placed a second time and the whole cycle failed ("already counted", seen in CI)."""

from __future__ import annotations

from functools import partial

from vcworld import World, node

from gangplane.schedulers.cache import SchedulerCache
from gangplane.schedulers.passes import group_key, run_pass
from gangplane.schedulers.volcano import VolcanoConfig, VolcanoScheduler
from gangplane.store.catalog import PODS


def test_an_assumed_member_counts_as_bound_and_its_gang_completes() -> None:
    w = World(nodes=[node("n0", gpu=4), node("n1", gpu=4)], config=VolcanoConfig())
    w.add_queue("default")
    w.add_job("j", 2, gpu=4)
    w.groups["ns/j"]["status"] = {"phase": "Inqueue"}
    scheduler = VolcanoScheduler(VolcanoConfig())
    cache = SchedulerCache(partial(group_key, {"volcano": scheduler}))
    for n in w.nodes:
        cache.set_node(n)
    for i, pod in enumerate(w.pods.values()):
        pod["metadata"]["resourceVersion"] = str(i + 1)
        cache.set_pod(pod)
    cache.assume("ns/j-0", "n0")  # bound in the cache, nodeName not written yet
    snapshot = cache.update_snapshot(None)
    pending = [e.info for e in cache.pending_infos() if e.info is not None]
    assert [p.key for p in pending] == ["ns/j-1"]
    objects = {**w.objects(), PODS: list(w.pods.values())}
    result = run_pass(0.0, snapshot, {"volcano": pending}, objects, {"volcano": scheduler}).results[0][1]
    assert not [r for r in result.pending if "already counted" in r.message]
    assert [(b.pod_key, b.node) for b in result.bindings] == [("ns/j-1", "n1")]
