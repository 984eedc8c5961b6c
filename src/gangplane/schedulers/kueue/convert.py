"""API objects (camelCase dicts or ``api.scheduling.kueue`` models) to the core's values, and back.

Pure: the shell reads the objects, these functions translate. Quantities become Kueue amounts
(``model.to_amount``); a Workload's per-pod requests are the Kubernetes effective pod requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gangplane.api.meta import Condition
from gangplane.api.quantity import ResourceList
from gangplane.api.scheduling import kueue as kq
from gangplane.api.scheduling import kueue_workload as kw
from gangplane.api.scheduling.kueue import (
    FlavorFungibilityPolicy,
    PreemptionPolicy,
    QueueingStrategy,
    StopPolicy,
)
from gangplane.clock import parse_rfc3339, rfc3339
from gangplane.runtime.requests import pod_request_amounts
from gangplane.schedulers.core.objects import required_affinity
from gangplane.schedulers.kueue.flavors import Assignment, PodSetAssignment
from gangplane.schedulers.kueue.model import (
    ClusterQueueSpec,
    CohortSpec,
    FlavorQuotas,
    FlavorSpec,
    Fungibility,
    FungibilityPreference,
    PodSetRequest,
    Preemption,
    ResourceGroup,
    ResourceQuota,
    WorkloadRequest,
    format_amount,
    to_amount,
)
from gangplane.schedulers.kueue.workloads import WAIT_FOR_RECOVERY, History, Phase, WorkloadState


def _groups(groups: list[kq.ResourceGroup] | None) -> tuple[ResourceGroup, ...]:
    def quota(q: kq.ResourceQuota) -> ResourceQuota:
        limits = (q.borrowing_limit, q.lending_limit)
        b, lend = (None if v is None else to_amount(q.name, v) for v in limits)
        return ResourceQuota(to_amount(q.name, q.nominal_quota), b, lend)

    return tuple(
        ResourceGroup(
            tuple(g.covered_resources),
            tuple(FlavorQuotas(f.name, {r.name: quota(r) for r in f.resources}) for f in g.flavors),
        )
        for g in groups or []
    )


def _weight(fair: kq.FairSharing | None) -> float:
    return 1.0 if fair is None or fair.weight is None else float(str(fair.weight))


def _preemption(p: kq.ClusterQueuePreemption | None) -> Preemption:
    if p is None:
        return Preemption()
    bwc = p.borrow_within_cohort
    return Preemption(
        PreemptionPolicy(p.within_cluster_queue or "Never"),
        PreemptionPolicy(p.reclaim_within_cohort or "Never"),
        PreemptionPolicy(bwc.policy or "Never") if bwc else PreemptionPolicy.NEVER,
        bwc.max_priority_threshold if bwc else None,
    )


def _fungibility(f: kq.FlavorFungibility | None) -> Fungibility:
    if f is None:
        return Fungibility()
    return Fungibility(
        FlavorFungibilityPolicy(f.when_can_borrow or "MayStopSearch"),
        FlavorFungibilityPolicy(f.when_can_preempt or "TryNextFlavor"),
        FungibilityPreference(f.preference or "BorrowingOverPreemption"),
    )


def cluster_queue_spec(obj: Mapping[str, Any]) -> ClusterQueueSpec:
    cq = kq.ClusterQueue.model_validate(obj)
    spec = cq.spec
    return ClusterQueueSpec(
        name=cq.metadata.name or "",
        resource_groups=_groups(spec.resource_groups),
        cohort=spec.cohort_name or None,
        queueing_strategy=QueueingStrategy(spec.queueing_strategy or "BestEffortFIFO"),
        preemption=_preemption(spec.preemption),
        fungibility=_fungibility(spec.flavor_fungibility),
        stop_policy=StopPolicy(spec.stop_policy or "None"),
        namespace_selector=spec.namespace_selector,
        fair_weight=_weight(spec.fair_sharing),
    )


def cohort_spec(obj: Mapping[str, Any]) -> CohortSpec:
    cohort = kq.Cohort.model_validate(obj)
    spec = cohort.spec
    return CohortSpec(cohort.metadata.name or "", spec.parent_name or None, _groups(spec.resource_groups),
                      _weight(spec.fair_sharing))  # fmt: skip


def flavor_spec(obj: Mapping[str, Any]) -> FlavorSpec:
    flavor = kq.ResourceFlavor.model_validate(obj)
    spec = flavor.spec
    return FlavorSpec(flavor.metadata.name or "", dict(spec.node_labels or {}), tuple(spec.node_taints or ()),
                      tuple(spec.tolerations or ()))  # fmt: skip


def _pod_set(pod_set: kw.PodSet) -> PodSetRequest:
    pod = pod_set.template.spec
    requests = {name: to_amount(name, value) for name, value in pod_request_amounts(pod).items()}
    return PodSetRequest(pod_set.name or kw.DEFAULT_POD_SET_NAME, pod_set.count or 1, requests,
                         dict(pod.node_selector or {}), tuple(pod.tolerations or ()),
                         required_affinity({"affinity": pod.affinity}))  # fmt: skip


def workload_request(
    workload: kw.Workload, cluster_queue: str, namespace_labels: Mapping[str, str]
) -> WorkloadRequest:  # fmt: skip
    """The core's view of a Workload; ``cluster_queue`` is "" when its LocalQueue does not exist."""
    meta = workload.metadata
    boost = (meta.annotations or {}).get(kq.PRIORITY_BOOST_ANNOTATION, "0")
    priority = (workload.spec.priority or 0) + (int(boost) if boost.lstrip("-").isdigit() else 0)
    ref = workload.spec.priority_class_ref
    created = parse_rfc3339(meta.creation_timestamp) if meta.creation_timestamp else 0.0
    return WorkloadRequest(
        key=f"{meta.namespace}/{meta.name}",
        namespace=meta.namespace or "",
        local_queue=workload.spec.queue_name or "",
        cluster_queue=cluster_queue,
        pod_sets=tuple(_pod_set(p) for p in workload.spec.pod_sets),
        priority=priority,
        created=created,
        uid=meta.uid or "",
        job_uid=(meta.labels or {}).get(kq.JOB_UID_LABEL, ""),
        priority_class=ref.name if ref else "",
        namespace_labels=dict(namespace_labels),
    )


def workload_status(state: WorkloadState) -> dict[str, Any]:
    """The Workload's ``status`` the core implies: conditions, admission, requeue state, resource requests."""
    # A finished Workload keeps its admission, as upstream (only eviction clears it).
    admitted = state.phase in (Phase.ADMITTED, Phase.FINISHED) and state.assignment is not None
    requeue: dict[str, Any] | None = None
    if state.requeue_count:
        requeue = {"count": state.requeue_count}
        if state.requeue_at is not None:
            requeue["requeueAt"] = rfc3339(state.requeue_at)
    status = {
        "conditions": [c.to_dict() for c in state.conditions.values()],
        "admission": admission(state.cluster_queue, state.assignment).to_dict()
        if admitted and state.assignment
        else None,
        "requeueState": requeue,
    }
    if state.phase == Phase.PENDING:  # kept once admitted, as upstream
        status["resourceRequests"] = resource_requests(state.request)
    if state.evictions:
        stats = [{"reason": r, "underlyingCause": c, "count": n} for (r, c), n in state.evictions.items()]
        status["schedulingStats"] = {"evictions": stats}
    return status


def history(workload: kw.Workload) -> History:
    """What the Workload's status remembers for the core (``workloads.History``)."""
    status = workload.status
    if status is None:
        return History()
    requeue = status.requeue_state
    at = requeue.requeue_at if requeue is not None else None
    evictions = ((status.scheduling_stats or {}).get("evictions")) or []
    timeout = next((c for c in status.conditions or [] if c.type == kw.WorkloadConditionType.EVICTED
                    and c.status == "True" and c.reason == kw.EvictionReason.PODS_READY_TIMEOUT), None)  # fmt: skip
    recovery = next((c for c in status.conditions or [] if c.type == kw.WorkloadConditionType.PODS_READY
                     and c.status == "False" and c.reason == WAIT_FOR_RECOVERY), None)  # fmt: skip
    return History(
        requeue_count=(requeue.count or 0) if requeue is not None else 0,
        requeue_at=parse_rfc3339(at) if at else None,
        evictions=tuple(
            (e.get("reason", ""), e.get("underlyingCause", ""), int(e.get("count", 0))) for e in evictions
        ),
        timed_out_at=_transition(timeout),
        recovering_since=_transition(recovery),
        conditions=tuple(status.conditions or ()),
    )


def condition_true(workload: kw.Workload, type_: str) -> bool:
    return any(c.type == type_ and c.status == "True" for c in _conditions(workload))


def reserved_at(workload: kw.Workload) -> float | None:
    """When the stored Workload's quota was reserved (its ``QuotaReserved`` transition)."""
    found = (c for c in _conditions(workload) if c.type == kw.WorkloadConditionType.QUOTA_RESERVED)
    return _transition(next(found, None))


def _conditions(workload: kw.Workload) -> list[Condition]:
    return (workload.status.conditions if workload.status else None) or []


def _transition(condition: Condition | None) -> float | None:
    return (
        parse_rfc3339(condition.last_transition_time)
        if condition and condition.last_transition_time
        else None
    )


def resource_requests(request: WorkloadRequest) -> list[dict[str, Any]]:
    """``status.resourceRequests`` of a workload not admitted: each pod set's total requests (upstream's
    PropagateResourceRequests, under UnadmittedWorkloadsObservability)."""
    return [
        {"name": p.name, "resources": {r: format_amount(r, p.total(r)) for r in sorted(p.requests)}}
        for p in request.pod_sets
    ]


def admission(cluster_queue: str, assignment: Assignment) -> kw.Admission:
    """``status.admission`` for an admitted workload."""
    return kw.Admission(
        cluster_queue=cluster_queue,
        pod_set_assignments=[
            kw.PodSetAssignment(
                name=p.name,
                flavors=dict(sorted(p.flavors.items())),
                resource_usage=_resource_list(p),
                count=p.count,
            )
            for p in assignment.pod_sets
        ],
    )


def _resource_list(p: PodSetAssignment) -> ResourceList:
    return {
        resource: format_amount(resource, p.usage[(flavor, resource)])
        for resource, flavor in sorted(p.flavors.items())
    }


def assignment_from_admission(value: kw.Admission) -> Assignment:
    """Rebuild the core's assignment from a stored ``status.admission`` (after a restart)."""
    pod_sets = []
    for p in value.pod_set_assignments or []:
        flavors = dict(p.flavors or {})
        usage = {
            (flavors[r], r): to_amount(r, q) for r, q in (p.resource_usage or {}).items() if r in flavors
        }
        pod_sets.append(PodSetAssignment(p.name or kw.DEFAULT_POD_SET_NAME, p.count or 1, flavors, usage))
    return Assignment(pod_sets)
