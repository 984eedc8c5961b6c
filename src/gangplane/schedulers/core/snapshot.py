"""The cycle-local cluster snapshot: node capacity and usage as arrays, with assume / forget and rollback.

``allocatable`` and ``requested`` are ``[nodes, resources]`` int64 arrays over one ``ResourceIndex``; every
change goes through ``assume`` / ``forget`` and is journaled, so ``rollback(checkpoint())`` restores the exact
previous state in O(changes) (Kueue's "simulate removal, then restore"; Volcano's statement discard).
Static node facts (labels, taints) are read-only and cached as masks by ``fit``. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from gangplane.schedulers.core.objects import NodeInfo, PodInfo, node_info, pod_info
from gangplane.schedulers.core.resources import ResourceIndex, Vector

Matrix = npt.NDArray[np.int64]
_ASSUME, _FORGET = 1, -1


class Snapshot:
    """Nodes, their free capacity and the pods counted on them. Not thread-safe; one per cycle (or copy)."""

    def __init__(self, index: ResourceIndex, nodes: Sequence[NodeInfo], pods: Iterable[PodInfo] = ()) -> None:
        """``pods`` are bound pods; each is counted on ``pod.node_name`` (pods on unknown nodes are ignored,
        as kube-scheduler's cache ignores pods of nodes it has not seen)."""
        self.index = index
        self.nodes: tuple[NodeInfo, ...] = tuple(nodes)
        self._positions = {node.name: i for i, node in enumerate(self.nodes)}
        if len(self._positions) != len(self.nodes):
            raise ValueError("node names must be unique")
        rows = [index.node_vector(node.allocatable) for node in self.nodes]
        self.allocatable: Matrix = np.array(rows, dtype=np.int64).reshape(len(self.nodes), len(index))
        self.allocatable.flags.writeable = False
        self.requested: Matrix = np.zeros_like(self.allocatable)
        self._pods: list[dict[str, PodInfo]] = [{} for _ in self.nodes]
        self._where: dict[str, int] = {}
        self._groups: dict[str, dict[str, PodInfo]] = {}
        self._journal: list[tuple[int, PodInfo, int]] = []
        self.cache: dict[Any, Any] = {}  # static per-node masks, owned by ``fit``; never holds usage
        self.generation = 0  # the scheduler cache's generation this snapshot reflects (``schedulers.cache``)
        self.layout = 0  # the cache's node-set version it was built from
        for pod in pods:
            if pod.node_name in self._positions:
                self.assume(pod, self._positions[pod.node_name])
        self._journal.clear()

    @classmethod
    def from_objects(
        cls,
        node_objs: Iterable[dict[str, Any]],
        bound_pod_objs: Iterable[dict[str, Any]],
        index: ResourceIndex,
    ) -> Snapshot:
        """Convenience for tests and tools: nodes and bound pods straight from wire dicts."""
        return cls(index, [node_info(n) for n in node_objs], [pod_info(p, index) for p in bound_pod_objs])

    def __len__(self) -> int:
        return len(self.nodes)

    def node_position(self, name: str) -> int:
        """The row of node ``name``; ``KeyError`` when the snapshot has no such node."""
        return self._positions[name]

    def free(self) -> Matrix:
        """``allocatable - requested`` (a new array; negative only for nodes already over-committed)."""
        return self.allocatable - self.requested

    def pods_on(self, node: int) -> list[PodInfo]:
        """Pods counted on a node, in the order they were added."""
        return list(self._pods[node].values())

    def pods(self) -> list[PodInfo]:
        return [pod for per_node in self._pods for pod in per_node.values()]

    def group_members(self, group: str) -> list[PodInfo]:
        """Counted pods whose ``PodInfo.group`` is ``group``, in the order they were added."""
        return list(self._groups.get(group, {}).values())

    def location(self, key: str) -> int | None:
        """The node row a pod is counted on, or ``None``."""
        return self._where.get(key)

    def pod(self, key: str) -> PodInfo | None:
        node = self._where.get(key)
        return None if node is None else self._pods[node][key]

    def assume(self, pod: PodInfo, node: int) -> None:
        """Count ``pod`` on node row ``node``. Capacity is not checked (bound pods may over-commit after a
        node shrinks); callers check fit first. ``ValueError`` if the pod is counted already."""
        if pod.key in self._where:
            raise ValueError(f"pod {pod.key} is already counted on {self.nodes[self._where[pod.key]].name}")
        self._add(pod, node)
        self._journal.append((_ASSUME, pod, node))

    def forget(self, key: str) -> PodInfo:
        """Stop counting a pod (a victim, a deleted pod); ``KeyError`` if it is not counted."""
        node = self._where[key]
        pod = self._pods[node][key]
        self._remove(pod, node)
        self._journal.append((_FORGET, pod, node))
        return pod

    def checkpoint(self) -> int:
        """A token for ``rollback``; valid until a rollback to an earlier token."""
        return len(self._journal)

    def rollback(self, token: int) -> None:
        """Undo every assume / forget made after ``checkpoint()`` returned ``token``, newest first."""
        if not 0 <= token <= len(self._journal):
            raise ValueError(f"invalid checkpoint {token}")
        while len(self._journal) > token:
            op, pod, node = self._journal.pop()
            if op == _ASSUME:
                self._remove(pod, node)
            else:
                self._add(pod, node)

    def commit(self) -> None:
        """Make every change so far permanent: earlier checkpoints become invalid (a kept snapshot, brought
        up to date between passes, starts each pass with an empty journal)."""
        self._journal.clear()

    def changes_since(self, token: int) -> list[tuple[str, PodInfo, int]]:
        """The journal after ``token`` as ``("assume" | "forget", pod, node row)``, oldest first."""
        return [
            ("assume" if op == _ASSUME else "forget", pod, node) for op, pod, node in self._journal[token:]
        ]

    def _add(self, pod: PodInfo, node: int) -> None:
        self.requested[node] += pod.requests
        self._pods[node][pod.key] = pod
        self._where[pod.key] = node
        if pod.group is not None:
            self._groups.setdefault(pod.group, {})[pod.key] = pod

    def _remove(self, pod: PodInfo, node: int) -> None:
        self.requested[node] -= pod.requests
        del self._pods[node][pod.key]
        del self._where[pod.key]
        if pod.group is not None:
            members = self._groups[pod.group]
            del members[pod.key]
            if not members:
                del self._groups[pod.group]


def total(rows: Iterable[Vector], width: int) -> Vector:
    out = np.zeros(width, dtype=np.int64)
    for row in rows:
        out += row
    return out


__all__ = ["Matrix", "NodeInfo", "PodInfo", "Snapshot", "node_info", "pod_info", "total"]
