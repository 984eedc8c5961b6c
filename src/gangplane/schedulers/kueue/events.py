"""The Kubernetes Events the embedded Kueue records on Workloads, as upstream's scheduler, preemptor and
workload controller do, derived from the conditions a pass just wrote:

- ``QuotaReserved`` (Normal) ``Quota reserved in ClusterQueue <cq>, wait time since queued was <n>s`` and
  ``Admitted`` (Normal) ``Admitted by ClusterQueue <cq>, wait time since reservation was 0s`` (kueue
  scheduler.go; the embedded Kueue has no admission checks, so both happen at once);
- ``Preempted`` (Normal) with the Preempted condition's message (kueue preemption.go);
- ``EvictedDueTo<Reason>`` (Normal) for any other eviction (kueue workload_controller.go);
- ``Pending`` (Warning) with the inadmissible message, when that message changed, and only when the scheduler
  set it (kueue scheduler.go ``requeueAndUpdate``; ``model.PendingSource``): not for a missing or stopped
  LocalQueue, a missing or inactive ClusterQueue, a deactivation (the workload controller's) nor an eviction
  (the job reconciler's).

A transition is fresh when its ``lastTransitionTime`` is this pass's time, so conditions read back after a
restart are not announced again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from gangplane.client.events import EventRecorder
from gangplane.clock import Clock, parse_rfc3339
from gangplane.schedulers.kueue.model import PendingReason, PendingSource
from gangplane.store.base import Object, Store

COMPONENT = "kueue-admission"
_REMEMBERED = 4096  # Pending messages kept to say each once (client-go's cache size)

Said = tuple[str, str, str]  # (type, reason, message)
_PENDING = frozenset(PendingReason)  # QuotaReserved=False reasons of a Workload the scheduler could not admit


def _conditions(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {c["type"]: c for c in status.get("conditions") or [] if "type" in c}


def _fresh(condition: Mapping[str, Any] | None, stamp: str) -> bool:
    return (
        condition is not None
        and condition.get("status") == "True"
        and condition.get("lastTransitionTime") == stamp
    )


def transitions(status: Mapping[str, Any], cluster_queue: str, stamp: str, waited: float) -> list[Said]:
    """What a Workload status written at ``stamp`` (rfc3339 of the pass) announces; ``waited``: seconds
    since the Workload was queued."""
    conditions = _conditions(status)
    said: list[Said] = []
    if _fresh(conditions.get("QuotaReserved"), stamp):
        message = f"Quota reserved in ClusterQueue {cluster_queue}, wait time since queued was {waited:.0f}s"
        said.append(("Normal", "QuotaReserved", message))
    if _fresh(conditions.get("Admitted"), stamp):
        message = f"Admitted by ClusterQueue {cluster_queue}, wait time since reservation was 0s"
        said.append(("Normal", "Admitted", message))
    preempted, evicted = conditions.get("Preempted"), conditions.get("Evicted")
    if preempted is not None and _fresh(preempted, stamp):
        said.append(("Normal", "Preempted", str(preempted.get("message", ""))))
    elif evicted is not None and _fresh(evicted, stamp):
        said.append(("Normal", f"EvictedDueTo{evicted.get('reason', '')}", str(evicted.get("message", ""))))
    return said


def pending_message(status: Mapping[str, Any], source: PendingSource) -> str | None:
    """The inadmissible message of a Workload the scheduler could not admit, else None: ``source`` says who
    set the condition, and only the scheduler announces it."""
    if source != PendingSource.SCHEDULER:
        return None
    reserved = _conditions(status).get("QuotaReserved")
    if reserved is None or reserved.get("status") != "False" or reserved.get("reason") not in _PENDING:
        return None
    return str(reserved.get("message", "")) or None


class WorkloadEvents:
    """Records what each written Workload status announces (the shell around ``transitions``). Stamps have
    whole seconds, so what was announced at a stamp is remembered: a second write in the same second does
    not announce it again."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.recorder = EventRecorder(store, clock, COMPONENT)
        self._pending: OrderedDict[str, str] = OrderedDict()
        self._announced: OrderedDict[str, tuple[str, set[str]]] = OrderedDict()

    def written(self, key: str, workload: Object, cluster_queue: str, stamp: str,
                source: PendingSource) -> None:  # fmt: skip
        """``source``: who set the Workload's pending reason (``WorkloadState.pending_source``)."""
        status = workload.get("status") or {}
        created = (workload.get("metadata") or {}).get("creationTimestamp")
        waited = max(0.0, parse_rfc3339(stamp) - parse_rfc3339(created)) if created else 0.0
        said = [s for s in transitions(status, cluster_queue, stamp, waited) if self._first(key, stamp, s[1])]
        message = pending_message(status, source)
        if message is None:
            self._pending.pop(key, None)
        elif self._pending.get(key) != message:
            _remember(self._pending, key, message)
            said.append(("Warning", "Pending", message))
        for type_, reason, text in said:
            self.recorder.event(workload, type_, reason, text)

    def _first(self, key: str, stamp: str, reason: str) -> bool:
        at, reasons = self._announced.get(key, ("", set()))
        if at != stamp:
            at, reasons = stamp, set()
        if reason in reasons:
            return False
        reasons.add(reason)
        _remember(self._announced, key, (at, reasons))
        return True


def _remember(cache: OrderedDict[str, Any], key: str, value: Any) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > _REMEMBERED:
        cache.popitem(last=False)
