"""The Job controller's shell: read a batch/v1 Job and its pods, run ``job_policy.plan``, write.

Pods are found by the ``batch.kubernetes.io/controller-uid`` label and kept only when the Job controls them.
Watches: Jobs, and Pods mapped to their controlling Job. Records the Job controller's events
(``SuccessfulCreate``, ``SuccessfulDelete``, ``FailedCreate``, the failure reason, ``Completed``,
``Suspended``/``Resumed``).
"""

from __future__ import annotations

from typing import Any

from gangplane.client.controller import Result
from gangplane.client.informer import Key
from gangplane.clock import Clock
from gangplane.controllers.job_pods import CONTROLLER_UID_LABEL
from gangplane.controllers.job_policy import plan
from gangplane.controllers.objects import controlled_by, deleting, name_of, spec_of, status_of, uid_of
from gangplane.controllers.shell import EventRecorder, delete_if_present, get_or_none, list_labelled
from gangplane.errors import ApiError
from gangplane.store import catalog
from gangplane.store.base import Object, Propagation, Store

# Jobs with another ``spec.managedBy`` (e.g. Kueue's MultiKueue) belong to another controller (KEP-4368).
JOB_CONTROLLER = "kubernetes.io/job-controller"


class JobReconciler:
    name = "job"

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store, self.clock = store, clock
        self.events = EventRecorder(store, clock, "job-controller")

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
        if decided.delete_job:  # ttlSecondsAfterFinished: deleted in the foreground, as upstream
            delete_if_present(self.store, catalog.JOBS, job, Propagation.FOREGROUND)
            return Result()
        job = {**job, "apiVersion": "batch/v1", "kind": "Job"}
        for pod in decided.delete_pods:
            delete_if_present(self.store, catalog.PODS, pod)
            self.events.event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {name_of(pod)}")
        for pod in decided.create_pods:
            self._create(job, pod)
        if decided.status_changed:
            self.store.update_status(catalog.JOBS, {**job, "status": decided.status})
            self._report(job, decided.status)
        return Result(requeue_after=decided.requeue_after)

    def _create(self, job: Object, pod: Object) -> None:
        try:
            created = self.store.create(catalog.PODS, pod)
        except ApiError as err:
            self.events.event(job, "Warning", "FailedCreate", f"Error creating: {err}")
            raise
        self.events.event(job, "Normal", "SuccessfulCreate", f"Created pod: {name_of(created)}")

    def _report(self, job: Object, status: dict[str, Any]) -> None:
        """The Job controller's events when a Job finishes or is suspended/resumed (``syncJob``)."""
        before = {(c.get("type"), c.get("status")) for c in status_of(job).get("conditions") or []}
        for cond in status.get("conditions") or []:
            key = (cond.get("type"), cond.get("status"))
            if key in before:
                continue
            if key == ("Failed", "True"):
                self.events.event(job, "Warning", str(cond.get("reason")), str(cond.get("message")))
            elif key in _EVENTS:
                self.events.event(job, "Normal", *_EVENTS[key])


_EVENTS = {
    ("Complete", "True"): ("Completed", "Job completed"),
    ("Suspended", "True"): ("Suspended", "Job suspended"),
    ("Suspended", "False"): ("Resumed", "Job resumed"),
}
