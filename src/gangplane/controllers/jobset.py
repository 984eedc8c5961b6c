"""The JobSet controller's shell: read the JobSet and its Jobs, run ``jobset_policy.plan``, write.

Reads go to the store (not an informer cache) so a pass never acts on a view older than its own last write;
the embedded store makes that as cheap as a cache. Watches: JobSets, and Jobs and Services mapped to their
controlling JobSet.
"""

from __future__ import annotations

from gangplane.api.jobset import JOBSET_NAME_LABEL
from gangplane.client.controller import Result
from gangplane.client.informer import Key
from gangplane.clock import Clock
from gangplane.controllers import jobset_build as b
from gangplane.controllers.jobset_policy import JobSetPlan, plan
from gangplane.controllers.objects import controlled_by, deleting, spec_of, uid_of
from gangplane.controllers.shell import create_if_absent, delete_if_present, get_or_none, list_labelled
from gangplane.store import catalog
from gangplane.store.base import Object, Propagation, Store


class JobSetReconciler:
    name = "jobset"

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store, self.clock = store, clock

    def reconcile(self, key: Key) -> Result:
        namespace, name = key
        jobset = get_or_none(self.store, catalog.JOBSETS, namespace, name)
        if jobset is None or deleting(jobset) or _managed_elsewhere(jobset):
            return Result()
        jobs = [
            job
            for job in list_labelled(self.store, catalog.JOBS, namespace, f"{JOBSET_NAME_LABEL}={name}")
            if controlled_by(job, uid_of(jobset))
        ]
        service = get_or_none(self.store, catalog.SERVICES, namespace, b.subdomain(jobset))
        decided = plan(jobset, jobs, service_exists=service is not None, now=self.clock.now())
        self._execute(jobset, decided)
        return Result(requeue_after=decided.requeue_after)

    def _execute(self, jobset: Object, decided: JobSetPlan) -> None:
        for job in decided.delete_jobs:
            delete_if_present(self.store, catalog.JOBS, job, Propagation.FOREGROUND)
        if decided.create_service is not None:
            create_if_absent(self.store, catalog.SERVICES, decided.create_service)
        for job in decided.create_jobs:
            create_if_absent(self.store, catalog.JOBS, job)
        for job in decided.update_jobs:
            self.store.update(catalog.JOBS, job)
        if decided.delete_jobset:
            delete_if_present(self.store, catalog.JOBSETS, jobset, Propagation.FOREGROUND)
            return
        if decided.status_changed:
            self.store.update_status(catalog.JOBSETS, {**jobset, "status": decided.status})


def _managed_elsewhere(jobset: Object) -> bool:
    manager = spec_of(jobset).get("managedBy")
    return manager is not None and manager != b.MANAGED_BY_JOBSET
