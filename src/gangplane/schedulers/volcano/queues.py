"""Volcano Queue objects as share-plugin inputs: policies from specs, demands from the session's jobs.

Upstream creates ``root`` (weight 1, not reclaimable) and ``default`` (weight 1, reclaimable) when missing
(volcano.md §3); gangplane adds the same two in memory for the cycle without writing them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from gangplane.api.scheduling import volcano as vc
from gangplane.schedulers.core.resources import CPU, MEMORY, PODS, ResourceIndex, amount
from gangplane.schedulers.volcano import vec
from gangplane.schedulers.volcano.book import QueueDemand
from gangplane.schedulers.volcano.jobs import Job, TaskStatus
from gangplane.schedulers.volcano.proportion import ROOT, QueuePolicy, QueueState
from gangplane.schedulers.volcano.vec import Vec

_ROOT_QUEUE: Mapping[str, Any] = {"metadata": {"name": ROOT}, "spec": {"weight": 1, "reclaimable": False}}
_DEFAULT_QUEUE: Mapping[str, Any] = {"metadata": {"name": vc.DEFAULT_QUEUE}, "spec": {"weight": 1}}


def with_builtin_queues(objs: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The Queues by name, with ``root`` and ``default`` where missing: the same two objects every cycle
    (read-only, as every Queue object is), so a kept session sees them unchanged."""
    found: dict[str, Mapping[str, Any]] = {q["metadata"]["name"]: q for q in objs}
    found.setdefault(ROOT, _ROOT_QUEUE)
    found.setdefault(vc.DEFAULT_QUEUE, _DEFAULT_QUEUE)
    return dict(sorted(found.items()))


def _vector(index: ResourceIndex, given: Mapping[str, Any] | None, fill: float) -> Vec:
    out = np.full(len(index), fill, dtype=np.float64)
    for name, quantity in (given or {}).items():
        if name in index and name != PODS:
            out[index.position(name)] = float(amount(name, quantity))
    out[index.position(PODS)] = fill
    return out


def _capability(index: ResourceIndex, given: Mapping[str, Any] | None) -> Vec:
    """Unset dimensions are unbounded; a cpu/memory value ≤ 0 is unbounded too (proportion and flat capacity)."""
    cap = _vector(index, given, np.inf)
    for name in (CPU, MEMORY):
        if cap[index.position(name)] <= 0:
            cap[index.position(name)] = np.inf
    return cap


def policy_of(obj: Mapping[str, Any], index: ResourceIndex) -> QueuePolicy:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    name = meta["name"]
    deserved = spec.get("deserved")
    return QueuePolicy(
        name=name,
        capability=_capability(index, spec.get("capability")),
        guarantee=_vector(index, (spec.get("guarantee") or {}).get("resource"), 0.0),
        weight=max(1, int(spec.get("weight") or 1)),
        deserved=None if deserved is None else _vector(index, deserved, 0.0),
        reclaimable=bool(spec.get("reclaimable", name != ROOT)),
        priority=int(spec.get("priority") or 0),
        state=QueueState(status.get("state") or QueueState.OPEN),
        parent=spec.get("parent") if name != ROOT else None,
        order=(meta.get("creationTimestamp") or "", meta.get("uid") or ""),
        annotations=dict(meta.get("annotations") or {}),
    )


def _float(row: Any, pods_col: int) -> Vec:
    out = np.asarray(row, dtype=np.float64).copy()
    out[pods_col] = 0.0
    return out


def job_demand(job: Job, width: int, pods_col: int) -> QueueDemand:
    allocated = _float(job.allocated(width), pods_col)
    pending = vec.zeros(width)
    for task in job.tasks:
        if task.status == TaskStatus.PENDING:
            pending += _float(task.pod.requests, pods_col)
    inqueue, elastic = vec.zeros(width), vec.zeros(width)
    if job.min_resources is not None:
        minimum = _float(job.min_resources, pods_col)
        counted = job.phase == vc.PodGroupPhase.INQUEUE or (
            job.phase == vc.PodGroupPhase.RUNNING and job.ready_count() >= job.min_member
        )
        if counted:
            inqueue = vec.positive_part(minimum - allocated)
        elastic = vec.positive_part(allocated - minimum)
    return QueueDemand(allocated, allocated + pending, inqueue, elastic)


def demands(
    jobs: Iterable[Job],
    width: int,
    pods_col: int,
    kept: Callable[[Job, Callable[[Job], QueueDemand]], QueueDemand] | None = None,
) -> dict[str, QueueDemand]:
    """Per queue, the sum of its jobs' demands; ``kept(job, compute)`` may answer a job's from a cache.
    Sums are over whole stacks (the vectors hold whole units, so the order of additions cannot matter)."""
    per_queue: dict[str, list[QueueDemand]] = {}

    def compute(job: Job) -> QueueDemand:
        return job_demand(job, width, pods_col)

    for job in jobs:
        per_queue.setdefault(job.queue, []).append(compute(job) if kept is None else kept(job, compute))
    return {queue: _sum(parts) for queue, parts in per_queue.items()}


def _sum(parts: list[QueueDemand]) -> QueueDemand:
    if len(parts) == 1:
        return parts[0]
    stacked = np.array([(d.allocated, d.request, d.inqueue, d.elastic) for d in parts]).sum(axis=0)
    return QueueDemand(stacked[0], stacked[1], stacked[2], stacked[3])
