"""A node's health from its agent's heartbeats, and the taints that follow from it: pure functions over
Node and Lease dicts; ``node_lifecycle.py`` is the shell that reads the caches and writes.

As kube-controller-manager's node lifecycle controller
(``pkg/controller/nodelifecycle/node_lifecycle_controller.go``):

- when the agent was last seen alive (the probe time) is this controller's own clock, never the agent's
  timestamps (two hosts' clocks differ): the time it first saw the Node, or saw the ``Ready`` condition's
  ``lastHeartbeatTime`` change, or saw the node's Lease in ``kube-node-lease`` renewed (``tryUpdateNodeHealth``).
  So a restarted controller gives every node a full grace period before judging it;
- a node not seen alive for ``node-monitor-grace-period`` has ``Ready``, ``MemoryPressure``, ``DiskPressure``
  and ``PIDPressure`` set to ``Unknown`` (reason ``NodeStatusUnknown``); one that never posted a ``Ready``
  condition is given ``nodeStartupGracePeriod`` from its creation, and its missing conditions are added as
  ``Unknown`` with reason ``NodeStatusNeverUpdated``;
- NoSchedule taints mirror the conditions and ``spec.unschedulable`` (``doNoScheduleTaintingPass``);
- NoExecute taints mirror ``Ready``: ``False`` -> ``not-ready``, ``Unknown`` -> ``unreachable``, ``True`` ->
  neither (``processTaintBaseEviction``, ``doNoExecuteTaintingPass``, ``markNodeAsReachable``); a node with no
  ``Ready`` condition keeps its NoExecute taints as they are. Taints the controller adds carry ``timeAdded``;
- the pods of a node whose ``Ready`` is not ``True`` have their own ``Ready`` condition set ``False``
  (``MarkPodsNotReady``), so nothing counts them ready while their agent cannot say.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from gangplane.clock import parse_rfc3339, rfc3339
from gangplane.controllers.node_zones import NoExecute
from gangplane.schedulers.core.objects import (
    NO_EXECUTE,
    NO_SCHEDULE,
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    UNSCHEDULABLE_TAINT,
)
from gangplane.store.base import Object

# node_lifecycle_controller.go / kube-controller-manager flags. The grace period became 50 s in Kubernetes
# 1.32 (kubernetes/kubernetes#126287; 40 s before); gangplane's agents report kubelet v1.32.
NODE_MONITOR_GRACE_SECONDS = 50.0
NODE_STARTUP_GRACE_SECONDS = 60.0

READY = "Ready"
UNKNOWN_TYPES = (READY, "MemoryPressure", "DiskPressure", "PIDPressure")  # NetworkUnavailable is left alone
STOPPED_POSTING = {"reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status."}
NEVER_POSTED = {"reason": "NodeStatusNeverUpdated", "message": "Kubelet never posted node status."}

# (condition type, status) -> the NoSchedule taint key (nodeConditionToTaintKeyStatusMap)
CONDITION_TAINTS = {
    (READY, "False"): NOT_READY_TAINT,
    (READY, "Unknown"): UNREACHABLE_TAINT,
    ("MemoryPressure", "True"): "node.kubernetes.io/memory-pressure",
    ("DiskPressure", "True"): "node.kubernetes.io/disk-pressure",
    ("NetworkUnavailable", "True"): "node.kubernetes.io/network-unavailable",
    ("PIDPressure", "True"): "node.kubernetes.io/pid-pressure",
}
READY_NO_EXECUTE = {"False": NOT_READY_TAINT, "Unknown": UNREACHABLE_TAINT}
_MANAGED_NO_SCHEDULE = {(key, NO_SCHEDULE) for key in (*CONDITION_TAINTS.values(), UNSCHEDULABLE_TAINT)}
_MANAGED_NO_EXECUTE = {(key, NO_EXECUTE) for key in READY_NO_EXECUTE.values()}


@dataclass(frozen=True, slots=True)
class Health:
    """What the controller last saw of a node: when it was last alive, by its own clock, and the heartbeat
    and Lease renewal it saw then (``nodeHealthData``)."""

    probed: float
    heartbeat: object  # the Ready condition's lastHeartbeatTime; None without a Ready condition
    renewed: float | None  # the Lease's renewTime; None before any Lease was seen


def condition(node: Object, type_: str) -> dict[str, Any] | None:
    return next(
        (c for c in (node.get("status") or {}).get("conditions") or () if c.get("type") == type_), None
    )


def _renew_time(lease: Object | None) -> float | None:
    renewed = ((lease or {}).get("spec") or {}).get("renewTime")
    try:
        return parse_rfc3339(renewed) if isinstance(renewed, str) else None
    except ValueError:
        return None


def _created(node: Object) -> float | None:
    stamp = (node.get("metadata") or {}).get("creationTimestamp")
    return parse_rfc3339(stamp) if isinstance(stamp, str) else None


def observe(saved: Health | None, node: Object, lease: Object | None, now: float) -> Health:
    """``saved`` brought up to date with ``node`` and its ``lease``: a node seen for the first time, a new
    heartbeat or a Lease renewed later than the last one seen make ``now`` the probe time."""
    ready = condition(node, READY)
    heartbeat = ready.get("lastHeartbeatTime") if ready is not None else None
    if saved is None:
        # never posted: its startup grace counts from its creation (a fake Ready at creationTimestamp)
        probed = now if ready is not None else (_created(node) or now)
    else:
        probed = now if heartbeat != saved.heartbeat else saved.probed
    renewed = _renew_time(lease)
    last = saved.renewed if saved is not None else None
    if renewed is not None and (last is None or renewed > last):
        probed, last = now, renewed
    return Health(probed, heartbeat, last)


def grace_left(node: Object, health: Health, now: float, grace: float, startup_grace: float) -> float:
    """Seconds until the node is judged unresponsive (<= 0: it is)."""
    period = grace if condition(node, READY) is not None else startup_grace
    return health.probed + period - now


def mark_unknown(node: Object, now: float) -> Object | None:
    """The node with its conditions set to ``Unknown`` (``tryUpdateNodeHealth``), or None when they are
    already; heartbeat times stay, so the agent's next heartbeat reads as a change."""
    stamp = rfc3339(now)
    conditions = copy.deepcopy(list((node.get("status") or {}).get("conditions") or ()))
    changed = False
    for type_ in UNKNOWN_TYPES:
        current = next((c for c in conditions if c.get("type") == type_), None)
        if current is None:
            created = (node.get("metadata") or {}).get("creationTimestamp")
            conditions.append({"type": type_, "status": "Unknown", **NEVER_POSTED,
                               "lastHeartbeatTime": created, "lastTransitionTime": stamp})  # fmt: skip
            changed = True
        elif current.get("status") != "Unknown":
            current.update(status="Unknown", lastTransitionTime=stamp, **STOPPED_POSTING)
            changed = True
    if not changed:
        return None
    return {**node, "status": {**(node.get("status") or {}), "conditions": conditions}}


def not_ready(node: Object) -> bool:
    """The node posted a ``Ready`` condition (or was marked) and it is not ``True``."""
    ready = condition(node, READY)
    return ready is not None and ready.get("status") != "True"


def pod_not_ready(pod: Object, now: float) -> Object | None:
    """The pod with its ``Ready`` condition ``False`` (``MarkPodsNotReady``), or None when it is not ``True``."""
    conditions = list((pod.get("status") or {}).get("conditions") or ())
    if not any(c.get("type") == READY and c.get("status") == "True" for c in conditions):
        return None
    stamp = rfc3339(now)
    changed = [{**c, "status": "False", "lastTransitionTime": stamp} if c.get("type") == READY else c
               for c in conditions]  # fmt: skip
    return {**pod, "status": {**(pod.get("status") or {}), "conditions": changed}}


def _wanted_taints(node: Object, mode: NoExecute) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """The (key, effect) pairs the controller manages on ``node`` and those of them it wants there."""
    conditions = (node.get("status") or {}).get("conditions") or ()
    wanted = {(CONDITION_TAINTS[k], NO_SCHEDULE) for c in conditions
              if (k := (c.get("type"), c.get("status"))) in CONDITION_TAINTS}  # fmt: skip
    if (node.get("spec") or {}).get("unschedulable"):
        wanted.add((UNSCHEDULABLE_TAINT, NO_SCHEDULE))
    managed = set(_MANAGED_NO_SCHEDULE)
    ready = condition(node, READY)
    if ready is not None:
        managed |= _MANAGED_NO_EXECUTE
        key = READY_NO_EXECUTE.get(str(ready.get("status")))
        taints = (node.get("spec") or {}).get("taints") or ()
        tainted = any((t.get("key"), t.get("effect")) in _MANAGED_NO_EXECUTE for t in taints)
        if key is not None and (mode is NoExecute.FOLLOW or (mode is NoExecute.HOLD and tainted)):
            wanted.add((key, NO_EXECUTE))
    return managed, wanted


def desired_taints(
    node: Object, now: float, mode: NoExecute = NoExecute.FOLLOW
) -> list[dict[str, Any]] | None:
    """``spec.taints`` as the node's conditions want them (others' taints kept, in order; a taint already
    there keeps its ``timeAdded``), or None when they already are. ``mode``: the zone's disruption
    (``node_zones.py``) may hold back or remove the NoExecute taints."""
    taints: list[dict[str, Any]] = list((node.get("spec") or {}).get("taints") or ())
    managed, wanted = _wanted_taints(node, mode)
    kept = [t for t in taints if (pair := (t.get("key"), t.get("effect"))) not in managed or pair in wanted]
    present = {(t.get("key"), t.get("effect")) for t in kept}
    added = [{"key": key, "effect": effect, "timeAdded": rfc3339(now)}
             for key, effect in sorted(wanted - present)]  # fmt: skip
    result = kept + added
    return None if result == taints else result


def adds_no_execute(node: Object, taints: list[dict[str, Any]] | None) -> bool:
    """``taints`` put a NoExecute taint this controller manages on a node that has none (a swap does not)."""
    if taints is None:
        return False
    before = (node.get("spec") or {}).get("taints") or ()
    return not _has_managed_no_execute(before) and _has_managed_no_execute(taints)


def _has_managed_no_execute(taints: Any) -> bool:
    return any((t.get("key"), t.get("effect")) in _MANAGED_NO_EXECUTE for t in taints)


__all__ = [
    "CONDITION_TAINTS",
    "NODE_MONITOR_GRACE_SECONDS",
    "NODE_STARTUP_GRACE_SECONDS",
    "Health",
    "adds_no_execute",
    "condition",
    "desired_taints",
    "grace_left",
    "mark_unknown",
    "not_ready",
    "observe",
    "pod_not_ready",
]
