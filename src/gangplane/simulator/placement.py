"""The simulator's bridge to ``schedulers.core``: one ``Snapshot`` of the cluster, jobs placed with
``place_gang`` (all-or-nothing) and released with ``forget``.

Every positive placement decision is the core's. The only thing computed here is a cheap *necessary*
condition on the GPU column (``sum over nodes of free // per-member >= members``) that lets a policy skip a
``place_gang`` call which could not succeed; it never admits a job by itself.

Placements build no failure explanation (``explain=False``), which is most of what a failed try costs;
``why_not`` asks for one, for ``--explain``.

Capacity can also be *blocked* on chosen nodes (a backfill reservation) with placeholder pods that request
GPUs only; they live between ``block`` and ``unblock`` and are never reported as jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from gangplane.schedulers.core.gang import place_gang
from gangplane.schedulers.core.objects import NodeInfo, PodInfo
from gangplane.schedulers.core.resources import CPU, GPU, MEMORY, PODS, ResourceIndex, Vector, amount
from gangplane.schedulers.core.scoring import Strategy
from gangplane.schedulers.core.snapshot import Snapshot
from gangplane.simulator.cluster import ClusterSpec, NodeSpec
from gangplane.simulator.jobs import JobSpec

NAMESPACE = "sim"
MAX_PODS_PER_NODE = 110


def node_info(node: NodeSpec) -> NodeInfo:
    allocatable = {
        CPU: amount(CPU, node.cpu),
        MEMORY: amount(MEMORY, node.memory),
        PODS: MAX_PODS_PER_NODE,
        GPU: node.gpus,
    }
    return NodeInfo(node.name, allocatable, dict(node.labels))


class GangPlacer:
    """Jobs on one snapshot. Not thread-safe; one per policy."""

    def __init__(self, cluster: ClusterSpec, strategy: Strategy = Strategy.BINPACK) -> None:
        self.index = ResourceIndex([GPU])
        self.snapshot = Snapshot(self.index, [node_info(node) for node in cluster.nodes])
        self.strategy = strategy
        self._gpu = self.index.position(GPU)
        self._vectors: dict[tuple[int, float, float], Vector] = {}
        self._placed: dict[int, tuple[PodInfo, ...]] = {}
        self._blocks = 0

    def free_gpus(self) -> np.ndarray:
        column = self._gpu
        free: np.ndarray = self.snapshot.allocatable[:, column] - self.snapshot.requested[:, column]
        return free

    def might_fit(self, job: JobSpec, free: np.ndarray | None = None) -> bool:
        """False only when the GPU column alone rules ``job`` out; True means "ask the core"."""
        if job.gpus_per_member == 0:
            return True
        free = self.free_gpus() if free is None else free
        return int((np.maximum(free, 0) // job.gpus_per_member).sum()) >= job.members

    def place(self, job: JobSpec) -> tuple[str, ...] | None:
        """Assume every member of ``job`` via ``place_gang``; the node of each member, or ``None``."""
        pods = self.pods(job)
        placement = place_gang(
            self.snapshot, pods, min_member=len(pods), strategy=self.strategy, explain=False
        )
        if not placement.ok:
            return None
        self._placed[job.id] = pods
        return tuple(binding.node for binding in placement.bindings)

    def why_not(self, job: JobSpec) -> str:
        """``place_gang``'s explanation of why ``job`` does not fit now ("" if it does); changes nothing."""
        token = self.snapshot.checkpoint()
        placement = place_gang(self.snapshot, self.pods(job), min_member=job.members, strategy=self.strategy)
        self.snapshot.rollback(token)
        return placement.message

    def empty_like(self) -> GangPlacer:
        """A placer over the same nodes with nothing placed (a view of the cluster at another instant)."""
        other = GangPlacer.__new__(GangPlacer)
        other.index, other.strategy, other._gpu = self.index, self.strategy, self._gpu
        other.snapshot = Snapshot(self.index, self.snapshot.nodes)
        other._vectors, other._placed, other._blocks = self._vectors, {}, 0
        return other

    def put(self, job: JobSpec, nodes: tuple[str, ...]) -> None:
        """Assume ``job``'s members on ``nodes`` (member ``i`` on ``nodes[i]``) without checking fit."""
        pods = self.pods(job)
        for pod, node in zip(pods, nodes, strict=True):
            self.snapshot.assume(pod, self.snapshot.node_position(node))
        self._placed[job.id] = pods

    def place_on(self, job: JobSpec) -> tuple[str, ...] | None:
        """Where ``place_gang`` would put ``job`` now, without recording it; the node of each member."""
        token = self.snapshot.checkpoint()
        placement = place_gang(
            self.snapshot, self.pods(job), min_member=job.members, strategy=self.strategy, explain=False
        )
        self.snapshot.rollback(token)
        return tuple(binding.node for binding in placement.bindings) if placement.ok else None

    def bind(self, job: JobSpec, nodes: dict[str, str]) -> tuple[str, ...]:
        """Assume ``job``'s members where a scheduler core bound them (``pod key -> node``), as bound, running
        pods (``node_name`` and ``phase`` set, as the loop shell's snapshot has them); the node of each member.
        ``KeyError`` unless every member is bound."""
        pods = self.pods(job, lambda key: nodes[key])
        for pod in pods:
            self.snapshot.assume(pod, self.snapshot.node_position(pod.node_name))
        self._placed[job.id] = pods
        return tuple(pod.node_name for pod in pods)

    def release(self, job_id: int) -> dict[int, int]:
        """Forget ``job_id``'s members; GPUs freed per node row."""
        freed: dict[int, int] = {}
        for pod in self._placed.pop(job_id):
            row = self.snapshot.location(pod.key)
            self.snapshot.forget(pod.key)
            if row is not None:
                freed[row] = freed.get(row, 0) + int(pod.requests[self._gpu])
        return freed

    def gpus_by_node(self, job_id: int) -> dict[int, int]:
        """GPUs ``job_id`` holds per node row."""
        held: dict[int, int] = {}
        for pod in self._placed[job_id]:
            row = self.snapshot.location(pod.key)
            if row is not None:
                held[row] = held.get(row, 0) + int(pod.requests[self._gpu])
        return held

    def nodes_of(self, job_id: int) -> tuple[str, ...]:
        """The node of each member of placed job ``job_id``."""
        rows = [self.snapshot.location(pod.key) for pod in self._placed[job_id]]
        if None in rows:
            raise KeyError(f"job {job_id} is vacated")
        return tuple(self.snapshot.nodes[row].name for row in rows if row is not None)

    def is_placed(self, job_id: int) -> bool:
        return job_id in self._placed

    @property
    def running(self) -> int:
        """How many jobs are placed."""
        return len(self._placed)

    def trial(self, job: JobSpec) -> dict[int, int] | None:
        """Place ``job`` without recording it (callers roll the snapshot back); GPUs per node row."""
        placement = place_gang(
            self.snapshot, self.pods(job), min_member=job.members, strategy=self.strategy, explain=False
        )
        if not placement.ok:
            return None
        rows: dict[int, int] = {}
        for binding in placement.bindings:
            row = self.snapshot.node_position(binding.node)
            rows[row] = rows.get(row, 0) + job.gpus_per_member
        return rows

    def vacate(self, job_id: int) -> dict[int, int]:
        """Forget ``job_id``'s members but keep it recorded (callers roll the snapshot back)."""
        held = self.gpus_by_node(job_id)
        for pod in self._placed[job_id]:
            self.snapshot.forget(pod.key)
        return held

    def block(self, gpus: Mapping[int, int]) -> int:
        """Hold ``gpus[row]`` GPUs on each node row with placeholders; a token for ``unblock``."""
        token = self.snapshot.checkpoint()
        for row, count in sorted(gpus.items()):
            if count > 0:
                self._blocks += 1
                key = f"{NAMESPACE}/reserved-{self._blocks}"
                requests = self.index.vector({GPU: count})
                self.snapshot.assume(PodInfo(key, NAMESPACE, key, "", requests), row)
        return token

    def unblock(self, token: int, keep: int | None = None) -> None:
        """Drop placeholders assumed after ``token``; with ``keep`` (a job id placed while blocked) that
        job's members stay."""
        kept = self._placed.get(keep) if keep is not None else None
        rows = [self.snapshot.location(pod.key) for pod in kept] if kept else []
        self.snapshot.rollback(token)
        for pod, row in zip(kept or (), rows, strict=True):
            if row is not None:
                self.snapshot.assume(pod, row)

    def pods(self, job: JobSpec, bound: Callable[[str], str] | None = None) -> tuple[PodInfo, ...]:
        """``job``'s members as the core sees them: ``sim/j<id>-<i>``, gang ``sim/j<id>``, created at arrival;
        with ``bound`` (pod key -> node), as bound, running pods on those nodes (built so, not copied)."""
        requests = self._vector(job)
        group = f"{NAMESPACE}/j{job.id}"
        keys = [f"{group}-{i}" for i in range(job.members)]
        where = [bound(key) for key in keys] if bound is not None else [""] * job.members
        phase = "Running" if bound is not None else "Pending"
        return tuple(
            PodInfo(
                key,
                NAMESPACE,
                f"j{job.id}-{i}",
                "",
                requests,
                priority=job.priority,
                group=group,
                created=job.arrival,
                node_name=where[i],
                phase=phase,
            )
            for i, key in enumerate(keys)
        )

    def _vector(self, job: JobSpec) -> Vector:
        key = (job.gpus_per_member, job.cpu_per_member, job.memory_per_member)
        if key not in self._vectors:
            wanted: dict[str, int] = {GPU: job.gpus_per_member}
            if job.cpu_per_member:
                wanted[CPU] = amount(CPU, job.cpu_per_member)
            if job.memory_per_member:
                wanted[MEMORY] = amount(MEMORY, job.memory_per_member)
            self._vectors[key] = self.index.pod_vector(wanted)
        return self._vectors[key]


__all__ = ["GangPlacer", "node_info"]
