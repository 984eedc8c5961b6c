"""The shared scheduling core: snapshots with assume/rollback, vectorised fit, gang placement, scoring and
preemption victim search. Pure: no store, no clock reads, deterministic for a given input."""

from gangplane.schedulers.core.fit import FitCounts, Mask, explain, feasible, static_mask
from gangplane.schedulers.core.gang import Binding, GangPlacement, choose_nodes, place_gang
from gangplane.schedulers.core.objects import (
    DEFAULT_SCHEDULER,
    GroupKey,
    NodeInfo,
    PodInfo,
    Requirement,
    Taint,
    Toleration,
    effective_requests,
    is_terminal,
    no_group,
    node_info,
    pod_info,
    pod_key,
)
from gangplane.schedulers.core.preemption import find_victims
from gangplane.schedulers.core.resources import CPU, GPU, MEMORY, PODS, ResourceIndex, Vector
from gangplane.schedulers.core.scoring import Strategy, least_allocated, most_allocated, score
from gangplane.schedulers.core.snapshot import Snapshot

__all__ = [
    "CPU",
    "DEFAULT_SCHEDULER",
    "GPU",
    "MEMORY",
    "PODS",
    "Binding",
    "FitCounts",
    "GangPlacement",
    "GroupKey",
    "Mask",
    "NodeInfo",
    "PodInfo",
    "Requirement",
    "ResourceIndex",
    "Snapshot",
    "Strategy",
    "Taint",
    "Toleration",
    "Vector",
    "choose_nodes",
    "effective_requests",
    "explain",
    "feasible",
    "find_victims",
    "is_terminal",
    "least_allocated",
    "most_allocated",
    "no_group",
    "node_info",
    "place_gang",
    "pod_info",
    "pod_key",
    "score",
    "static_mask",
]
