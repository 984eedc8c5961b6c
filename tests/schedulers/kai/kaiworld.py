"""A tiny in-memory cluster for KAI scheduler tests: wire dicts in, ``plan_pass`` cycles, results applied."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gangplane.api.scheduling import kai
from gangplane.schedulers.base import CycleResult
from gangplane.schedulers.kai import KaiConfig, KaiScheduler
from gangplane.schedulers.loop import plan_pass
from gangplane.store.base import ResourceType
from gangplane.store.catalog import JOBSETS, KAI_PODGROUPS, KAI_QUEUES, PRIORITY_CLASSES

Obj = dict[str, Any]


def node(name: str, gpu: int = 8, labels: Mapping[str, str] | None = None) -> Obj:
    alloc = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": str(gpu), "pods": "110"}
    return {"metadata": {"name": name, "labels": dict(labels or {})}, "status": {"allocatable": alloc}}


def queue(
    name: str,
    gpu_quota: float = 0,
    *,
    parent: str | None = None,
    weight: float = 1,
    limit: float = -1,
    priority: int | None = None,
) -> Obj:
    res = {
        "gpu": {"quota": gpu_quota, "limit": limit, "overQuotaWeight": weight},
        "cpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
        "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
    }
    spec: Obj = {"resources": res}
    if parent:
        spec["parentQueue"] = parent
    if priority is not None:
        spec["priority"] = priority
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": spec,
    }


@dataclass
class World:
    config: KaiConfig = field(default_factory=KaiConfig)
    nodes: list[Obj] = field(default_factory=list)
    pods: dict[str, Obj] = field(default_factory=dict)
    groups: dict[str, Obj] = field(default_factory=dict)
    queues: dict[str, Obj] = field(default_factory=dict)
    jobsets: list[Obj] = field(default_factory=list)
    now: float = 1_767_225_600.0
    serial: int = 0
    last: CycleResult | None = None
    evicted: list[str] = field(default_factory=list)
    evicted_pods: dict[str, Obj] = field(default_factory=dict)
    scheduler: KaiScheduler | None = None  # kept across cycles as the live loop keeps it; else one per cycle

    def resubmit_evicted(self) -> None:
        """What a JobSet restart does after an eviction: the pods come back pending (new UIDs)."""
        for key in self.evicted:
            pod = copy.deepcopy(self.evicted_pods.pop(key))
            pod["metadata"]["uid"] += "-again"
            pod["spec"].pop("nodeName", None)
            pod["status"] = {"phase": "Pending"}
            self.pods[key] = pod
        self.evicted.clear()

    def add_queue(self, name: str, gpu_quota: float = 0, **kw: Any) -> None:
        self.queues[name] = queue(name, gpu_quota, **kw)

    def add_job(
        self,
        name: str,
        size: int,
        gpu: int = 1,
        *,
        queue: str = "default-queue",
        min_member: int | None = None,
        priority_class: str = "train",
        topology: Mapping[str, str] | None = None,
        preemptibility: str | None = None,
    ) -> None:
        self.serial += 1
        stamp = f"2026-01-01T00:{self.serial // 60:02d}:{self.serial % 60:02d}Z"
        spec: Obj = {
            "minMember": size if min_member is None else min_member,
            "queue": queue,
            "priorityClassName": priority_class,
        }
        if topology:
            spec["topologyConstraint"] = dict(topology)
        if preemptibility:
            spec["preemptibility"] = preemptibility
        meta = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "creationTimestamp": stamp}
        self.groups[f"ns/{name}"] = {"metadata": meta, "spec": spec}
        for i in range(size):
            self.add_pod(f"{name}-{i}", gpu, stamp, annotations={kai.POD_GROUP_ANNOTATION: name})

    def add_pod(
        self,
        name: str,
        gpu: int,
        stamp: str,
        *,
        annotations: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        self.pods[f"ns/{name}"] = {
            "metadata": {
                "name": name,
                "namespace": "ns",
                "uid": f"uid-{name}",
                "creationTimestamp": stamp,
                "annotations": dict(annotations or {}),
                "labels": dict(labels or {}),
            },
            "spec": {
                "schedulerName": "kai-scheduler",
                "containers": [
                    {"name": "c", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": str(gpu)}}}
                ],
            },
            "status": {"phase": "Pending"},
        }

    def objects(self) -> dict[ResourceType, list[Obj]]:
        return {
            KAI_PODGROUPS: list(self.groups.values()),
            KAI_QUEUES: list(self.queues.values()),
            JOBSETS: list(self.jobsets),
            PRIORITY_CLASSES: [],
        }

    def cycle(self) -> CycleResult:
        result = plan_pass(
            self.now,
            self.nodes,
            list(self.pods.values()),
            self.objects(),
            {"kai-scheduler": self.scheduler or KaiScheduler(self.config)},
        )
        self.last = result.results[0][1]
        for binding in self.last.bindings:
            pod = self.pods[binding.pod_key]
            assert not pod["spec"].get("nodeName")
            pod["spec"]["nodeName"] = binding.node
            pod["status"]["phase"] = "Running"
        for eviction in self.last.evictions:
            self.evicted_pods[eviction.pod_key] = self.pods.pop(eviction.pod_key)
            self.evicted.append(eviction.pod_key)
        for write in self.last.status_writes:
            target = self.groups if write.rt == KAI_PODGROUPS else self.queues
            key = f"{write.namespace}/{write.name}" if write.namespace else write.name
            target[key] = {**copy.deepcopy(target[key]), "status": copy.deepcopy(dict(write.status))}
        self.now += 1.0
        return self.last

    def run(self, cycles: int) -> None:
        for _ in range(cycles):
            self.cycle()

    def bound(self, prefix: str) -> list[str]:
        return sorted(
            p["spec"]["nodeName"]
            for k, p in self.pods.items()
            if k.startswith(f"ns/{prefix}-") and p["spec"].get("nodeName")
        )

    def pin(self, job: str, nodes: list[str]) -> None:
        keys = sorted(k for k in self.pods if k.startswith(f"ns/{job}-"))
        for key, node_name in zip(keys, nodes, strict=True):
            self.pods[key]["spec"]["nodeName"] = node_name
            self.pods[key]["status"]["phase"] = "Running"


def under_root(nodes: int = 2, **queues: float) -> World:
    """``nodes`` 8-GPU nodes and leaf queues (name=GPU quota) under one unlimited ``root-q``."""
    w = World(nodes=[node(f"n{i}") for i in range(nodes)])
    w.add_queue("root-q", -1)
    for name, quota in queues.items():
        w.add_queue(name, quota, parent="root-q")
    return w
