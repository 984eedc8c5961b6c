"""The TrainJob side of the embedded Kueue (kueue ``pkg/controller/jobs/trainjob/``, kueue.md §10): build the
Workload from the live runtime, start a job on admission, stop it on eviction, and read readiness and
completion back. Functions here take a store and act once; the reconciler in ``controller`` decides when.

Contract kept (trainer-api.md §11): only Kueue's own runtime patch entry is ever changed, never reordered;
``spec.suspend`` is cleared only when the Workload is admitted.
"""

from __future__ import annotations

import contextlib
from typing import Any

from gangplane.api import trainer as t
from gangplane.api.core import Toleration
from gangplane.api.scheduling import kueue_workload as kw
from gangplane.client.cache import LiveReads, StoreReader
from gangplane.client.guarded import Body, patch_read
from gangplane.clock import Clock
from gangplane.errors import NotFound
from gangplane.runtime.admission import resolve_runtime
from gangplane.runtime.core import new_objects
from gangplane.runtime.framework import Framework
from gangplane.runtime.plugins import default_registry
from gangplane.runtime.plugins.kueue import PodSetAdmission, admission_patch, is_managed, kueue_patch
from gangplane.runtime.points import AppliedBy, Handle
from gangplane.schedulers.kueue.flavors import PodSetAssignment, node_selector
from gangplane.schedulers.kueue.guarded import with_list_entry
from gangplane.schedulers.kueue.model import FlavorSpec
from gangplane.store import MERGE_PATCH, catalog
from gangplane.store.base import Object, Store

_TERMINAL = ("Complete", "Failed")


def build_workload(store: Store, clock: Clock, job: t.TrainJob) -> kw.Workload | None:
    """The Workload Kueue derives from ``job`` via its live runtime; None when the job is not Kueue-managed."""
    if not is_managed(job):
        return None
    reader = StoreReader(LiveReads(store))
    runtime = resolve_runtime(job, reader)
    framework = Framework(default_registry(), Handle(clock))
    built = new_objects(framework, job.model_copy(deep=True), runtime, reader)
    found = (d.object for d in built.objects if d.applied_by == AppliedBy.KUEUE)
    return next((o for o in found if isinstance(o, kw.Workload)), None)


def job_finished(job: t.TrainJob) -> tuple[bool, bool, str]:
    """(finished, succeeded, message) from the TrainJob's terminal conditions."""
    for condition in (job.status.conditions if job.status else None) or []:
        if condition.type in _TERMINAL and condition.status == "True":
            return True, condition.type == "Complete", condition.message
    return False, False, ""


def pods_ready(store: Store, job: t.TrainJob) -> bool:
    """All child jobs ready or succeeded: sum(ready + succeeded) == sum(replicas) (kueue.md §8)."""
    ns, name = job.metadata.namespace or "", job.metadata.name or ""
    try:
        jobset = store.get(catalog.JOBSETS, ns, name)
    except NotFound:
        return False
    replicas = sum(int(r.get("replicas", 1)) for r in jobset.get("spec", {}).get("replicatedJobs") or [])
    statuses = (job.status.jobs_status if job.status else None) or []
    done = sum((s.ready or 0) + (s.succeeded or 0) for s in statuses)
    return replicas > 0 and done >= replicas


def has_active_pods(job: t.TrainJob) -> bool:
    return any((s.active or 0) > 0 for s in (job.status.jobs_status if job.status else None) or [])


def pod_set_admissions(
    workload: kw.Workload, assignments: list[PodSetAssignment], flavors: dict[str, FlavorSpec]
) -> list[PodSetAdmission]:  # fmt: skip
    """What Kueue injects per PodSet: flavor labels as nodeSelector, template + flavor tolerations."""
    templates = {p.name or kw.DEFAULT_POD_SET_NAME: p.template.spec for p in workload.spec.pod_sets}
    found = []
    for assignment in assignments:
        pod = templates.get(assignment.name)
        merged: list[Toleration] = list(pod.tolerations or []) if pod else []
        for flavor_name in sorted(set(assignment.flavors.values())):
            for toleration in flavors[flavor_name].tolerations if flavor_name in flavors else ():
                if toleration not in merged:
                    merged.append(toleration)
        found.append(PodSetAdmission(assignment.name, node_selector(assignment, flavors), tuple(merged)))
    return found


def start_job(store: Store, job: t.TrainJob, admissions: list[PodSetAdmission]) -> None:
    """Write Kueue's admission patch and unsuspend, in one request (Trainer >= v2.3 accepts both); the other
    managers' patches are kept as stored (``guarded``)."""
    entry = admission_patch(job, admissions).to_dict()

    def body(current: Object) -> dict[str, Any]:
        return {"spec": {"runtimePatches": with_list_entry(current, "runtimePatches", "manager", entry),
                         "suspend": False}}  # fmt: skip

    _patch(store, job, body)


def stop_job(store: Store, job: t.TrainJob) -> None:
    """Suspend; the TrainJob controller then removes the pods. The patch is cleared once none is active."""
    if job.spec.suspend:
        return
    with contextlib.suppress(NotFound):
        body = {"spec": {"suspend": True}}
        store.patch(
            catalog.TRAINJOBS, job.metadata.namespace or "", job.metadata.name or "", body, MERGE_PATCH
        )


def clear_patch_when_stopped(store: Store, job: t.TrainJob) -> None:
    """Drop the replicated-job part of Kueue's patch once a suspended job has no active pods (idempotent)."""
    entry = kueue_patch(job)
    template = entry.training_runtime_spec.template if entry and entry.training_runtime_spec else None
    if not job.spec.suspend or has_active_pods(job) or template is None or template.spec is None:
        return
    cleared = t.RuntimePatch(manager=entry.manager if entry else "")
    if template.metadata is not None:
        cleared.training_runtime_spec = t.TrainingRuntimeSpecPatch(
            template=t.JobSetTemplatePatch(metadata=template.metadata)
        )
    wanted = cleared.to_dict()

    def body(current: Object) -> dict[str, Any] | None:
        fresh = t.TrainJob.model_validate(current)
        if not fresh.spec.suspend or has_active_pods(fresh):
            return None  # started again meanwhile
        return {"spec": {"runtimePatches": with_list_entry(current, "runtimePatches", "manager", wanted)}}

    _patch(store, job, body)


def _patch(store: Store, job: t.TrainJob, body: Body) -> None:
    meta = job.metadata
    patch_read(store, catalog.TRAINJOBS, meta.namespace or "", meta.name or "", body, uid=meta.uid or "")
