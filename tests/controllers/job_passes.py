"""The Job controller's passes as its shell runs them over one listing (``controllers/job.py``): a pass that
records finished pods as uncounted and drops their job-tracking finalizers is followed by one that moves them
into the counts and enacts the terminal condition (``job_tracking.py``)."""

from __future__ import annotations

from typing import Any

from gangplane.controllers import job_policy as p
from gangplane.controllers import job_tracking as jt


def settle_plan(job: dict[str, Any], pods: list[dict[str, Any]], now: float) -> p.JobPlan:
    first = p.plan(job, pods, now)
    if not first.remove_finalizers or first.delete_job:
        return first
    released = {id(pod) for pod in [*first.remove_finalizers, *first.delete_pods]}
    stripped = {id(pod): jt.without_tracking_finalizer(pod) for pod in pods if id(pod) in released}
    originals = {id(copy): pod for pod, copy in ((x, stripped.get(id(x), x)) for x in pods)}
    second = p.plan({**job, "status": first.status}, [stripped.get(id(x), x) for x in pods], now)
    second.delete_pods = [originals.get(id(pod), pod) for pod in second.delete_pods]
    second.status_changed |= first.status_changed
    second.remove_finalizers = first.remove_finalizers
    return second
