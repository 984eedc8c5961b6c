"""Victim search: the fewest, lowest-priority pods whose removal lets a pod or gang fit.

Works on the snapshot with checkpoint / rollback only, so it is pure and leaves the snapshot unchanged.
A victim that belongs to a gang takes its whole gang with it (evicting one member would break the gang
anyway), so units are gangs or single pods. Order of sacrifice: lowest priority first, then newest first
(kube-scheduler ``pkg/scheduler/framework/preemption``: fewest high-priority victims, then the latest start
times). The smallest prefix of that order that makes room is found by bisection, then each chosen unit is
reprieved in turn, highest priority first, if the gang still fits without evicting it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gangplane.clock import rfc3339
from gangplane.schedulers.core.fit import Mask
from gangplane.schedulers.core.gang import place_gang
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.scoring import Strategy
from gangplane.schedulers.core.snapshot import Snapshot

Unit = tuple[PodInfo, ...]


def victim_units(
    snapshot: Snapshot, may_preempt: Callable[[PodInfo], bool], candidates: Mask | None = None
) -> list[Unit]:
    """Counted pods grouped into eviction units, in sacrifice order; a gang is a unit only if every counted
    member may be preempted and sits on a candidate node."""
    units: dict[str, list[PodInfo]] = {}
    for pod in snapshot.pods():
        units.setdefault(pod.group or f"pod:{pod.key}", []).append(pod)

    def allowed(pod: PodInfo) -> bool:
        row = snapshot.location(pod.key)
        return may_preempt(pod) and (candidates is None or (row is not None and bool(candidates[row])))

    eligible = [tuple(members) for members in units.values() if all(allowed(p) for p in members)]
    return sorted(eligible, key=lambda u: (max(p.priority for p in u), -max(p.created for p in u), u[0].key))


def _fits_without(
    snapshot: Snapshot, units: Sequence[Unit], pods: Sequence[PodInfo], min_member: int, strategy: Strategy
) -> bool:
    token = snapshot.checkpoint()
    for unit in units:
        for victim in unit:
            snapshot.forget(victim.key)
    ok = place_gang(snapshot, pods, min_member=min_member, strategy=strategy, explain=False).ok
    snapshot.rollback(token)
    return ok


def _shortest_prefix(fits: Callable[[int], bool], size: int) -> int:
    low, high = 0, size  # invariant: fits(high)
    while low < high:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle + 1
    return high


def find_victims(
    snapshot: Snapshot,
    pods: PodInfo | Sequence[PodInfo],
    may_preempt: Callable[[PodInfo], bool],
    *,
    min_member: int | None = None,
    candidates: Mask | None = None,
    strategy: Strategy = Strategy.BINPACK,
) -> list[PodInfo] | None:
    """Pods to evict so that ``pods`` (all of them, or ``min_member``) fit; ``[]`` if they fit already and
    ``None`` if evicting every allowed pod is still not enough. The snapshot is left unchanged."""
    gang = [pods] if isinstance(pods, PodInfo) else list(pods)
    need = len(gang) if min_member is None else min_member
    units = victim_units(snapshot, may_preempt, candidates)
    if not _fits_without(snapshot, units, gang, need, strategy):
        return None
    chosen = units[
        : _shortest_prefix(lambda k: _fits_without(snapshot, units[:k], gang, need, strategy), len(units))
    ]
    for unit in reversed(list(chosen)):
        rest = [u for u in chosen if u is not unit]
        if _fits_without(snapshot, rest, gang, need, strategy):
            chosen = rest
    return [victim for unit in chosen for victim in unit]


# -- what an eviction writes before the delete ---------------------------------------------------------------
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
PREEMPTED_EVENT = "Preempted"


def disruption_condition(scheduler: str, message: str) -> dict[str, Any]:
    """The pod condition kube-scheduler sets on a victim before deleting it (``PreemptionByScheduler``;
    its message is ``"<scheduler>: preempting to accommodate a higher priority pod"``), so the pod's
    owner (a Job's ``podFailurePolicy``, the dashboard) sees why it went. Timestamps are the writer's."""
    why = message or "preempting to accommodate a higher priority pod"
    return {
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": PREEMPTION_BY_SCHEDULER,
        "message": f"{scheduler}: {why}",
    }


def preempted_event(pod: Mapping[str, Any], scheduler: str, message: str, now: float) -> dict[str, Any]:
    """The Normal ``Preempted`` Event recorded on the victim (kube-scheduler: ``Preempted by pod <uid> on
    node <node>``; gangplane's schedulers name the preemptor job and queue in ``message``)."""
    return pod_event(pod, "Normal", PREEMPTED_EVENT, message or PREEMPTED_EVENT, scheduler, now)


def pod_event(
    pod: Mapping[str, Any], kind: str, reason: str, message: str, component: str, now: float
) -> dict[str, Any]:
    """A core/v1 Event about ``pod`` (``kind``: Normal or Warning), first and last seen ``now``."""
    meta = pod.get("metadata") or {}
    stamp = rfc3339(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{meta.get('name')}.{int(now * 1e9):x}", "namespace": meta.get("namespace")},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
        },
        "type": kind,
        "reason": reason,
        "message": message[:950],
        "source": {"component": component},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


__all__ = [
    "DISRUPTION_TARGET",
    "PREEMPTED_EVENT",
    "PREEMPTION_BY_SCHEDULER",
    "Unit",
    "disruption_condition",
    "find_victims",
    "pod_event",
    "preempted_event",
    "victim_units",
]
