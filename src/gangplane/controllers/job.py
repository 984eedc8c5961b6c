"""The Job controller's shell: read a batch/v1 Job and its pods, run ``job_policy.plan``, write.

Pods are found by the ``batch.kubernetes.io/controller-uid`` label and kept only when the Job controls them.
Watches: Jobs, and Pods mapped to their controlling Job.
"""

from __future__ import annotations

from gangplane.client.controller import Result
from gangplane.client.informer import Key
from gangplane.clock import Clock
from gangplane.controllers.job_pods import CONTROLLER_UID_LABEL
from gangplane.controllers.job_policy import plan
from gangplane.controllers.objects import controlled_by, deleting, spec_of, uid_of
from gangplane.controllers.shell import delete_if_present, get_or_none, list_labelled
from gangplane.store import catalog
from gangplane.store.base import Propagation, Store

# Jobs with another ``spec.managedBy`` (e.g. Kueue's MultiKueue) belong to another controller (KEP-4368).
JOB_CONTROLLER = "kubernetes.io/job-controller"


class JobReconciler:
    name = "job"

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store, self.clock = store, clock

    def reconcile(self, key: Key) -> Result:
        namespace, name = key
        job = get_or_none(self.store, catalog.JOBS, namespace, name)
        if job is None or deleting(job) or spec_of(job).get("managedBy", JOB_CONTROLLER) != JOB_CONTROLLER:
            return Result()
        uid = uid_of(job)
        pods = [
            pod
            for pod in list_labelled(self.store, catalog.PODS, namespace, f"{CONTROLLER_UID_LABEL}={uid}")
            if controlled_by(pod, uid)
        ]
        decided = plan(job, pods, self.clock.now())
        if (
            decided.delete_job
        ):  # ttlSecondsAfterFinished: the TTL-after-finished controller deletes in foreground
            delete_if_present(self.store, catalog.JOBS, job, Propagation.FOREGROUND)
            return Result()
        for pod in decided.delete_pods:
            delete_if_present(self.store, catalog.PODS, pod)
        for pod in decided.create_pods:
            self.store.create(catalog.PODS, pod)
        if decided.status_changed:
            self.store.update_status(catalog.JOBS, {**job, "status": decided.status})
        return Result(requeue_after=decided.requeue_after)
