"""The scheduler cache: after any sequence of node and pod events (and assumptions), the snapshot it keeps up
to date incrementally equals one built from scratch from the same objects."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane.schedulers.cache import SchedulerCache
from gangplane.schedulers.core import Snapshot
from gangplane.schedulers.core.objects import no_group
from gangplane.schedulers.loop import build_snapshot
from gangplane.schedulers.registry import default_registry
from schedulers.kube_builders import node, pod

NODES = ("n0", "n1", "n2")
PODS = ("p0", "p1")


def _view(snapshot: Snapshot) -> dict[str, Any]:
    """What a snapshot says, independent of column order and of resources nobody offers or asks for."""
    names = snapshot.index.names
    out = {}
    for row, info in enumerate(snapshot.nodes):
        free = {n: int(v) for n, v in zip(names, snapshot.allocatable[row], strict=True) if v}
        used = {n: int(v) for n, v in zip(names, snapshot.requested[row], strict=True) if v}
        keys = sorted(p.key for p in snapshot.pods_on(row))
        out[info.name] = (free, used, keys, info.labels, info.taints, info.unschedulable)
    return out


POD_OPS = ("add", "delete", "bind", "finish", "assume", "forget", "touch")
EVENTS = (
    *(
        ("node", n, op, cpu, gpu)
        for n in NODES
        for op in ("add", "delete")
        for cpu in ("4", "8")
        for gpu in (0, 2)
    ),
    *(("pod", p, op, n, gpu) for p in PODS for op in POD_OPS for n in NODES for gpu in (0, 1)),
)
event = st.one_of(*[st.sampled_from(EVENTS)] * 3, st.just(("snapshot",)))


class _World:
    """The objects as the API holds them, fed to the cache as informer events with fresh versions."""

    def __init__(self) -> None:
        self.cache = SchedulerCache(lambda obj: no_group)
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pods: dict[str, dict[str, Any]] = {}
        self.assumed: dict[str, str] = {}
        self.rv = 0

    def _stamp(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return obj

    def node(self, name: str, op: str, cpu: str, gpu: int) -> None:
        if op == "delete":
            self.nodes.pop(name, None)
            self.cache.delete_node(name)
        else:
            self.nodes[name] = self._stamp(node(name, cpu=cpu, gpu=gpu))
            self.cache.set_node(self.nodes[name])

    def pod(self, name: str, op: str, where: str, gpu: int) -> None:
        key = f"ml/{name}"
        current = self.pods.get(name)
        if op == "delete":
            self.pods.pop(name, None)
            self.assumed.pop(key, None)
            self.cache.delete_pod(key)
            return
        if op == "assume":
            pending = current is not None and not current["spec"].get("nodeName")
            if pending and key not in self.assumed and self.cache.pods[key].info is not None:
                self.cache.assume(key, where)
                self.assumed[key] = where
            return
        if op == "forget":
            self.cache.forget(key)
            self.assumed.pop(key, None)
            return
        if op == "add" and current is None:
            new = pod(name, gpu=gpu)
        elif op == "bind" and current is not None and not current["spec"].get("nodeName"):
            new = copy.deepcopy(current)
            new["spec"]["nodeName"] = self.assumed.pop(key, where)
        elif op == "touch" and current is not None:  # a status write: a new version, still pending
            new = copy.deepcopy(current)
            new.setdefault("status", {})["message"] = f"seen at {self.rv}"
        elif op == "finish" and current is not None:
            new = copy.deepcopy(current)
            new.setdefault("status", {})["phase"] = "Succeeded"
            self.assumed.pop(key, None)
        else:
            return
        self.pods[name] = self._stamp(new)
        self.cache.set_pod(self.pods[name])
        if op == "finish":
            self.cache.forget(key)

    def from_scratch(self) -> Snapshot:
        pods = []
        for obj in self.pods.values():
            key = f"ml/{obj['metadata']['name']}"
            if key in self.assumed:
                obj = copy.deepcopy(obj)
                obj["spec"]["nodeName"] = self.assumed[key]
            pods.append(obj)
        snapshot, _ = build_snapshot(sorted(self.nodes.values(), key=str), pods, default_registry().build())
        return snapshot


@settings(max_examples=400, deadline=None)
@given(st.lists(event, min_size=8, max_size=60))
def test_incremental_snapshot_equals_one_built_from_scratch(events: list[tuple[Any, ...]]) -> None:
    world = _World()
    for name in NODES[:2]:
        world.node(name, "add", "8", 2)
    kept: Snapshot | None = None
    for kind, *args in events:
        if kind == "node":
            world.node(*args)
        elif kind == "pod":
            world.pod(*args)
        else:
            kept = world.cache.update_snapshot(kept)
            assert _view(kept) == _view(world.from_scratch())
    kept = world.cache.update_snapshot(kept)
    assert _view(kept) == _view(world.from_scratch())
    assert _view(world.cache.build_snapshot()) == _view(world.from_scratch())


def test_an_unchanged_resource_version_is_not_parsed_again() -> None:
    cache = SchedulerCache(lambda obj: no_group)
    obj = pod("p", node_name="n0")
    obj["metadata"]["resourceVersion"] = "7"
    _, first = cache.set_pod(obj)
    before, again = cache.set_pod(copy.deepcopy(obj))
    assert before is first and again is first and again.info is first.info


def test_an_update_visits_only_the_changed_nodes() -> None:
    cache = SchedulerCache(lambda obj: no_group)
    for i in range(50):
        cache.set_node({**node(f"n{i}"), "metadata": {"name": f"n{i}", "resourceVersion": str(i)}})
    kept = cache.update_snapshot(None)
    layout = kept.layout
    bound = pod("p", node_name="n7")
    bound["metadata"]["resourceVersion"] = "100"
    cache.set_pod(bound)
    again = cache.update_snapshot(kept)
    assert again is kept and kept.layout == layout  # updated in place, not rebuilt
    assert [p.key for p in kept.pods_on(kept.node_position("n7"))] == ["ml/p"]
    assert kept.checkpoint() == 0  # the update left no journal behind


def test_an_assumed_pod_stays_counted_until_bound_or_forgotten() -> None:
    world = _World()
    world.node("n0", "add", "8", 0)
    world.pod("p0", "add", "n0", 0)
    world.pod("p0", "assume", "n0", 0)
    world.pod("p0", "touch", "n0", 0)  # e.g. a condition written while the binding is in flight
    kept = world.cache.update_snapshot(None)
    assert kept.location("ml/p0") == 0 and _view(kept) == _view(world.from_scratch())
    world.pod("p0", "forget", "n0", 0)
    assert world.cache.update_snapshot(kept).location("ml/p0") is None
