"""Coscheduling (scheduler-plugins) as installed in the default scheduler: PodGroup gangs, all or nothing.

The rules are those of ``pkg/coscheduling/coscheduling.go`` and ``pkg/controllers/podgroup_controller.go``
(reference/coscheduling.md §5, §6) with one deliberate difference: Permit places the *whole* gang in one pass
(``core.gang.place_gang``) instead of holding members assumed across cycles until ``minMember`` arrive, so
two gangs can never hoard partial reservations against each other (docs/coscheduling.md, "Local semantics").
Everything here is pure; the only state, ``GroupBackoff``, is owned by the scheduler instance.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gangplane.api.scheduling import coscheduling as cs
from gangplane.clock import parse_rfc3339, rfc3339
from gangplane.schedulers.base import ClusterView, PendingReason, Status
from gangplane.schedulers.core.objects import BROKEN_INPUT, TERMINAL_PHASES
from gangplane.schedulers.core.resources import PODS, amounts
from gangplane.schedulers.core.snapshot import Snapshot
from gangplane.store import catalog

Obj = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class CoschedulingArgs:
    """``CoschedulingArgs`` (``apis/config/v1/defaults.go``)."""

    permit_waiting_time_seconds: int = cs.DEFAULT_PERMIT_WAITING_TIME_SECONDS
    pod_group_backoff_seconds: int = cs.DEFAULT_POD_GROUP_BACKOFF_SECONDS
    pod_group_reject_percentage: int = cs.DEFAULT_POD_GROUP_REJECT_PERCENTAGE


def group_of(pod: Obj) -> str | None:
    """``"<namespace>/<PodGroup name>"`` from the membership label (or its pre-2023 spelling)."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    name = labels.get(cs.POD_GROUP_LABEL) or labels.get(cs.LEGACY_POD_GROUP_LABEL)
    return f"{meta.get('namespace') or 'default'}/{name}" if name else None


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """What the scheduler reads from one PodGroup."""

    key: str
    min_member: int
    min_resources: Mapping[str, int]
    timeout_seconds: int
    created: float

    @classmethod
    def of(cls, obj: Obj, args: CoschedulingArgs) -> GroupSpec:
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        timeout = spec.get("scheduleTimeoutSeconds")
        stamp = meta.get("creationTimestamp")
        return cls(
            key=f"{meta.get('namespace') or 'default'}/{meta.get('name')}",
            min_member=max(int(spec.get("minMember") or 1), 1),
            min_resources=amounts(spec.get("minResources") or {}),
            timeout_seconds=int(timeout) if timeout else args.permit_waiting_time_seconds or 60,
            created=parse_rfc3339(stamp) if stamp else 0.0,
        )


INVALID_POD_GROUP = "InvalidPodGroup"


def object_key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def group_spec(obj: Obj, args: CoschedulingArgs) -> GroupSpec | tuple[str, str]:
    """A PodGroup's spec, or ``(message, reason)`` for a malformed one: only its own pods wait on it."""
    try:
        return GroupSpec.of(obj, args)
    except BROKEN_INPUT as err:
        return (f"PodGroup {object_key(obj)} is malformed: {err}", INVALID_POD_GROUP)


def group_specs(objs: Iterable[Obj], args: CoschedulingArgs) -> dict[str, GroupSpec | tuple[str, str]]:
    """Each PodGroup's spec (``group_spec``) by key."""
    return {object_key(obj): group_spec(obj, args) for obj in objs}


class PodGroups:
    """The PodGroups and members one cycle reads. With the loop's ``Changes`` only what the cycle touches is
    read (a pending gang's PodGroup and members, by key) and statuses are recomputed only for the groups that
    changed; without them (a pure pass, the simulator) every PodGroup and pod is read once, every status
    recomputed."""

    def __init__(self, view: ClusterView, args: CoschedulingArgs) -> None:
        self._changes, self._args = view.changes, args
        self._specs: dict[str, GroupSpec | tuple[str, str]] = {}
        self._objects: dict[str, Obj] = {}
        self._members: dict[str, list[Obj]] = {}
        if self._changes is None:
            self._objects = {object_key(o): o for o in view.objects_of(catalog.COSCHEDULING_PODGROUPS)}
            self._specs = {key: group_spec(obj, args) for key, obj in self._objects.items()}
            # every pod is read only when some PodGroup exists: plain pods never need it
            self._members = members_by_group(view.objects_of(catalog.PODS)) if self._objects else {}

    def spec(self, key: str) -> GroupSpec | tuple[str, str] | None:
        if self._changes is not None and key not in self._specs:
            obj = self._object(key)
            if obj is not None:
                self._specs[key] = group_spec(obj, self._args)
        return self._specs.get(key)

    def members(self, key: str) -> list[Obj]:
        """The group's pods not being deleted (upstream lists labelled pods in the namespace)."""
        if self._changes is None or key in self._members:
            return self._members.get(key, [])
        found = self._members[key] = [p for p in self._changes.members(key) if not _deleting(p)]
        return found

    def changed(self) -> list[tuple[str, Obj]]:
        """The PodGroups whose status may have changed, in key order."""
        if self._changes is None:
            return sorted(self._objects.items())
        found = ((key, self._object(key)) for key in sorted(self._changes.groups))
        return [(key, obj) for key, obj in found if obj is not None]

    def _object(self, key: str) -> Obj | None:
        if self._changes is None:
            return self._objects.get(key)
        return self._changes.get(catalog.COSCHEDULING_PODGROUPS, key)


def _deleting(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


@dataclass(slots=True)
class GroupBackoff:
    """Last failed attempt per group (moves the group back in the queue, upstream ``lastFailedSchedulePG``)
    and the back-off deadline (``backedOffPG``). Cleared on success."""

    failed_at: dict[str, float] = field(default_factory=dict)
    until: dict[str, float] = field(default_factory=dict)

    def record_failure(self, key: str, now: float, backoff_seconds: int, complete: bool) -> None:
        self.failed_at[key] = now
        if backoff_seconds > 0 and complete:
            self.until[key] = now + backoff_seconds

    def record_success(self, key: str) -> None:
        self.failed_at.pop(key, None)
        self.until.pop(key, None)

    def backed_off(self, key: str, now: float) -> bool:
        return self.until.get(key, float("-inf")) > now

    def queue_time(self, spec: GroupSpec) -> float:
        """QueueSort's group timestamp: the last failure if any, else the PodGroup's creation."""
        return self.failed_at.get(spec.key, spec.created)


def rejects_group(min_member: int, assigned: int, reject_percentage: int) -> bool:
    """PostFilter: does a member that fits nowhere reject (and back off) its whole group? Not when ``assigned``
    members already reach ``minMember``, nor when the share still missing is at most ``podGroupRejectPercentage``
    percent (a small gap may close with the next members; ``coscheduling.go`` ``PostFilter``)."""
    if assigned >= min_member:
        return False
    return (min_member - assigned) / min_member > reject_percentage / 100


def members_by_group(pods: Iterable[Obj]) -> dict[str, list[Obj]]:
    """Pods (not being deleted) per group key; upstream lists labelled pods in the namespace."""
    found: dict[str, list[Obj]] = {}
    for pod in pods:
        key = group_of(pod)
        if key is not None and not _deleting(pod):
            found.setdefault(key, []).append(pod)
    return found


def prefilter_members(spec: GroupSpec, members: Sequence[Obj]) -> PendingReason | None:
    """PreFilter steps 2–3: enough labelled pods, and enough of them without scheduling gates."""
    total = len(members)
    ungated = sum(1 for p in members if not (p.get("spec") or {}).get("schedulingGates"))
    if total >= spec.min_member and ungated >= spec.min_member:
        return None
    message = (
        f"pre-filter pod group {spec.key} cannot find enough sibling pods, current pods number: {total}, "
        f"ungated: {ungated}, minMember: {spec.min_member}"
    )
    return PendingReason((), Status.UNSCHEDULABLE_AND_UNRESOLVABLE, message, group=spec.key)


def may_pass_prefilter(pod_group: Obj | None, members: Sequence[Obj], args: CoschedulingArgs) -> bool:
    """The QueueingHint for a member added: can its gang now pass PreFilter's member counts? A missing or
    malformed PodGroup says yes (the attempt gives the reason)."""
    spec = group_spec(pod_group, args) if pod_group is not None else None
    if not isinstance(spec, GroupSpec):
        return True
    return prefilter_members(spec, [p for p in members if not _deleting(p)]) is None


def prefilter_resources(spec: GroupSpec, snapshot: Snapshot) -> PendingReason | None:
    """PreFilter step 4: ``minResources`` plus ``pods: minMember`` against the *sum* of free capacity over all
    nodes, this group's own bound pods counted as free — a feasibility check, never a packing. Unresolvable
    only when even the whole cluster's allocatable falls short; otherwise it waits for others to finish."""
    if not spec.min_resources:
        return None
    own = snapshot.group_members(spec.key)
    free = np.maximum(snapshot.free(), 0).sum(axis=0) + sum((p.requests for p in own), np.int64(0))
    total = snapshot.allocatable.sum(axis=0)
    need = np.zeros_like(total)
    for name, amount in {**spec.min_resources, PODS: spec.min_member}.items():
        if name in snapshot.index:
            need[snapshot.index.position(name)] = amount
        elif amount:
            return _group_reason(spec, f"needs {name}, which no node offers", unresolvable=True)
    if (need <= free).all():
        return None
    describe = snapshot.index.describe
    wants, short = _text(describe(need)), _text(describe(np.maximum(need - free, 0)))
    if not (need <= total).all():
        return _group_reason(spec, f"needs {wants} (minResources), more than the whole cluster has", True)
    message = f"needs {wants} free (minResources); {_text(describe(free))} free now, {short} short"
    return _group_reason(spec, message + " until running pods finish", unresolvable=False)


def _text(amounts: Mapping[str, str]) -> str:
    return ", ".join(f"{name}={value}" for name, value in sorted(amounts.items())) or "nothing"


def _group_reason(spec: GroupSpec, what: str, unresolvable: bool) -> PendingReason:
    status = Status.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Status.UNSCHEDULABLE
    return PendingReason((), status, f"pod group {spec.key} {what}", group=spec.key)


def _owners(pod: Obj) -> str:
    meta = pod.get("metadata") or {}
    names = sorted(f"{meta.get('namespace')}/{ref.get('name')}" for ref in meta.get("ownerReferences") or ())
    return ",".join(names)


def _step(phase: str, status: dict[str, Any], members: Sequence[Obj], min_member: int) -> str:
    """One transition of the upstream PodGroup controller (reference/coscheduling.md §6)."""
    if phase == "":
        return cs.PodGroupPhase.PENDING
    if phase == cs.PodGroupPhase.PENDING:
        if len(members) < min_member:
            return phase
        status["occupiedBy"] = _owners(members[0]) if members else ""
        return cs.PodGroupPhase.SCHEDULING
    phases = [(p.get("status") or {}).get("phase") for p in members]
    running, succeeded, failed = (phases.count(x) for x in ("Running", "Succeeded", "Failed"))
    status.update(running=running, succeeded=succeeded, failed=failed)
    if succeeded >= min_member:
        return cs.PodGroupPhase.FINISHED
    if failed > 0 and failed + running + succeeded >= min_member:
        return cs.PodGroupPhase.FAILED
    if len(members) < min_member:
        return cs.PodGroupPhase.PENDING
    return cs.PodGroupPhase.SCHEDULING if running + succeeded < min_member else cs.PodGroupPhase.RUNNING


def pod_group_status(pod_group: Obj, members: Sequence[Obj], now: float) -> dict[str, Any]:
    """The PodGroup's next status, computed purely from its pods: the controller's transitions applied until
    stable. ``scheduleStartTime`` is set when the group first leaves Pending. Terminal phases never change."""
    status = dict(pod_group.get("status") or {})
    phase = str(status.get("phase") or "")
    if phase in (cs.PodGroupPhase.FINISHED, cs.PodGroupPhase.FAILED) or gave_up(pod_group):
        return status
    min_member = max(int((pod_group.get("spec") or {}).get("minMember") or 1), 1)
    for _ in range(4):  # at most "" -> Pending -> Scheduling -> Running | Finished | Failed
        nxt = _step(phase, status, members, min_member)
        if nxt == cs.PodGroupPhase.SCHEDULING and not status.get("scheduleStartTime"):
            status["scheduleStartTime"] = rfc3339(now)
        if nxt == phase:
            break
        phase = nxt
    status["phase"] = str(phase)
    return status


GIVE_UP_AFTER = 48 * 3600.0  # upstream's "schedule time longer than 48 hours"


def gave_up(pod_group: Obj) -> bool:
    """The controller stops reconciling a group still Pending/Scheduling with nothing running whose
    scheduling started more than 48 h after it was created (``podgroup_controller.go``, coscheduling.md §6)."""
    status, meta = pod_group.get("status") or {}, pod_group.get("metadata") or {}
    started, created = status.get("scheduleStartTime"), meta.get("creationTimestamp")
    if status.get("phase") not in (cs.PodGroupPhase.PENDING, cs.PodGroupPhase.SCHEDULING):
        return False
    if int(status.get("running") or 0) or not started or not created:
        return False
    return parse_rfc3339(started) - parse_rfc3339(created) > GIVE_UP_AFTER


def active_members(members: Sequence[Obj]) -> list[Obj]:
    return [p for p in members if (p.get("status") or {}).get("phase") not in TERMINAL_PHASES]


__all__ = [
    "GIVE_UP_AFTER",
    "INVALID_POD_GROUP",
    "CoschedulingArgs",
    "GroupBackoff",
    "GroupSpec",
    "PodGroups",
    "active_members",
    "gave_up",
    "group_of",
    "group_spec",
    "group_specs",
    "may_pass_prefilter",
    "members_by_group",
    "pod_group_status",
    "prefilter_members",
    "prefilter_resources",
    "rejects_group",
]
