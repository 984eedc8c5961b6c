"""The embedded KAI scheduler: one session per cycle, actions in order, then status (kai.md §5).

Implements ``gangplane.schedulers.base.Scheduler``. Between cycles it keeps only a memo of parsed inputs
(``memo.py``): the same views give the same results with or without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gangplane.schedulers.base import ClusterView, CycleResult
from gangplane.schedulers.kai import status
from gangplane.schedulers.kai.actions import ACTIONS
from gangplane.schedulers.kai.memo import KaiMemo
from gangplane.schedulers.kai.model import JOBSET_NAME_LABEL
from gangplane.schedulers.kai.session import KaiConfig, group_name, open_session
from gangplane.store.base import ResourceType
from gangplane.store.catalog import JOBSETS, KAI_PODGROUPS, KAI_QUEUES, PODS, PRIORITY_CLASSES


class KaiScheduler:
    """``kai-scheduler``: hierarchical queues with fair share, SubGroup gangs, reclaim and preempt."""

    watches: tuple[ResourceType, ...] = (PODS, KAI_PODGROUPS, KAI_QUEUES, JOBSETS, PRIORITY_CLASSES)

    def __init__(self, config: KaiConfig | None = None) -> None:
        self.config = config or KaiConfig()
        self.memo = KaiMemo()

    @property
    def name(self) -> str:
        return self.config.scheduler_name

    def group_of(self, pod: Mapping[str, Any]) -> str | None:
        """The named PodGroup, else the pod's JobSet (the pod-grouper's group), else ``None``."""
        if (key := group_name(pod)) is not None:
            return key
        meta = pod.get("metadata") or {}
        jobset = (meta.get("labels") or {}).get(JOBSET_NAME_LABEL)
        return f"{meta.get('namespace') or 'default'}/jobset:{jobset}" if jobset else None

    def cycle(self, view: ClusterView) -> CycleResult:
        self.memo.evicting.expire(view.now)
        session = open_session(view, self.config, self.memo)
        try:
            for action in self.config.actions:
                ACTIONS[action](session)
        except BaseException:
            self.memo.kept = None  # its jobs may be half changed: build them again next cycle
            raise
        # jobs the cycle changed in place (bound members, victims) are built again from their objects
        self.memo.dirty = session.bound_now | session.pipelined | session.touched
        self.memo.evicting.add(session.evicted, view.now)  # releasing until the view shows them deleting
        if not self.config.explain:  # nobody reads status or reasons; no decision depends on them
            return CycleResult(bindings=list(session.bindings), evictions=list(session.evictions))
        return CycleResult(
            bindings=list(session.bindings),
            evictions=list(session.evictions),
            status_writes=[
                *status.pod_group_writes(session),
                *status.queue_writes(session, list(view.objects_of(KAI_QUEUES))),
            ],
            pending=status.pending_reasons(session),
        )
