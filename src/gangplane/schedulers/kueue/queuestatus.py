"""ClusterQueue, LocalQueue and Cohort ``status`` from the core's state; pure.

After kueue ``pkg/controller/core/clusterqueue_controller.go`` (``updateCqStatusIfChanged``),
``localqueue_controller.go`` (``updateStatusIfChanged``), ``cohort_controller.go`` and the cache's ``Usage``,
``LocalQueueUsage`` and ``inactiveReason``:

- ``pendingWorkloads`` counts the queue's pending workloads (active, inadmissible and in backoff: the same
  list the visibility API serves); ``reservingWorkloads`` and ``admittedWorkloads`` the workloads holding quota
  (equal here: the embedded Kueue has no admission checks, so a reservation is an admission);
- ``flavorsReservation`` and ``flavorsUsage`` list every flavor of every resource group in spec order, its
  covered resources sorted by name, amounts as quantities; a ClusterQueue in a cohort also says how much it
  ``borrowed`` above its nominal quota;
- the ``Active`` condition keeps its transition time while its status holds (``meta.SetStatusCondition``); a
  LocalQueue with a ``stopPolicy`` says ``Stopped`` before anything about its ClusterQueue;
- ``fairSharing.weightedShare`` only when fair sharing is enabled (absent otherwise), on ClusterQueues and
  Cohorts.

The shell writes a status only when it differs from the stored one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from gangplane.api.meta import Condition, set_condition
from gangplane.clock import rfc3339
from gangplane.schedulers.kueue.fairsharing import weighted_share
from gangplane.schedulers.kueue.model import ClusterQueueSpec, Usage, format_amount
from gangplane.schedulers.kueue.state import KueueState

ACTIVE = "Active"
CQ_READY = ("True", "Ready", "Can admit new workloads")
LQ_READY = ("True", "Ready", "Can submit new workloads to localQueue")
LQ_STOPPED = (
    "False",
    "Stopped",
    "LocalQueue is stopped",
)  # checked first, as upstream's LocalQueue reconcile
LQ_CQ_INACTIVE = ("False", "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue")
LQ_CQ_MISSING = ("False", "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue")

Status = dict[str, Any]


def _active(
    old: Mapping[str, Any], value: tuple[str, str, str], generation: int | None, now: float
) -> list[Any]:
    conditions = [Condition.model_validate(c) for c in old.get("conditions") or []]
    status, reason, message = value
    new = Condition(type=ACTIVE, status=status, reason=reason, message=message,
                    last_transition_time=rfc3339(now), observed_generation=generation)  # fmt: skip
    return [c.to_dict() for c in set_condition(conditions, new)]


def cluster_queue_readiness(state: KueueState, name: str) -> tuple[str, str, str]:
    """``Cache.ClusterQueueReadiness``: the reasons a ClusterQueue cannot admit, the first one named."""
    spec = state.cluster_queues[name]
    reasons, messages = [], []
    if spec.stop_policy != "None":
        reasons.append("Stopped")
        messages.append("is stopped")
    if missing := state.missing_flavors(name):
        reasons.append("FlavorNotFound")
        messages.append(f"references missing ResourceFlavor(s): {','.join(missing)}")
    if reasons:
        return "False", reasons[0], f"Can't admit new workloads: {', '.join(messages)}."
    if name in state.tree.inactive:  # a cohort cycle: upstream's reason of last resort
        return "False", "Unknown", "Can't admit new workloads."
    return CQ_READY


def _flavor_usage(spec: ClusterQueueSpec, usage: Usage, *, borrowed: bool) -> list[Status]:
    quotas = spec.quotas()
    found = []
    for group in spec.resource_groups:
        for flavor in group.flavors:
            resources = []
            for resource in sorted(group.covered):
                used = usage.get((flavor.name, resource), 0)
                entry: Status = {"name": resource, "total": format_amount(resource, used)}
                if borrowed:
                    quota = quotas.get((flavor.name, resource))
                    over = max(0, used - (quota.nominal if quota else 0)) if spec.cohort else 0
                    entry["borrowed"] = format_amount(resource, over)
                resources.append(entry)
            found.append({"name": flavor.name, "resources": resources})
    return found


def pending_counts(state: KueueState, cqs: set[str] | None = None) -> Counter[tuple[str, str, str]]:
    """Pending workloads per ``(cluster queue, namespace, local queue)``, of ``cqs`` (all when None)."""
    counts: Counter[tuple[str, str, str]] = Counter()
    queues = state.queues.queues
    names = queues.keys() if cqs is None else [c for c in cqs if c in queues]
    waiting = [*(s for c in names for _, s in queues[c].members.values()),
               *(s for s in state.queues.backoff.values() if cqs is None or s.cluster_queue in cqs)]  # fmt: skip
    for s in waiting:
        counts[(s.cluster_queue, s.request.namespace, s.request.local_queue)] += 1
    return counts


def cluster_queue_status(state: KueueState, name: str, old: Mapping[str, Any], generation: int | None,
                         pending: int, now: float) -> Status:  # fmt: skip
    spec = state.cluster_queues[name]
    admitted = len(state.admitted.get(name, {}))
    usage = _flavor_usage(spec, state.tree.usage(name) if name in state.tree.cqs else {}, borrowed=True)
    status: Status = {
        "conditions": _active(old, cluster_queue_readiness(state, name), generation, now),
        "flavorsReservation": usage,
        "flavorsUsage": usage,
        "pendingWorkloads": pending,
        "reservingWorkloads": admitted,
        "admittedWorkloads": admitted,
    }
    node = state.tree.cqs.get(name)
    if state.config.fair_sharing is not None and node is not None:
        status["fairSharing"] = {"weightedShare": weighted_share(node)}
    return status


def local_queue_status(state: KueueState, namespace: str, name: str, cluster_queue: str,
                       old: Mapping[str, Any], generation: int | None, pending: int, now: float) -> Status:  # fmt: skip
    spec = state.cluster_queues.get(cluster_queue)
    if (namespace, name) in state.stopped_local_queues:
        readiness = LQ_STOPPED  # its pending workloads are in no queue: pendingWorkloads 0, as upstream
    elif spec is None:
        readiness = LQ_CQ_MISSING
    else:
        readiness = LQ_READY if cluster_queue_readiness(state, cluster_queue) == CQ_READY else LQ_CQ_INACTIVE
    mine = [s for s in state.admitted.get(cluster_queue, {}).values()
            if (s.request.namespace, s.request.local_queue) == (namespace, name)]  # fmt: skip
    usage: Usage = {}
    for s in mine:
        for fr, amount in s.usage.items():
            usage[fr] = usage.get(fr, 0) + amount
    flavors = _flavor_usage(spec, usage, borrowed=False) if spec is not None else []
    status: Status = {
        "conditions": _active(old, readiness, generation, now),
        "pendingWorkloads": pending,
        "reservingWorkloads": len(mine),
        "admittedWorkloads": len(mine),
    }
    if flavors:
        status["flavorsReservation"] = status["flavorsUsage"] = flavors
    return status


def cohort_status(state: KueueState, name: str) -> Status | None:
    node = state.tree.cohorts.get(name)
    if state.config.fair_sharing is None or node is None:
        return None
    return {"fairSharing": {"weightedShare": weighted_share(node)}}
