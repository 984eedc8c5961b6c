"""Closing a KAI cycle: PodGroup status (scheduling conditions with reasons, resource totals), queue status,
and "why pending" per gang (kai.md §3, §4.1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from gangplane.api.scheduling import kai
from gangplane.clock import rfc3339
from gangplane.schedulers.base import PendingReason, Status, StatusWrite
from gangplane.schedulers.kai.model import RESOURCES, KaiJob, Res
from gangplane.schedulers.kai.session import KaiSession
from gangplane.store.catalog import KAI_PODGROUPS, KAI_QUEUES


def resource_list(amounts: Res) -> dict[str, str]:
    """(GPUs, millicores, MB) as a Kubernetes resource list."""
    gpu, cpu, memory = (float(x) for x in amounts)
    out = {}
    if gpu:
        out["nvidia.com/gpu"] = f"{gpu:g}"
    if cpu:
        out["cpu"] = f"{round(cpu)}m"
    if memory:
        out["memory"] = f"{round(memory)}M"
    return out


def _scheduling_conditions(
    session: KaiSession, job: KaiJob, old: list[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    found = session.reasons.get(job.key)
    if found is None or not job.pending():
        return []
    reason, message = found
    cond = {
        "type": kai.SCHEDULING_CONDITION_UNSCHEDULABLE_ON_NODE_POOL,
        "nodePool": session.config.node_pool,
        "reasons": [{"reason": reason, "message": message}],
        "status": "True",
    }
    same = next((c for c in old if all(c.get(k) == v for k, v in cond.items())), None)
    if same is not None:
        return [dict(same)]
    return [{**cond, "transitionID": f"cycle-{session.now:.3f}", "lastTransitionTime": rfc3339(session.now)}]


def pod_group_status(session: KaiSession, job: KaiJob) -> dict[str, Any]:
    assert job.obj is not None
    old = dict(job.obj.get("status") or {})
    allocated = session.request([m for m in job.members if m.running])
    requested = allocated + session.request(job.pending())
    status = {
        **old,
        "schedulingConditions": _scheduling_conditions(
            session, job, list(old.get("schedulingConditions") or [])
        ),
        "resourcesStatus": {
            "allocated": resource_list(allocated),
            "allocatedNonPreemptible": resource_list(
                allocated if not job.preemptible else np.zeros(len(RESOURCES))
            ),
            "requested": resource_list(requested),
        },
    }
    return status


def pod_group_writes(session: KaiSession) -> list[StatusWrite]:
    writes = []
    for job in session.jobs.values():
        if job.obj is None:
            continue
        status, old = pod_group_status(session, job), job.obj.get("status") or {}
        if status != old:
            writes.append(StatusWrite(KAI_PODGROUPS, job.namespace, job.name, status, old))
    return writes


def queue_writes(session: KaiSession, objs: list[Mapping[str, Any]]) -> list[StatusWrite]:
    writes = []
    for obj in objs:
        name = obj["metadata"]["name"]
        state = session.book.states.get(name)
        if state is None:
            continue
        old = dict(obj.get("status") or {})
        status = {
            **old,
            "childQueues": sorted(session.book.children.get(name, [])) or None,
            "allocated": resource_list(state.allocated),
            "allocatedNonPreemptible": resource_list(state.allocated_non_preemptible),
            "requested": resource_list(state.requested),
        }
        status = {k: v for k, v in status.items() if v is not None}
        if status != old:
            writes.append(StatusWrite(KAI_QUEUES, "", name, status, old))
    return writes


def pending_reasons(session: KaiSession) -> list[PendingReason]:
    out = []
    for job in session.jobs.values():
        keys = tuple(m.pod.key for m in job.pending())
        if not keys:
            continue
        reason, message = session.reasons.get(job.key, ("Unschedulable", "not scheduled this cycle"))
        status = Status.WAIT if reason in ("Pipelined", "NotEnoughPods") else Status.UNSCHEDULABLE
        out.append(PendingReason(keys, status, message, reason=reason, group=job.key))
    for group, (reason, message, pods) in sorted(session.left_out.items()):
        if pods:
            out.append(PendingReason(pods, Status.UNSCHEDULABLE_AND_UNRESOLVABLE, message, reason, group))
    return out
