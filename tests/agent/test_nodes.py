"""Cluster config: YAML shape, validation, the default sized from the host, GPU detection, Node objects."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from gangplane.agent.nodes import (
    GPU_RESOURCE,
    HOSTNAME_LABEL,
    ClusterConfig,
    HostInfo,
    deal,
    default_config,
    detect_gpus,
    load_config,
    node_objects,
    node_specs,
    parse_nvidia_smi,
)

GiB = 2**30

CONFIG = """
nodeGroups:
  - name: cpu
    count: 2
    capacity: {cpu: "8", memory: 32Gi}
    labels: {pool: cpu}
  - name: gpu
    count: 2
    namePrefix: gpu-node-
    capacity: {cpu: "16", memory: 64Gi, nvidia.com/gpu: 2, example.com/fpga: 1}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    gpuDevices: [0, 1, 2, 3]
"""


def test_yaml_config_names_nodes_and_deals_devices(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(CONFIG)
    specs = node_specs(load_config(path))
    assert [s.name for s in specs] == ["cpu-0", "cpu-1", "gpu-node-0", "gpu-node-1"]
    assert [s.gpu_devices for s in specs] == [(), (), (0, 1), (2, 3)]
    assert specs[2].capacity == {
        "cpu": "16",
        "example.com/fpga": "1",
        "memory": "64Gi",
        GPU_RESOURCE: "2",
        "pods": "110",
    }
    assert specs[0].labels == {"pool": "cpu", HOSTNAME_LABEL: "cpu-0"}


def test_node_objects_are_ready_nodes_with_capacity_and_taints() -> None:
    config = ClusterConfig.model_validate(
        {
            "nodeGroups": [
                {
                    "name": "gpu",
                    "capacity": {"cpu": "4", GPU_RESOURCE: "1"},
                    "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
                    "labels": {"zone": "a"},
                }
            ]
        }
    )
    (node,) = node_objects(config, "2026-01-01T00:00:00Z")
    assert node["metadata"]["name"] == "gpu-0"
    assert node["metadata"]["labels"][HOSTNAME_LABEL] == "gpu-0"
    assert node["metadata"]["labels"]["zone"] == "a"
    assert node["spec"]["taints"] == [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    assert node["status"]["capacity"] == node["status"]["allocatable"]
    assert node["status"]["capacity"][GPU_RESOURCE] == "1"
    *pressure, ready = node["status"]["conditions"]
    assert (ready["type"], ready["status"]) == ("Ready", "True")
    assert [(c["type"], c["status"]) for c in pressure] == [
        ("MemoryPressure", "False"), ("DiskPressure", "False"), ("PIDPressure", "False")]  # fmt: skip
    assert {"type": "InternalIP", "address": "127.0.0.1"} in node["status"]["addresses"]


@pytest.mark.parametrize(
    ("group", "message"),
    [
        ({"name": "g", "count": 2, "capacity": {GPU_RESOURCE: 2}, "gpuDevices": [0, 1]}, "need 4"),
        ({"name": "Bad_Name"}, "pattern"),
        ({"name": "g", "count": 1, "unknown": 1}, "Extra inputs"),
    ],
    ids=["devices-do-not-fill-capacity", "bad-group-name", "unknown-field"],
)
def test_invalid_groups_are_rejected(group: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ClusterConfig.model_validate({"nodeGroups": [group]})


def test_duplicate_node_names_are_rejected() -> None:
    groups = [{"name": "a", "namePrefix": "n-"}, {"name": "b", "namePrefix": "n-"}]
    with pytest.raises(ValidationError, match="not unique: n-0"):
        ClusterConfig.model_validate({"nodeGroups": groups})


def test_default_config_without_gpus_splits_the_host_into_four_nodes() -> None:
    config = default_config(HostInfo(cpus=16, memory_bytes=64 * GiB))
    specs = node_specs(config)
    assert [s.name for s in specs] == ["node-0", "node-1", "node-2", "node-3"]
    assert {s.capacity["cpu"] for s in specs} == {"4"}
    assert {s.capacity["memory"] for s in specs} == {"16Gi"}
    assert all(GPU_RESOURCE not in s.capacity and not s.gpu_devices for s in specs)


def test_default_config_gives_a_small_host_at_least_one_cpu_per_node() -> None:
    specs = node_specs(default_config(HostInfo(cpus=2, memory_bytes=3 * GiB + 5)))
    assert {s.capacity["cpu"] for s in specs} == {"1"}
    assert {s.capacity["memory"] for s in specs} == {"768Mi"}


@pytest.mark.parametrize(
    ("gpus", "per_node"),
    [(8, [2, 2, 2, 2]), (4, [1, 1, 1, 1]), (3, [1, 1, 1, 0]), (1, [1, 0, 0, 0]), (6, [2, 2, 1, 1])],
)
def test_default_config_deals_real_gpus(gpus: int, per_node: list[int]) -> None:
    config = default_config(HostInfo(cpus=8, memory_bytes=32 * GiB, gpus=list(range(gpus))))
    specs = node_specs(config)
    assert [s.name for s in specs] == ["node-0", "node-1", "node-2", "node-3"]
    assert [len(s.gpu_devices) for s in specs] == per_node
    assert [int(s.capacity.get(GPU_RESOURCE, 0)) for s in specs] == per_node
    assert [d for s in specs for d in s.gpu_devices] == list(range(gpus))


def test_deal_is_contiguous() -> None:
    assert deal([0, 1, 2, 3, 4, 5, 6, 7], 4) == [[0, 1], [2, 3], [4, 5], [6, 7]]


def test_gpu_detection_uses_the_first_probe_that_finds_devices() -> None:
    smi = "GPU 0: NVIDIA H200 (UUID: GPU-a)\nGPU 1: NVIDIA H200 (UUID: GPU-b)\n"
    assert parse_nvidia_smi(smi) == [0, 1]
    assert detect_gpus((lambda: "", lambda: smi)) == [0, 1]
    assert detect_gpus((lambda: "",)) == []
