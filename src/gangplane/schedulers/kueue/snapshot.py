"""The pending workloads and their queue positions as of the last admission pass, for readers on other
threads (the visibility API, the TrainJob controller's "N workloads ahead"); pure.

Only the ClusterQueues a pass touched are recomputed, so a pass costs what changed, not every pending
workload. Both mappings are replaced whole, never mutated, so a reader never sees a half-made one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gangplane.client.informer import Key
from gangplane.schedulers.kueue.state import KueueState
from gangplane.schedulers.kueue.visibility import PendingWorkload, pending_in_cluster_queue

Position = tuple[str, str]  # (namespace, Workload name)


class PendingSnapshot:
    def __init__(self) -> None:
        self.pending: dict[str, list[PendingWorkload]] = {}
        self.positions: dict[Position, int] = {}

    def refresh(self, core: KueueState, cqs: Iterable[str] | None, owners: Mapping[str, str]) -> list[Key]:
        """Recompute ``cqs`` (every ClusterQueue when None); the TrainJobs (``owners``: Workload key -> owner
        name) whose Workload moved in its queue, in order."""
        names = sorted(core.cluster_queues) if cqs is None else sorted(set(cqs))
        pending = {} if cqs is None else dict(self.pending)
        positions = {} if cqs is None else dict(self.positions)
        before: dict[Position, int] = dict(self.positions) if cqs is None else {}
        for cq in names:
            for p in self.pending.get(cq, ()) if cqs is not None else ():
                before[(p.namespace, p.name)] = positions.pop((p.namespace, p.name), -1)
            pending.pop(cq, None)
            if cq in core.cluster_queues:
                pending[cq] = pending_in_cluster_queue(core, cq)
                positions.update(((p.namespace, p.name), p.position_in_local_queue) for p in pending[cq])
        moved = {k for k in before.keys() | {(p.namespace, p.name) for cq in names for p in pending.get(cq, ())}
                 if before.get(k) != positions.get(k)}  # fmt: skip
        self.pending, self.positions = pending, positions
        return sorted({(ns, owner) for ns, wl in moved if (owner := owners.get(f"{ns}/{wl}"))})

    def position(self, namespace: str, workload: str) -> int | None:
        return self.positions.get((namespace, workload))

    def in_local_queue(self, namespace: str, local_queue: str) -> list[PendingWorkload]:
        return [
            p
            for ps in self.pending.values()
            for p in ps
            if (p.namespace, p.local_queue) == (namespace, local_queue)
        ]
