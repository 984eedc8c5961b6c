"""The node agent (kubelet equivalent): runs bound pods as local process groups and reports their status."""

from gangplane.agent.agent import LEGACY_FINALIZER, NodeAgent
from gangplane.agent.names import PortAllocator
from gangplane.agent.nodes import (
    ClusterConfig,
    HostInfo,
    NodeGroup,
    NodeSpec,
    default_config,
    detect_host,
    load_config,
    node_objects,
    node_specs,
)
from gangplane.agent.pool import AgentPool

__all__ = [
    "LEGACY_FINALIZER",
    "AgentPool",
    "ClusterConfig",
    "HostInfo",
    "NodeAgent",
    "NodeGroup",
    "NodeSpec",
    "PortAllocator",
    "default_config",
    "detect_host",
    "load_config",
    "node_objects",
    "node_specs",
]
