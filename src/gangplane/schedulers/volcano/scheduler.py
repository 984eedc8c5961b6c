"""The embedded Volcano scheduler: one session per cycle, the configured actions in order, then close.

Implements ``gangplane.schedulers.base.Scheduler``. Stateless between cycles: everything it needs is in the
view (PodGroups, Queues, HyperNodes, PriorityClasses and the pods), so equal views give equal results.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gangplane.schedulers.base import ClusterView, CycleResult
from gangplane.schedulers.volcano import status
from gangplane.schedulers.volcano.actions.allocate import allocate
from gangplane.schedulers.volcano.actions.backfill import backfill
from gangplane.schedulers.volcano.actions.enqueue import enqueue
from gangplane.schedulers.volcano.actions.preempt import preempt
from gangplane.schedulers.volcano.actions.reclaim import reclaim
from gangplane.schedulers.volcano.config import Action, VolcanoConfig
from gangplane.schedulers.volcano.session import Session, group_of, open_session
from gangplane.store.base import ResourceType
from gangplane.store.catalog import HYPERNODES, PODS, PRIORITY_CLASSES, VOLCANO_PODGROUPS, VOLCANO_QUEUES

ACTIONS: Mapping[Action, Callable[[Session], None]] = {
    Action.ENQUEUE: enqueue,
    Action.ALLOCATE: allocate,
    Action.PREEMPT: preempt,
    Action.RECLAIM: reclaim,
    Action.BACKFILL: backfill,
}


class VolcanoScheduler:
    """``volcano``: PodGroup gangs in weighted queues, HyperNode topology, preempt and reclaim."""

    watches: tuple[ResourceType, ...] = (
        PODS,
        VOLCANO_PODGROUPS,
        VOLCANO_QUEUES,
        HYPERNODES,
        PRIORITY_CLASSES,
    )

    def __init__(self, config: VolcanoConfig | None = None, name: str | None = None) -> None:
        self.config = config or VolcanoConfig()
        self._name = name or self.config.scheduler_names[0]

    @property
    def name(self) -> str:
        return self._name

    def group_of(self, pod: Mapping[str, Any]) -> str | None:
        return group_of(pod)

    def cycle(self, view: ClusterView) -> CycleResult:
        session = open_session(view, self.config)
        for action in self.config.actions:
            ACTIONS[action](session)
        return close(session, view)


def close(session: Session, view: ClusterView) -> CycleResult:
    pod_group_writes = status.pod_group_writes(session)
    phases = {job.key: status.phase(session, job, False) for job in session.jobs.values()}
    for write in pod_group_writes:
        phases[f"{write.namespace}/{write.name}"] = str(write.status.get("phase"))
    pending_groups = {p.key: group_of_info(p.group, p.namespace, p.name) for p in view.pending}
    return CycleResult(
        bindings=list(session.bindings),
        evictions=list(session.evictions),
        status_writes=[*pod_group_writes, *status.queue_writes(session, phases)],
        pending=[*status.pending_reasons(session), *status.left_out_reasons(session, pending_groups)],
    )


def group_of_info(group: str | None, namespace: str, name: str) -> str:
    return group or f"{namespace}/{name}"
