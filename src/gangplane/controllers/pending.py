"""Why a TrainJob is not running yet, in plain words with numbers; pure.

``pending_reason`` reads the TrainJob, its pods (label ``jobset.sigs.k8s.io/jobset-name``), its PodGroups
(Coscheduling, Volcano, KAI) and its Kueue Workload, and names the one thing blocking it, taking the first
source that applies: the Kueue Workload not admitted, a user suspension, a PodGroup the gang scheduler
marked unschedulable, pods the scheduler could not place (identical ``PodScheduled=False`` messages counted
together), a gang with fewer pods than its ``minMember``, pods no scheduler has answered yet, and pods bound
to nodes whose containers have not started. ``None`` once every live pod runs, or the job finished.

The answer is shown as the gangplane condition ``gangplane.dev/Waiting`` (``trainjob_status.set_waiting``;
``trainjob_status.waiting_event`` says which changes post an event on the TrainJob). Upstream Trainer has no
such condition (trainer-api.md §14 item 5; kubeflow/trainer#2713). Two upstream readers constrain its
shape: the Kubeflow SDK 0.5.0 maps a TrainJob with *any* non-terminal condition to ``Created`` and reports
``Running`` only when it has none (python-ecosystem.md §1.2, kubeflow/sdk#803), and the CRD's ``State``
printer column shows the type of the *last* condition. So the condition exists only while the job waits (it
is removed, not set False, once the pods run or the job ends) and sits first in the list (a ``Suspended``,
``Complete`` or ``Failed`` condition stays last).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from gangplane.api import trainer as t
from gangplane.api.scheduling import coscheduling as cs
from gangplane.api.scheduling import kai
from gangplane.api.scheduling import kueue as kq
from gangplane.api.scheduling import volcano as vc
from gangplane.api.scheduling.kueue_workload import WorkloadConditionType as W
from gangplane.controllers.objects import (
    condition_true,
    deleting,
    labels_of,
    meta,
    name_of,
    spec_of,
    status_of,
)
from gangplane.controllers.objects import (
    find_condition as find_wire_condition,
)
from gangplane.store import catalog
from gangplane.store.base import Object, ResourceType

WAITING_CONDITION = "gangplane.dev/Waiting"
"""The TrainJob condition type: ``True`` while the job waits, absent otherwise (never ``False``)."""

_TERMINAL_PHASES = ("Succeeded", "Failed")
_MAX_MESSAGES = 3
_DEFAULT_SCHEDULER = "default-scheduler"
_GANG_STARTED = frozenset({"Running", "Completed", "Finished", "Failed"})  # PodGroup phases past the gate


class WaitingReason(StrEnum):
    """``reason`` of the ``gangplane.dev/Waiting`` condition (and of the event posted when it changes)."""

    QUEUED_BY_KUEUE = "QueuedByKueue"  # Kueue has not admitted the Workload; the TrainJob stays suspended
    SUSPENDED = "Suspended"  # spec.suspend set by the user, no Kueue queue label
    GANG_UNSCHEDULABLE = "GangUnschedulable"  # a Volcano or KAI PodGroup status says it cannot be placed
    PODS_UNSCHEDULABLE = "PodsUnschedulable"  # pods carry PodScheduled=False from their scheduler
    GANG_INCOMPLETE = "GangIncomplete"  # fewer pods exist than the PodGroup's minMember (or none yet)
    AWAITING_SCHEDULER = "AwaitingScheduler"  # unbound pods no scheduler has answered (or gated pods)
    STARTING_CONTAINERS = "StartingContainers"  # every pod bound; containers not running yet


WARNING_REASONS = frozenset({WaitingReason.GANG_UNSCHEDULABLE, WaitingReason.PODS_UNSCHEDULABLE})


@dataclass(frozen=True, slots=True)
class PendingReason:
    reason: WaitingReason
    message: str

    @property
    def event_type(self) -> str:
        return "Warning" if self.reason in WARNING_REASONS else "Normal"

    def news_since(self, reason: str | None, message: str | None) -> bool:
        """Whether this differs from what the condition said before (``reason``, ``message``): one event per
        distinct (reason, message), as Kubernetes' event recorder keys events, so a transient first message
        ("gang incomplete") is followed by the one that stays ("pods unschedulable: ...")."""
        return (str(self.reason), _steady(self.message)) != (reason, _steady(message or ""))


_QUEUE_POSITION = re.compile(r" \(\d+ workloads? ahead\)")


def _steady(message: str) -> str:
    """The message without its queue position, which moves with every admission ahead of it: an event per
    position would flood a long queue's TrainJobs (the condition still shows the current position)."""
    return _QUEUE_POSITION.sub("", message)


class QueuePositions(Protocol):
    """Where a pending Kueue Workload stands: how many workloads are ahead of it in its queue (0 = next),
    as Kueue's visibility API ``positionInLocalQueue`` counts; ``None`` when unknown."""

    def position(self, namespace: str, workload: str) -> int | None: ...


# ---------------------------------------------------------------- the decision


def pending_reason(
    trainjob: Object,
    pods: Sequence[Object],
    podgroups: Sequence[Object],
    workload: Object | None,
    *,
    position: int | None = None,
) -> PendingReason | None:
    """What keeps ``trainjob`` from running, or ``None`` when nothing does (see the module docstring).

    ``pods`` are the TrainJob's pods, ``podgroups`` its PodGroups of any kind, ``workload`` its Kueue
    Workload; ``position`` the Workload's place in its queue (workloads ahead of it) when known."""
    if _finished(trainjob):
        return None
    if spec_of(trainjob).get("suspend"):
        queue = labels_of(trainjob).get(kq.QUEUE_NAME_LABEL)
        return _queued(queue, workload, position) if queue else _SUSPENDED
    live = [p for p in pods if not _terminal(p)]
    if pods and all(_phase(p) == "Running" for p in live):
        return None
    for found in (
        _gang_unschedulable(podgroups),
        _pods_unschedulable(live),
        _gang_incomplete(podgroups, live),
        _no_pods(pods),
        _awaiting_scheduler(live),
        _starting_containers(live),
    ):
        if found is not None:
            return found
    return None


_SUSPENDED = PendingReason(
    WaitingReason.SUSPENDED, "the TrainJob is suspended (spec.suspend: true); set it to false to run"
)


def _finished(trainjob: Object) -> bool:
    return condition_true(trainjob, t.ConditionType.COMPLETE) or condition_true(
        trainjob, t.ConditionType.FAILED
    )


def _phase(pod: Object) -> str:
    return str(status_of(pod).get("phase") or "Pending")


def _terminal(pod: Object) -> bool:
    return _phase(pod) in _TERMINAL_PHASES or deleting(pod)


def _bound(pod: Object) -> bool:
    return bool(spec_of(pod).get("nodeName"))


# ---------------------------------------------------------------- Kueue


def _queued(queue: str, workload: Object | None, position: int | None) -> PendingReason:
    return PendingReason(WaitingReason.QUEUED_BY_KUEUE, _queue_message(queue, workload, position))


def _queue_message(queue: str, workload: Object | None, position: int | None) -> str:
    if workload is None:
        return f'waiting for Kueue to create the Workload for LocalQueue "{queue}"'
    name = name_of(workload)
    if spec_of(workload).get("active") is False:
        return f"Workload {name} is deactivated (spec.active: false); Kueue will not admit it"
    conditions = status_of(workload).get("conditions") or []
    cluster_queue = (status_of(workload).get("admission") or {}).get("clusterQueue") or "?"
    if _true(conditions, W.ADMITTED):
        return (
            f'admitted by Kueue in ClusterQueue "{cluster_queue}"; waiting for Kueue to resume the TrainJob'
        )
    if _true(conditions, W.QUOTA_RESERVED):
        checks = _message(conditions, W.ADMITTED) or "admission checks pending"
        return f'quota reserved in ClusterQueue "{cluster_queue}"; not admitted yet: {checks}'
    where = f'Workload {name} queued in LocalQueue "{queue}"'
    if position is not None:
        where += f" ({position} workload{'' if position == 1 else 's'} ahead)"
    why = _message(conditions, W.QUOTA_RESERVED) or "waiting for Kueue to evaluate it"
    evicted = find_wire_condition(conditions, W.EVICTED)
    if evicted is not None and evicted.get("status") == "True":
        why = f"evicted ({evicted.get('reason')}: {evicted.get('message')}); {why}"
    return f"{where}: {why}"


def _true(conditions: list[dict[str, Any]], type_: str) -> bool:
    found = find_wire_condition(conditions, type_)
    return found is not None and found.get("status") == "True"


def _message(conditions: list[dict[str, Any]], type_: str) -> str:
    found = find_wire_condition(conditions, type_)
    return str(found.get("message") or found.get("reason") or "") if found is not None else ""


# ---------------------------------------------------------------- PodGroups


PODGROUP_TYPES: dict[str, ResourceType] = {
    "coscheduling": catalog.COSCHEDULING_PODGROUPS,
    "volcano": catalog.VOLCANO_PODGROUPS,
    "kai": catalog.KAI_PODGROUPS,
}
"""The PodGroup kinds a waiting reason reads, by the scheduler family that owns them."""


def _kind(podgroup: Object) -> str:
    """``coscheduling``, ``volcano``, ``kai`` or ``""`` from the PodGroup's API group."""
    group = str(podgroup.get("apiVersion") or "").partition("/")[0]
    return {cs.GROUP: "coscheduling", vc.GROUP: "volcano", kai.GROUP: "kai"}.get(group, "")


def _group_names(pod: Object) -> list[tuple[str, str]]:
    """The PodGroups a pod names: ``(family, name)`` from its Coscheduling label, Volcano or KAI annotation."""
    labels, notes = labels_of(pod), meta(pod).get("annotations") or {}
    named = [
        ("coscheduling", labels.get(cs.POD_GROUP_LABEL) or labels.get(cs.LEGACY_POD_GROUP_LABEL)),
        ("volcano", notes.get(vc.GROUP_NAME_ANNOTATION)),
        ("kai", notes.get(kai.POD_GROUP_ANNOTATION)),
    ]
    return [(family, str(name)) for family, name in named if name]


def podgroup_refs(pods: Iterable[Object]) -> list[tuple[str, str]]:
    """Every ``(family, name)`` PodGroup the pods belong to, first-seen order, each once."""
    return list(dict.fromkeys(ref for pod in pods for ref in _group_names(pod)))


def _group_problem(podgroup: Object) -> str | None:
    """The gang scheduler's own words for why the PodGroup cannot be placed, if it said any."""
    status = status_of(podgroup)
    kind = _kind(podgroup)
    if kind == "volcano" and status.get("phase") not in (
        vc.PodGroupPhase.RUNNING,
        vc.PodGroupPhase.COMPLETED,
    ):
        found = find_wire_condition(
            list(status.get("conditions") or []), vc.PodGroupConditionType.UNSCHEDULABLE
        )
        if found is not None and found.get("status") == "True":
            return str(found.get("message") or found.get("reason") or "unschedulable")
    if kind == "kai":
        words = [_kai_words(c) for c in status.get("schedulingConditions") or [] if c.get("status") == "True"]
        return "; ".join(w for w in words if w) or None
    return None


def _kai_words(condition: Mapping[str, Any]) -> str:
    reasons = [r for r in condition.get("reasons") or [] if isinstance(r, dict)]
    said = [
        f"{r.get('reason')}: {r.get('message')}" if r.get("message") else str(r.get("reason"))
        for r in reasons
    ]
    text = "; ".join(said) or str(
        condition.get("message") or condition.get("reason") or condition.get("type")
    )
    pool = condition.get("nodePool")
    return f"node pool {pool}: {text}" if pool else text


def _gang_unschedulable(podgroups: Sequence[Object]) -> PendingReason | None:
    said = [(pg, _group_problem(pg)) for pg in podgroups]
    parts = [f"{_kind(pg)} PodGroup {name_of(pg)}: {problem}" for pg, problem in said if problem]
    return PendingReason(WaitingReason.GANG_UNSCHEDULABLE, "; ".join(parts)) if parts else None


def _members(podgroup: Object, pods: Iterable[Object]) -> list[Object]:
    ref = (_kind(podgroup), name_of(podgroup))
    return [p for p in pods if ref in _group_names(p)]


def _gang_incomplete(podgroups: Sequence[Object], live: Sequence[Object]) -> PendingReason | None:
    parts = []
    for pg in podgroups:
        if status_of(pg).get("phase") in _GANG_STARTED:
            continue
        need = spec_of(pg).get("minMember")
        have = len(_members(pg, live))
        if isinstance(need, int) and have < need:
            parts.append(
                f"{have} of {need} pods of {_kind(pg)} PodGroup {name_of(pg)} exist (minMember {need})"
            )
    if not parts:
        return None
    return PendingReason(WaitingReason.GANG_INCOMPLETE, "gang incomplete: " + "; ".join(parts))


def _no_pods(pods: Sequence[Object]) -> PendingReason | None:
    if pods:
        return None
    return PendingReason(
        WaitingReason.GANG_INCOMPLETE, "no pods yet: waiting for the JobSet's Jobs to create them"
    )


# ---------------------------------------------------------------- pods


def _unschedulable_message(pod: Object) -> str | None:
    found = find_wire_condition(list(status_of(pod).get("conditions") or []), "PodScheduled")
    if _bound(pod) or found is None or found.get("status") != "False":
        return None
    return str(found.get("message") or found.get("reason") or "unschedulable")


def _counted(counts: Counter[str], total: int, what: str) -> str:
    """``"2 of 3 pods <what>: <text>"`` per distinct text, most pods first, at most three texts."""
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    parts = [f"{n} of {total} pods {what}: {text}" for text, n in ordered[:_MAX_MESSAGES]]
    rest = len(ordered) - _MAX_MESSAGES
    if rest > 0:
        parts.append(f"and {rest} more distinct message{'' if rest == 1 else 's'}")
    return "; ".join(parts)


def _pods_unschedulable(live: Sequence[Object]) -> PendingReason | None:
    messages = Counter(m for m in map(_unschedulable_message, live) if m is not None)
    if not messages:
        return None
    return PendingReason(WaitingReason.PODS_UNSCHEDULABLE, _counted(messages, len(live), "unschedulable"))


def _awaiting_scheduler(live: Sequence[Object]) -> PendingReason | None:
    waiting: Counter[str] = Counter()
    for pod in live:
        if _bound(pod):
            continue
        gates = [str(g.get("name")) for g in spec_of(pod).get("schedulingGates") or [] if isinstance(g, dict)]
        scheduler = spec_of(pod).get("schedulerName") or _DEFAULT_SCHEDULER
        waiting[f"held by scheduling gates {', '.join(gates)}" if gates else f'scheduler "{scheduler}"'] += 1
    if not waiting:
        return None
    return PendingReason(WaitingReason.AWAITING_SCHEDULER, _counted(waiting, len(live), "waiting for"))


def _starting_containers(live: Sequence[Object]) -> PendingReason | None:
    bound = [p for p in live if _bound(p)]
    running = sum(1 for p in bound if _phase(p) == "Running")
    if not bound or running == len(live):
        return None
    message = f"{len(bound)}/{len(live)} pods bound, {running} running; waiting for containers to start"
    reasons = Counter(r for p in bound if _phase(p) != "Running" for r in _waiting_container_reasons(p))
    if reasons:
        message += " (" + ", ".join(f"{r}: {n}" for r, n in sorted(reasons.items())) + ")"
    return PendingReason(WaitingReason.STARTING_CONTAINERS, message)


def _waiting_container_reasons(pod: Object) -> list[str]:
    statuses = [
        *(status_of(pod).get("initContainerStatuses") or []),
        *(status_of(pod).get("containerStatuses") or []),
    ]
    waiting = [((s.get("state") or {}).get("waiting") or {}) for s in statuses if isinstance(s, dict)]
    return [str(w["reason"]) for w in waiting if w.get("reason")]


def running_count(pods: Iterable[Object]) -> int:
    """How many of the pods are live and ``Running``."""
    return sum(1 for p in pods if not _terminal(p) and _phase(p) == "Running")


__all__ = [
    "PODGROUP_TYPES",
    "WAITING_CONDITION",
    "WARNING_REASONS",
    "PendingReason",
    "QueuePositions",
    "WaitingReason",
    "pending_reason",
    "podgroup_refs",
    "running_count",
]
