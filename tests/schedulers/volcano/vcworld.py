"""A tiny in-memory cluster for Volcano scheduler tests: wire dicts in, ``plan_pass`` cycles, results applied."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gangplane.api.scheduling import volcano as vc
from gangplane.schedulers.base import CycleResult
from gangplane.schedulers.loop import plan_pass
from gangplane.schedulers.volcano import VolcanoConfig, VolcanoScheduler
from gangplane.store.base import ResourceType
from gangplane.store.catalog import HYPERNODES, PRIORITY_CLASSES, VOLCANO_PODGROUPS, VOLCANO_QUEUES

Obj = dict[str, Any]


def node(
    name: str, gpu: int = 8, cpu: str = "64", memory: str = "512Gi", labels: Mapping[str, str] | None = None
) -> Obj:
    alloc = {"cpu": cpu, "memory": memory, "nvidia.com/gpu": str(gpu), "pods": "110"}
    return {
        "metadata": {"name": name, "labels": dict(labels or {})},
        "status": {"allocatable": alloc, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def queue(name: str, weight: int = 1, **spec: Any) -> Obj:
    return {
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": {"weight": weight, **spec},
        "status": {"state": "Open"},
    }


def hypernode(
    name: str, tier: int, nodes: list[str] = (), children: list[str] = (), tier_name: str | None = None
) -> Obj:  # type: ignore[assignment]
    members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]
    members += [{"type": "HyperNode", "selector": {"exactMatch": {"name": c}}} for c in children]
    spec: Obj = {"tier": tier, "members": members}
    if tier_name:
        spec["tierName"] = tier_name
    return {"metadata": {"name": name}, "spec": spec}


@dataclass
class World:
    config: VolcanoConfig = field(default_factory=VolcanoConfig)
    nodes: list[Obj] = field(default_factory=list)
    pods: dict[str, Obj] = field(default_factory=dict)
    groups: dict[str, Obj] = field(default_factory=dict)
    queues: dict[str, Obj] = field(default_factory=dict)
    hypernodes: list[Obj] = field(default_factory=list)
    priority_classes: list[Obj] = field(default_factory=list)
    now: float = 1_767_225_600.0
    serial: int = 0
    last: CycleResult | None = None
    evicted: list[str] = field(default_factory=list)
    evicted_pods: dict[str, Obj] = field(default_factory=dict)
    scheduler: VolcanoScheduler | None = (
        None  # kept across cycles as the live loop keeps it; else one per cycle
    )

    def add_queue(self, name: str, weight: int = 1, **spec: Any) -> None:
        self.queues[name] = queue(name, weight, **spec)

    def add_job(
        self,
        name: str,
        size: int,
        gpu: int = 1,
        *,
        queue: str = "default",
        min_member: int | None = None,
        priority: int = 0,
        namespace: str = "ns",
        topology: Mapping[str, Any] | None = None,
        min_resources: bool = True,
        cpu: str = "1",
    ) -> None:
        self.serial += 1
        stamp = f"2026-01-01T00:{self.serial // 60:02d}:{self.serial % 60:02d}Z"
        gang = size if min_member is None else min_member
        spec: Obj = {"minMember": gang, "queue": queue}
        if min_resources:
            spec["minResources"] = {"nvidia.com/gpu": str(gang * gpu), "cpu": str(gang * int(cpu))}
        if topology is not None:
            spec["networkTopology"] = dict(topology)
        meta = {"name": name, "namespace": namespace, "uid": f"uid-{name}", "creationTimestamp": stamp}
        self.groups[f"{namespace}/{name}"] = {"metadata": meta, "spec": spec, "status": {"phase": "Pending"}}
        for i in range(size):
            pod_name = f"{name}-{i}"
            requests = {"cpu": cpu, "nvidia.com/gpu": str(gpu)} if gpu else {"cpu": cpu}
            self.pods[f"{namespace}/{pod_name}"] = {
                "metadata": {
                    "name": pod_name,
                    "namespace": namespace,
                    "uid": f"uid-{pod_name}",
                    "creationTimestamp": stamp,
                    "annotations": {vc.GROUP_NAME_ANNOTATION: name},
                },
                "spec": {
                    "schedulerName": "volcano",
                    "priority": priority,
                    "containers": [{"name": "c", "resources": {"requests": requests}}],
                },
                "status": {"phase": "Pending"},
            }

    def objects(self) -> dict[ResourceType, list[Obj]]:
        return {
            VOLCANO_PODGROUPS: list(self.groups.values()),
            VOLCANO_QUEUES: list(self.queues.values()),
            HYPERNODES: list(self.hypernodes),
            PRIORITY_CLASSES: list(self.priority_classes),
        }

    def cycle(self) -> CycleResult:
        scheduler = self.scheduler or VolcanoScheduler(self.config)
        result = plan_pass(
            self.now, self.nodes, list(self.pods.values()), self.objects(), {"volcano": scheduler}
        )
        self.last = result.results[0][1]
        self.apply(self.last)
        self.now += 1.0
        return self.last

    def apply(self, result: CycleResult) -> None:
        for binding in result.bindings:
            pod = self.pods[binding.pod_key]
            assert not pod["spec"].get("nodeName"), f"{binding.pod_key} bound twice"
            pod["spec"]["nodeName"] = binding.node
            pod["status"]["phase"] = "Running"
        for eviction in result.evictions:
            self.evicted_pods[eviction.pod_key] = self.pods.pop(eviction.pod_key)
            self.evicted.append(eviction.pod_key)
        for write in result.status_writes:
            target = self.groups if write.rt == VOLCANO_PODGROUPS else self.queues
            key = f"{write.namespace}/{write.name}" if write.namespace else write.name
            target[key] = {**copy.deepcopy(target[key]), "status": copy.deepcopy(dict(write.status))}

    def run(self, cycles: int) -> None:
        for _ in range(cycles):
            self.cycle()

    def bound(self, job: str, namespace: str = "ns") -> list[str]:
        return sorted(
            p["spec"]["nodeName"]
            for p in self.pods.values()
            if p["metadata"]["namespace"] == namespace
            and p["metadata"]["annotations"][vc.GROUP_NAME_ANNOTATION] == job
            and p["spec"].get("nodeName")
        )

    def pin(self, job: str, nodes: list[str], namespace: str = "ns") -> None:
        """Bind a job's pods by hand (as if placed earlier), in pod order."""
        pods = sorted(k for k in self.pods if k.startswith(f"{namespace}/{job}-"))
        for key, node_name in zip(pods, nodes, strict=True):
            self.pods[key]["spec"]["nodeName"] = node_name
            self.pods[key]["status"]["phase"] = "Running"

    def phase(self, job: str, namespace: str = "ns") -> str:
        return str(self.groups[f"{namespace}/{job}"]["status"].get("phase"))

    def resubmit_evicted(self) -> None:
        """What a JobSet restart does after an eviction: the pods come back pending (new UIDs)."""
        for key in self.evicted:
            pod = copy.deepcopy(self.evicted_pods.pop(key))
            pod["metadata"]["uid"] += "-again"
            pod["spec"].pop("nodeName", None)
            pod["status"] = {"phase": "Pending"}
            self.pods[key] = pod
        self.evicted.clear()
