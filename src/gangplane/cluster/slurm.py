"""The embedded cluster's nodes when a real Slurm places the pods: one gangplane Node per Slurm node. Pure.

The Slurm Bridge binds each pod to the Node its Slurm node maps to (the ``slinky.slurm.net/slurm-nodename``
label, else the same name; see schedulers/slurm/bridge.py). For the node agents to run exactly the pods Slurm
placed, the cluster's nodes are Slurm's nodes: same names, the label, and Slurm's CPUs, memory and GPUs as
capacity. Capacity is an accounting unit here as everywhere in the agents (docs/nodes.md): Slurm's GPUs are
advertised as ``nvidia.com/gpu`` but no physical device is dealt, since Slurm's local nodes may be fake.

Each node carries slurm-bridge's managed-node taint, so pods of other schedulers never land on a node Slurm
holds. A ``NodeGroup`` names its nodes ``<namePrefix><firstIndex + i>``, so a Slurm node name must end in a decimal
number (``n1``, ``node-12``, ``gpu01``); each Slurm node becomes a group of one, which carries its own label.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gangplane.agent.nodes import GPU_RESOURCE, ClusterConfig, NodeGroup
from gangplane.api.core import Taint
from gangplane.api.scheduling.slurm import MANAGED_NODE_TAINT, SCHEDULER_NAME, SLURM_NODE_NAME_LABEL
from gangplane.errors import GangplaneError
from gangplane.schedulers.slurm import SlurmNode

# A Kubernetes node name is a DNS-1123 subdomain; the NodeGroup also needs a trailing number to rebuild it.
_NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_TRAILING_NUMBER = re.compile(r"^(?P<prefix>.*?)(?P<digits>[0-9]+)$")
_GROUP_NAME = re.compile(r"[^-a-z0-9]+")


class SlurmNodeNameError(GangplaneError):
    """A Slurm node whose name the embedded cluster cannot give a Node of its own."""


def split_node_name(name: str) -> tuple[str, int]:
    """``(namePrefix, firstIndex)`` with ``prefix + str(index) == name``: ``n1`` -> ("n", 1), ``node-12`` ->
    ("node-", 12), ``gpu01`` -> ("gpu0", 1) (leading zeros stay in the prefix, since the index is printed
    without them). Raises ``SlurmNodeNameError`` for a name the NodeGroup cannot reproduce."""
    if len(name) > 253 or not _NODE_NAME.match(name):
        raise SlurmNodeNameError(
            f"Slurm node {name!r} is not a valid Node name (lowercase letters, digits, '-' and '.', "
            "at most 253 characters); rename it in slurm.conf (NodeName) or run gangplane with --config"
        )
    match = _TRAILING_NUMBER.match(name)
    if match is None:
        raise SlurmNodeNameError(
            f"Slurm node {name!r} does not end in a number; gangplane names nodes <prefix><index> "
            "(e.g. n1, node-3): rename it in slurm.conf (NodeName) or run gangplane with --config"
        )
    digits = match["digits"]
    index = str(int(digits))
    return name[: len(name) - len(index)], int(index)


def slurm_capacity(node: SlurmNode) -> dict[str, str | int]:
    """What the scheduler counts on a Node: Slurm's CPUs, real memory (MiB) and GPUs (if any)."""
    capacity: dict[str, str | int] = {"cpu": str(node.cpus), "memory": f"{node.memory_mb}Mi"}
    if node.gpus:
        capacity[GPU_RESOURCE] = str(node.gpus)
    return capacity


def _group_name(node_name: str) -> str:
    """A NodeGroup name for the node: its name with anything outside ``[-a-z0-9]`` replaced by ``-``."""
    return _GROUP_NAME.sub("-", node_name).strip("-") or "slurm"


def slurm_node_group(node: SlurmNode) -> NodeGroup:
    prefix, index = split_node_name(node.name)
    return NodeGroup(
        name=_group_name(node.name),
        count=1,
        name_prefix=prefix,
        first_index=index,
        capacity=slurm_capacity(node),
        labels={SLURM_NODE_NAME_LABEL: node.name},
        taints=[managed_node_taint()],
    )


def managed_node_taint() -> Taint:
    """slurm-bridge's ``slinky.slurm.net/managed-node=<scheduler>:NoExecute`` (slurm.md §A2): Slurm owns these
    nodes, so no other scheduler places a pod there; the bridge's own pods get the toleration when bound."""
    return Taint(key=MANAGED_NODE_TAINT, value=SCHEDULER_NAME, effect="NoExecute")


def slurm_cluster_config(nodes: Sequence[SlurmNode]) -> ClusterConfig:
    """One Node per Slurm node, same name, in Slurm's order. Raises ``SlurmNodeNameError`` when Slurm lists
    no node or a name cannot be represented (all problems at once)."""
    if not nodes:
        raise SlurmNodeNameError("Slurm lists no nodes (sinfo --json): nothing for the pods to run on")
    problems: list[str] = []
    groups: list[NodeGroup] = []
    for node in nodes:
        try:
            groups.append(slurm_node_group(node))
        except SlurmNodeNameError as err:
            problems.append(str(err))
    if problems:
        raise SlurmNodeNameError("; ".join(problems))
    return ClusterConfig(node_groups=groups)


__all__ = [
    "SlurmNodeNameError",
    "managed_node_taint",
    "slurm_capacity",
    "slurm_cluster_config",
    "slurm_node_group",
    "split_node_name",
]
