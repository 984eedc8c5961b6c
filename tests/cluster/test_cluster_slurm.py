"""Slurm's nodes as the embedded cluster's nodes: same names, the slurm-nodename label, Slurm's capacity."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gangplane.agent.nodes import node_objects, node_specs
from gangplane.api.scheduling.slurm import SLURM_NODE_NAME_LABEL
from gangplane.cluster.slurm import SlurmNodeNameError, slurm_cluster_config, split_node_name
from gangplane.schedulers.default import DefaultScheduler
from gangplane.schedulers.loop import plan_pass
from gangplane.schedulers.slurm import SlurmNode


def node(name: str, cpus: int = 4, memory_mb: int = 16384, gpus: int = 2) -> SlurmNode:
    return SlurmNode(name, ("slurm-bridge",), cpus, memory_mb, gpus, "idle")


def test_one_node_per_slurm_node_with_its_name_label_and_capacity() -> None:
    config = slurm_cluster_config([node(f"n{i}") for i in range(1, 5)])
    specs = node_specs(config)
    assert [s.name for s in specs] == ["n1", "n2", "n3", "n4"]
    assert all(s.labels[SLURM_NODE_NAME_LABEL] == s.name for s in specs)
    assert specs[0].capacity == {"cpu": "4", "memory": "16384Mi", "nvidia.com/gpu": "2", "pods": "110"}
    assert specs[0].gpu_devices == ()  # Slurm's GPUs are counted, no physical device is dealt


def test_nodes_without_gpus_advertise_none_and_sizes_differ_per_node() -> None:
    specs = node_specs(slurm_cluster_config([node("node-1", 8, 4096, 0), node("node-10", 2, 1024, 1)]))
    assert [(s.name, s.capacity.get("cpu"), s.capacity.get("nvidia.com/gpu")) for s in specs] == [
        ("node-1", "8", None),
        ("node-10", "2", "1"),
    ]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("n1", ("n", 1)),
        ("node-12", ("node-", 12)),
        ("gpu01", ("gpu0", 1)),
        ("n00", ("n0", 0)),
        ("7", ("", 7)),
    ],
)
def test_split_node_name(name: str, expected: tuple[str, int]) -> None:
    assert split_node_name(name) == expected


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("login", "does not end in a number"),
        ("N1", "not a valid Node name"),
        ("gpu_1", "not a valid Node name"),
        ("-n1", "not a valid Node name"),
    ],
)
def test_names_a_node_group_cannot_reproduce_fail_clearly(name: str, why: str) -> None:
    with pytest.raises(SlurmNodeNameError, match=why):
        slurm_cluster_config([node("n1"), node(name)])


def test_every_bad_name_is_reported_at_once() -> None:
    with pytest.raises(SlurmNodeNameError) as err:
        slurm_cluster_config([node("a"), node("b")])
    assert "'a'" in str(err.value) and "'b'" in str(err.value)


def test_no_nodes_is_an_error() -> None:
    with pytest.raises(SlurmNodeNameError, match="no nodes"):
        slurm_cluster_config([])


@given(
    st.lists(
        st.from_regex(r"[a-z]([-a-z0-9]{0,10}[a-z])?-?[0-9]{1,4}", fullmatch=True), unique=True, max_size=8
    ).filter(bool)
)
def test_any_name_ending_in_a_number_round_trips(names: list[str]) -> None:
    assert [s.name for s in node_specs(slurm_cluster_config([node(n) for n in names]))] == names


def test_slurm_nodes_carry_the_managed_node_taint_so_other_pods_stay_off() -> None:
    # slurm-bridge taints managed nodes slinky.slurm.net/managed-node=<scheduler>:NoExecute (issue #16).
    nodes = node_objects(slurm_cluster_config([node("n1"), node("n2")]))
    assert nodes[0]["spec"]["taints"] == [
        {"key": "slinky.slurm.net/managed-node", "value": "slurm-bridge-scheduler", "effect": "NoExecute"}
    ]
    plain = {
        "metadata": {"name": "web", "namespace": "ml", "uid": "u"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    }
    planned = plan_pass(0.0, nodes, [plain], {}, {"default-scheduler": DefaultScheduler(preemption=False)})
    assert planned.bindings() == []
    [reason] = planned.results[0][1].pending
    assert "2 node(s) had untolerated taint {slinky.slurm.net/managed-node: slurm-bridge-scheduler}" in (
        reason.message
    )
