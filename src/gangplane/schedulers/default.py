"""The default scheduler (``default-scheduler``), with Coscheduling installed as scheduler-plugins does.

One cycle walks the queue once: pending pods sorted by priority, then by creation time (a gang by its
PodGroup's creation, or its last failure), then by key — kube-scheduler's PrioritySort, and Coscheduling's
QueueSort, which keeps gang members adjacent. A plain pod is placed alone (spread, as kube-scheduler's default
LeastAllocated scoring); a pod that fits nowhere may preempt lower-priority pods. A pod labelled with a
PodGroup is placed with its whole gang: PreFilter (enough members, ``minResources``), then all-or-nothing
placement of every pending member at once; a failed gang is rejected whole and backed off, unless the share
of ``minMember`` still missing is within ``podGroupRejectPercentage``. Before any of that, kube-scheduler's
VolumeBinding PreFilter holds pods whose claims are unusable (``volume_binding.py``). A PodGroup's status is
recomputed from its pods in the cycle after they or it changed (``ClusterView.changes``; every cycle in a pure
pass) and written when it differs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gangplane.api.scheduling import coscheduling as cs
from gangplane.api.scheduling.slurm import SCHEDULER_NAME as SLURM_BRIDGE
from gangplane.clock import rfc3339
from gangplane.schedulers import coscheduling as cos
from gangplane.schedulers.base import (
    Changes,
    ClusterView,
    CycleResult,
    Eviction,
    PendingReason,
    Queueing,
    Status,
    StatusWrite,
)
from gangplane.schedulers.core.fit import explain
from gangplane.schedulers.core.gang import place_gang
from gangplane.schedulers.core.objects import BROKEN_INPUT, DEFAULT_SCHEDULER, NEVER, PodInfo
from gangplane.schedulers.core.preemption import find_victims
from gangplane.schedulers.core.scoring import Strategy
from gangplane.schedulers.volume_binding import Claims
from gangplane.store.base import ResourceType
from gangplane.store.catalog import COSCHEDULING_PODGROUPS, PERSISTENT_VOLUME_CLAIMS, PODS, STORAGE_CLASSES

PREEMPTED_REASON = "Preempted"


@dataclass(frozen=True, slots=True)
class _Unit:
    """One queue entry: a plain pod, or the pending members of one gang."""

    priority: int
    stamp: float
    key: str
    pods: tuple[PodInfo, ...]
    group: cos.GroupSpec | None = None


class DefaultScheduler:
    """``default-scheduler`` semantics for plain pods plus the Coscheduling plugin for PodGroup members."""

    queueing = Queueing.PER_UNIT  # kube-scheduler's queue: one cycle sees the active pods and gangs only

    def __init__(
        self,
        name: str = DEFAULT_SCHEDULER,
        *,
        strategy: Strategy = Strategy.SPREAD,
        preemption: bool = True,
        coscheduling: cos.CoschedulingArgs | None = None,
    ) -> None:
        self._name = name
        self.strategy = strategy
        self.preemption = preemption
        self.args = coscheduling or cos.CoschedulingArgs()
        self.backoff = cos.GroupBackoff()

    @property
    def name(self) -> str:
        return self._name

    @property
    def watches(self) -> tuple[ResourceType, ...]:
        return (COSCHEDULING_PODGROUPS, PODS, PERSISTENT_VOLUME_CLAIMS, STORAGE_CLASSES)

    def group_of(self, pod: Mapping[str, Any]) -> str | None:
        return cos.group_of(pod)

    def may_attempt(self, group: str, changes: Changes) -> bool:
        """QueueingHint for a new member of ``group``: worth an attempt only once its gang has ``minMember``
        (ungated) pods — before that PreFilter rejects it for the reason its siblings already carry."""
        pod_group = changes.get(COSCHEDULING_PODGROUPS, group)
        return cos.may_pass_prefilter(pod_group, changes.members(group), self.args)

    def cycle(self, view: ClusterView) -> CycleResult:
        result = CycleResult()
        groups = cos.PodGroups(view, self.args)
        for run in _runs(self._queue(view, groups, result)):
            if run[0].group is None:
                self._schedule_pods(view, [unit.pods[0] for unit in run], result)
            else:
                self._schedule_gang(view, run[0], groups.members(run[0].key), result)
        result.status_writes.extend(self._pod_group_statuses(view, groups))
        return result

    # -- queue ----------------------------------------------------------------------------------------------
    def _queue(self, view: ClusterView, groups: cos.PodGroups, result: CycleResult) -> list[_Unit]:
        units: list[_Unit] = []
        gangs: dict[str, list[PodInfo]] = {}
        for pod in self._volume_filtered(view, result):
            if pod.gated:
                continue  # PreEnqueue: gated pods never enter the queue
            if pod.group is None:
                units.append(_Unit(pod.priority, pod.created, pod.key, (pod,)))
            else:
                gangs.setdefault(pod.group, []).append(pod)
        for key, pods in gangs.items():
            spec = groups.spec(key)
            if not isinstance(spec, cos.GroupSpec):  # Permit: a labelled pod needs a usable PodGroup
                status = Status.UNSCHEDULABLE if spec is None else Status.ERROR
                message, reason = (f"PodGroup {key} not found", "Unschedulable") if spec is None else spec
                result.pending.append(PendingReason(_keys(pods), status, message, reason, group=key))
                continue
            top = max(p.priority for p in pods)
            units.append(_Unit(top, self.backoff.queue_time(spec), key, tuple(pods), spec))
        return sorted(units, key=lambda u: (-u.priority, u.stamp, u.key))

    def _volume_filtered(self, view: ClusterView, result: CycleResult) -> list[PodInfo]:
        """VolumeBinding PreFilter (``volume_binding.py``): pods whose claims refuse them wait with the reason;
        the claims are read only when some pending pod has one."""
        if not any(pod.claims for pod in view.pending):
            return list(view.pending)
        claims = Claims.of(view.objects_of(PERSISTENT_VOLUME_CLAIMS), view.objects_of(STORAGE_CLASSES))
        kept: list[PodInfo] = []
        for pod in view.pending:
            refusal = None if pod.gated else claims.refusal(pod)
            if refusal is None:
                kept.append(pod)
            else:
                status = Status.UNSCHEDULABLE_AND_UNRESOLVABLE
                result.pending.append(PendingReason((pod.key,), status, refusal, group=pod.group))
        return kept

    # -- plain pods -----------------------------------------------------------------------------------------
    def _schedule_pods(self, view: ClusterView, pods: list[PodInfo], result: CycleResult) -> None:
        """A run of alike plain pods (same priority, requests and constraints, adjacent in the queue) is
        placed by one node search: each takes one of the best-scored nodes with room, as one-at-a-time
        cycles would spread them; what does not fit then goes alone (preemption, the reason why)."""
        if len(pods) > 1:
            placement = place_gang(view.snapshot, pods, min_member=1, strategy=self.strategy, explain=False)
            result.bindings.extend(placement.bindings)
            placed = {b.pod_key for b in placement.bindings}
            pods = [p for p in pods if p.key not in placed]
        for pod in pods:
            self._schedule_pod(view, pod, result)

    def _schedule_pod(self, view: ClusterView, pod: PodInfo, result: CycleResult) -> None:
        placement = place_gang(view.snapshot, [pod], min_member=1, strategy=self.strategy)
        if placement.ok:
            result.bindings.extend(placement.bindings)
        elif not (self.preemption and self._preempt(view, pod, result)):
            message = explain(view.snapshot, pod).message()
            if pod.preemption_policy == NEVER:
                message += "; not eligible to preempt: preemptionPolicy is Never"
            result.pending.append(PendingReason((pod.key,), Status.UNSCHEDULABLE, message))

    def _preempt(self, view: ClusterView, pod: PodInfo, result: CycleResult) -> bool:
        """PostFilter: evict the fewest lower-priority pods that make room; the preemptor keeps the room
        (assumed in the snapshot) and binds in a later cycle once the victims are gone. Like kube-scheduler's
        ``PodEligibleToPreemptOthers``, nothing more is evicted while lower-priority pods are still terminating."""
        if pod.preemption_policy == NEVER:  # ``PodEligibleToPreemptOthers``: such a pod only waits
            return False
        lower = [p for p in view.snapshot.pods() if p.priority < pod.priority]
        if not lower or any(p.terminating for p in lower):
            return False
        victims = find_victims(
            view.snapshot,
            pod,
            lambda v: v.priority < pod.priority and not v.terminating,
            strategy=self.strategy,
        )
        if not victims:
            return False
        for victim in victims:
            view.snapshot.forget(victim.key)
            message = f"preempted by {pod.key} (priority {pod.priority} > {victim.priority})"
            result.evictions.append(Eviction(victim.key, PREEMPTED_REASON, message))
        place_gang(view.snapshot, [pod], min_member=1, strategy=self.strategy)
        message = f"preempting {len(victims)} lower-priority pod(s); waiting for them to terminate"
        result.pending.append(PendingReason((pod.key,), Status.WAIT, message))
        return True

    # -- gangs ----------------------------------------------------------------------------------------------
    def _schedule_gang(
        self, view: ClusterView, unit: _Unit, members: Sequence[Any], result: CycleResult
    ) -> None:
        spec = unit.group
        assert spec is not None
        keys = _keys(unit.pods)
        if self.backoff.backed_off(spec.key, view.now):
            until = rfc3339(self.backoff.until[spec.key])
            message = f"pod group {spec.key} failed recently; backing off until {until}"
            result.pending.append(PendingReason(keys, Status.WAIT, message, group=spec.key))
            return
        rejected = cos.prefilter_members(spec, members) or cos.prefilter_resources(spec, view.snapshot)
        if rejected is not None:
            result.pending.append(PendingReason(keys, rejected.status, rejected.message, group=spec.key))
            return
        assigned = len(view.snapshot.group_members(spec.key))
        need = max(spec.min_member - assigned, 1)
        placement = place_gang(view.snapshot, unit.pods, min_member=need, strategy=self.strategy)
        if placement.ok:
            self.backoff.record_success(spec.key)
            result.bindings.extend(placement.bindings)
            if placement.unplaced:
                message = f"pod group {spec.key} is placed; this member does not fit yet"
                result.pending.append(
                    PendingReason(placement.unplaced, Status.UNSCHEDULABLE, message, group=spec.key)
                )
            return
        if not cos.rejects_group(spec.min_member, assigned, self.args.pod_group_reject_percentage):
            # a small gap to the quorum: upstream's PostFilter leaves the group alone (no failure time, no
            # back-off) so later members may still close it
            message = f"pod group {spec.key} is not rejected (small gap to minMember): {placement.message}"
            result.pending.append(PendingReason(keys, Status.UNSCHEDULABLE, message, group=spec.key))
            return
        complete = len(members) >= spec.min_member
        self.backoff.record_failure(spec.key, view.now, self.args.pod_group_backoff_seconds, complete)
        message = f"pod group {spec.key} rejected as a whole: {placement.message}"
        result.pending.append(PendingReason(keys, Status.UNSCHEDULABLE, message, group=spec.key))

    # -- PodGroup status ------------------------------------------------------------------------------------
    def _pod_group_statuses(self, view: ClusterView, groups: cos.PodGroups) -> list[StatusWrite]:
        """Status of the changed PodGroups this instance owns: those with a member naming this scheduler, and —
        for the ``scheduler-plugins-scheduler`` instance — those with no pods yet (so exactly one instance
        writes). Written only when it differs from the status the PodGroup carries."""
        writes: list[StatusWrite] = []
        for key, pg in groups.changed():
            meta = pg.get("metadata") or {}
            group = groups.members(key)
            if not self._owns(group):
                continue
            try:
                status = cos.pod_group_status(pg, group, view.now)
            except BROKEN_INPUT:  # a malformed PodGroup: its pods carry the reason; no status to compute
                continue
            old = pg.get("status") or {}
            if status != old:
                namespace = meta.get("namespace") or ""
                writes.append(StatusWrite(COSCHEDULING_PODGROUPS, namespace, meta["name"], status, old))
        return writes

    def _owns(self, group: Sequence[Mapping[str, Any]]) -> bool:
        """The scheduler-plugins controller keeps every PodGroup's phase: here the instance whose pods the
        group holds, and ``scheduler-plugins-scheduler`` for groups with no pods yet or whose pods Slurm
        Bridge places (its PodGroup phase then follows the Slurm job through the pods)."""
        names = {(p.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER for p in group}
        if not names or names == {SLURM_BRIDGE}:
            return self._name == cs.SCHEDULER_NAME
        return self._name in names


def _alike(pod: PodInfo) -> tuple[object, ...]:
    return (pod.priority, pod.requests.tobytes(), pod.constraints, pod.preemption_policy)


def _runs(units: list[_Unit]) -> list[list[_Unit]]:
    """The queue in order, adjacent plain pods that are alike (``_alike``) as one run; a gang alone."""
    runs: list[list[_Unit]] = []
    for unit in units:
        last = runs[-1][-1] if runs else None
        plain = unit.group is None and last is not None and last.group is None
        if plain and last is not None and _alike(last.pods[0]) == _alike(unit.pods[0]):
            runs[-1].append(unit)
        else:
            runs.append([unit])
    return runs


def _keys(pods: Sequence[PodInfo]) -> tuple[str, ...]:
    return tuple(p.key for p in pods)


__all__ = ["PREEMPTED_REASON", "DefaultScheduler"]
