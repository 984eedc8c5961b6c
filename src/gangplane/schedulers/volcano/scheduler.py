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
from gangplane.schedulers.volcano.kept import Kept
from gangplane.schedulers.volcano.memo import Memo, Settled, Victims
from gangplane.schedulers.volcano.reopen import open_kept_session
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
        self._kept = Kept()  # the session kept across passes when no "why pending" text is built
        self._victims = Victims()  # pods evicted, Releasing until the view shows their deletion
        self._wrote: dict[str, status.Wrote] = {}  # the PodGroup statuses the last kept close wrote

    @property
    def name(self) -> str:
        return self._name

    def group_of(self, pod: Mapping[str, Any]) -> str | None:
        return group_of(pod)

    def cycle(self, view: ClusterView) -> CycleResult:
        if not self.config.explain:
            return self._kept_cycle(view)
        self._memo.forget(self._victims.begin(view.now))
        session = open_session(view, self.config, self._memo, self._victims.evicting)
        for action in self.config.actions:
            ACTIONS[action](session)
        self._victims.end(session.evicted, view.now)
        result = close(session, view, self._memo.settled)
        self._memo.sweep()
        return result

    def _kept_cycle(self, view: ClusterView) -> CycleResult:
        """The same cycle over the session kept across passes (``kept.py``); a cycle that fails part way
        leaves nothing kept (the next one parses everything again)."""
        try:
            self._kept.reread |= self._victims.begin(view.now)
            session = open_kept_session(view, self.config, self._memo, self._kept, self._victims.evicting)
            for action in self.config.actions:
                ACTIONS[action](session)
            self._victims.end(session.evicted, view.now)
            wrote: dict[str, status.Wrote] = {}
            result = close_kept(session, view, self._kept, (self._wrote, wrote))
            self._wrote = wrote
            return result
        except BaseException:
            self._kept.clear()
            self._wrote = {}
            raise


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


def close_kept(
    session: Session,
    view: ClusterView,
    kept: Kept,
    wrote: tuple[Mapping[str, status.Wrote], dict[str, status.Wrote]] | None = None,
) -> CycleResult:
    """``close`` over the jobs whose status may have changed: those the session or the view changed, and
    those whose last status was not settled; every other job keeps its status and phase (without "why
    pending" text a status depends on the job alone). Then the session's changes to jobs are put back.
    ``wrote``: the last close's PodGroup writes, and this close's to fill (``status.pod_group_writes``)."""
    visit = kept.visit | session.touched | session.pipelined
    jobs = [kept.jobs[key] for key in sorted(visit) if key in kept.jobs]
    pod_group_writes, phases = status.pod_group_writes(session, kept.settled, jobs, wrote)
    for job in jobs:
        kept.note_phase(job.key, job.queue, phases[job.key])
    kept.visit = {job.key for job in jobs if job.key not in kept.settled} | session.touched
    kept.reread = {f"{w.namespace}/{w.name}" for w in pod_group_writes}
    kept.reset(session.touched)
    queue_writes = status.queue_writes_of(session, kept.counts, kept.queues_said, kept.recounted)
    kept.recounted = set()
    pending = []
    if session.left_out:
        pending_groups = {p.key: group_of_info(p.group, p.namespace, p.name) for p in view.pending}
        pending = status.left_out_reasons(session, pending_groups)
    return CycleResult(
        bindings=list(session.bindings),
        evictions=list(session.evictions),
        status_writes=[*pod_group_writes, *queue_writes],
        pending=pending,
    )


def group_of_info(group: str | None, namespace: str, name: str) -> str:
    return group or f"{namespace}/{name}"
