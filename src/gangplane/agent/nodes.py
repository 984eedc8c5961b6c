"""The cluster's nodes: a YAML ``ClusterConfig`` of node groups, a default sized from this machine, and the
core v1 ``Node`` objects the agents register.

Node capacity is an accounting unit for the schedulers: processes are not confined to it. Real NVIDIA GPUs
are the exception: a node group lists the physical device indices it owns (``gpuDevices``) and the agent
hands each GPU pod its own indices through ``CUDA_VISIBLE_DEVICES``. Everything here is pure except
``detect_host``, whose probes are injectable.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Self

import yaml
from pydantic import Field, model_validator

from gangplane.agent.images import ImageEnvironment
from gangplane.agent.names import LOCALHOST
from gangplane.agent.node_status import HostFacts, host_facts, node_status
from gangplane.api.base import ApiModel
from gangplane.api.core import Taint
from gangplane.api.quantity import ResourceList, format_quantity, parse

GPU_RESOURCE = "nvidia.com/gpu"
HOSTNAME_LABEL = "kubernetes.io/hostname"
OS_LABEL = "kubernetes.io/os"
ARCH_LABEL = "kubernetes.io/arch"
ARCH_LABEL = "kubernetes.io/arch"
MAX_PODS = "110"  # kubelet's default --max-pods
DEFAULT_NODE_COUNT = 4
NODE_ADDRESS = LOCALHOST


class NodeGroup(ApiModel):
    """``count`` identical nodes named ``<namePrefix><firstIndex + i>``."""

    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    count: int = Field(default=1, ge=0)
    name_prefix: str | None = None  # default "<name>-"
    first_index: int = Field(default=0, ge=0)  # the first node is <namePrefix><firstIndex>
    capacity: ResourceList = {}
    labels: dict[str, str] = {}
    taints: list[Taint] = []
    gpu_devices: list[int] = []  # physical GPU indices, dealt to the nodes in order

    @model_validator(mode="after")
    def _devices_fill_capacity(self) -> Self:
        if self.gpu_devices and len(self.gpu_devices) != self.count * self.gpus_per_node():
            raise ValueError(
                f"gpuDevices lists {len(self.gpu_devices)} devices; {self.count} nodes with "
                f"{GPU_RESOURCE}={self.gpus_per_node()} need {self.count * self.gpus_per_node()}"
            )
        return self

    def gpus_per_node(self) -> int:
        return int(parse(self.capacity.get(GPU_RESOURCE, 0)))

    def prefix(self) -> str:
        return self.name_prefix if self.name_prefix is not None else f"{self.name}-"


class ClusterConfig(ApiModel):
    """The node groups of the local cluster (YAML/JSON: ``nodeGroups: [...]``) and the local environments
    container images run in (``images: [...]``, ``images.py``)."""

    node_groups: list[NodeGroup] = []
    images: list[ImageEnvironment] = []

    @model_validator(mode="after")
    def _unique_names(self) -> Self:
        names = [spec.name for spec in node_specs(self)]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"node names are not unique: {', '.join(duplicates)}")
        return self


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node as the agent runs it."""

    name: str
    capacity: dict[str, str]
    labels: dict[str, str]
    taints: list[dict[str, Any]]
    gpu_devices: tuple[int, ...] = ()


def node_specs(config: ClusterConfig) -> list[NodeSpec]:
    """Every node of every group, in config order."""
    return [_node_spec(group, i) for group in config.node_groups for i in range(group.count)]


def _node_spec(group: NodeGroup, index: int) -> NodeSpec:
    name = f"{group.prefix()}{group.first_index + index}"
    per_node = group.gpus_per_node()
    devices = tuple(group.gpu_devices[index * per_node : (index + 1) * per_node])
    capacity = {key: str(value) for key, value in group.capacity.items()}
    capacity.setdefault("pods", MAX_PODS)
    return NodeSpec(
        name=name,
        capacity=dict(sorted(capacity.items())),
        labels={**group.labels, HOSTNAME_LABEL: name},
        taints=[t.to_dict() for t in group.taints],
        gpu_devices=devices,
    )


def node_object(spec: NodeSpec, now: str, facts: HostFacts | None = None) -> dict[str, Any]:
    """A core v1 Node with the status a kubelet reports (``node_status.py``)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": spec.name,
            "labels": {OS_LABEL: "linux", ARCH_LABEL: _arch(facts), **spec.labels},
        },
        "spec": {"taints": spec.taints} if spec.taints else {},
        "status": node_status(spec.name, NODE_ADDRESS, spec.capacity, facts or host_facts(), now),
    }


def _arch(facts: HostFacts | None) -> str:
    return (facts or host_facts()).architecture


def node_objects(config: ClusterConfig, now: str = "") -> list[dict[str, Any]]:
    return [node_object(spec, now) for spec in node_specs(config)]


# --- the default config, sized from the host --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HostInfo:
    cpus: int
    memory_bytes: int
    gpus: list[int] = field(default_factory=list)  # physical NVIDIA device indices


def default_config(host: HostInfo, nodes: int = DEFAULT_NODE_COUNT) -> ClusterConfig:
    """``nodes`` equal nodes sharing the host: CPUs and memory split evenly (at least one CPU each, so small
    hosts are overcommitted), real GPUs dealt in contiguous blocks (``deal``); without GPUs no node advertises
    ``nvidia.com/gpu``.
    Nodes with the same number of GPUs form one group; all are named ``node-<i>``."""
    cpu = max(1, host.cpus // nodes)
    memory = format_quantity(Decimal(host.memory_bytes // nodes // 2**20 * 2**20), binary=True)
    base: dict[str, str | int] = {"cpu": str(cpu), "memory": memory}
    groups: list[NodeGroup] = []
    for i, devices in enumerate(deal(host.gpus, nodes)):
        if groups and groups[-1].gpus_per_node() == len(devices):
            last = groups[-1]
            groups[-1] = last.model_copy(
                update={"count": last.count + 1, "gpu_devices": [*last.gpu_devices, *devices]}
            )
            continue
        capacity = {**base, **({GPU_RESOURCE: str(len(devices))} if devices else {})}
        groups.append(
            NodeGroup(
                name=f"gpu{len(devices)}" if devices else "cpu",
                count=1,
                name_prefix="node-",
                first_index=i,
                capacity=capacity,
                gpu_devices=devices,
            )
        )
    return ClusterConfig(node_groups=groups)


def deal(devices: list[int], nodes: int) -> list[list[int]]:
    """Contiguous, nearly equal shares, larger ones first: 8 over 4 -> [0,1] [2,3] [4,5] [6,7]; 3 over 4 ->
    [0] [1] [2] []. Contiguous indices keep a node's GPUs on neighbouring links."""
    size, extra = divmod(len(devices), nodes)
    shares, at = [], 0
    for i in range(nodes):
        count = size + (1 if i < extra else 0)
        shares.append(devices[at : at + count])
        at += count
    return shares


Probe = Callable[[], str]

_NVIDIA_SMI_LINE = re.compile(r"^GPU (\d+):", re.MULTILINE)


def parse_nvidia_smi(text: str) -> list[int]:
    """Device indices from ``nvidia-smi -L`` (``GPU 0: NVIDIA H200 (UUID: ...)``)."""
    return sorted(int(m) for m in _NVIDIA_SMI_LINE.findall(text))


def _nvidia_smi() -> str:
    try:
        done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


def _proc_gpus() -> str:
    """The driver's per-device folders, formatted as ``nvidia-smi -L`` would number them."""
    root = Path("/proc/driver/nvidia/gpus")
    count = len(list(root.iterdir())) if root.is_dir() else 0
    return "".join(f"GPU {i}: (from /proc)\n" for i in range(count))


def detect_gpus(probes: tuple[Probe, ...] = (_nvidia_smi, _proc_gpus)) -> list[int]:
    """The host's NVIDIA devices from the first probe that finds any."""
    for probe in probes:
        found = parse_nvidia_smi(probe())
        if found:
            return found
    return []


def detect_host(gpu_probes: tuple[Probe, ...] = (_nvidia_smi, _proc_gpus)) -> HostInfo:
    import psutil

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else psutil.cpu_count() or 1
    return HostInfo(cpus=cpus, memory_bytes=psutil.virtual_memory().total, gpus=detect_gpus(gpu_probes))


def load_config(path: Path) -> ClusterConfig:
    return ClusterConfig.model_validate(yaml.safe_load(path.read_text()) or {})
