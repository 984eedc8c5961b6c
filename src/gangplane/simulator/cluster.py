"""The simulated cluster as plain values: nodes with GPUs/CPU/memory and labels, and the queues jobs go to.

Policies turn these into their scheduler core's own view; the engine and the metrics only need the totals.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gangplane.simulator.jobs import DEFAULT_QUEUE


@dataclass(frozen=True, slots=True)
class NodeSpec:
    name: str
    gpus: int
    cpu: float = 64.0
    memory: float = 512 * 2**30
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class QueueSpec:
    """A queue in the chosen integration's terms.

    ``nominal_gpus``: guaranteed GPUs (Kueue nominalQuota, Volcano capability/deserved, KAI quota); ``None`` =
    unlimited. ``borrowing_limit``: extra GPUs a queue may borrow from its cohort (Kueue); ``None`` =
    unlimited. ``weight``: fair-share weight (Volcano ``weight``, KAI ``overQuotaWeight``, Kueue fair sharing).
    """

    name: str
    nominal_gpus: int | None = None
    borrowing_limit: int | None = None
    weight: float = 1.0
    cohort: str = ""
    priority: int = 0


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    nodes: tuple[NodeSpec, ...]
    queues: tuple[QueueSpec, ...] = (QueueSpec(DEFAULT_QUEUE),)

    @property
    def total_gpus(self) -> int:
        return sum(node.gpus for node in self.nodes)

    @property
    def max_node_gpus(self) -> int:
        return max((node.gpus for node in self.nodes), default=0)

    def with_queues(self, names: list[str]) -> ClusterSpec:
        """This cluster plus an unlimited default queue for every name not declared yet (trace VCs)."""
        known = {queue.name for queue in self.queues}
        extra = tuple(QueueSpec(name) for name in sorted(set(names) - known))
        return ClusterSpec(self.nodes, self.queues + extra) if extra else self


def uniform_cluster(nodes: int, gpus_per_node: int, *, prefix: str = "node") -> ClusterSpec:
    """``nodes`` identical nodes ``node-000``..., the shape every trace replay uses."""
    width = max(3, len(str(nodes - 1)))
    return ClusterSpec(tuple(NodeSpec(f"{prefix}-{i:0{width}d}", gpus_per_node) for i in range(nodes)))


__all__ = ["ClusterSpec", "NodeSpec", "QueueSpec", "uniform_cluster"]
