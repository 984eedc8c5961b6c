"""The embedded Volcano scheduler: one session per cycle, the configured actions in order, then close.

Implements ``gangplane.schedulers.base.Scheduler``. Everything it decides from is in the view (PodGroups,
Queues, HyperNodes, PriorityClasses and the pods), so equal views give equal results; between cycles it keeps
only a cache of what it parsed (``memo.py``, by resourceVersion).
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
from gangplane.schedulers.volcano.memo import Memo, Settled
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
        self._memo = Memo()  # parsed objects by resourceVersion: a cache, equal views still decide alike

    @property
    def name(self) -> str:
        return self._name

    def group_of(self, pod: Mapping[str, Any]) -> str | None:
        return group_of(pod)

    def cycle(self, view: ClusterView) -> CycleResult:
        session = open_session(view, self.config, self._memo)
        for action in self.config.actions:
            ACTIONS[action](session)
        result = close(session, view, self._memo.settled)
        self._memo.sweep()
        return result


def close(session: Session, view: ClusterView, settled: dict[str, Settled] | None = None) -> CycleResult:
    pod_group_writes, phases = status.pod_group_writes(session, {} if settled is None else settled)
    pending = status.pending_reasons(session) if session.config.explain else []
    if session.left_out:
        pending_groups = {p.key: group_of_info(p.group, p.namespace, p.name) for p in view.pending}
        pending += status.left_out_reasons(session, pending_groups)
    return CycleResult(
        bindings=list(session.bindings),
        evictions=list(session.evictions),
        status_writes=[*pod_group_writes, *status.queue_writes(session, phases)],
        pending=pending,
    )


def group_of_info(group: str | None, namespace: str, name: str) -> str:
    return group or f"{namespace}/{name}"
