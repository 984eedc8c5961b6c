"""The Job controller's shell: read a batch/v1 Job and its pods, run ``job_policy.plan``, write.

Pods are found by the ``batch.kubernetes.io/controller-uid`` label and kept only when the Job controls them.
Finished pods are counted through the job-tracking finalizer (``job_tracking.py``): the status naming them as
uncounted is written first, then their finalizers are removed, then a second pass moves them into the counts
(and writes the terminal condition once nothing is uncounted). The controller's own deletions (suspend,
surplus pods) remove the finalizer first, so they are not counted, as upstream's ``deleteJobPods``. The pods
of a Job being deleted, or gone (``handleOrphanPod``), lose the finalizer uncounted.
Watches: Jobs, and Pods mapped to their controlling Job. Records the Job controller's events
(``SuccessfulCreate``, ``SuccessfulDelete``, ``FailedCreate``, the failure reason, ``Completed``,
``Suspended``/``Resumed``).
"""

from __future__ import annotations

from typing import Any

from gangplane.client.controller import Result
from gangplane.client.guarded import patch_read, without_finalizer
from gangplane.client.informer import Key
from gangplane.clock import Clock
from gangplane.controllers import job_tracking as jt
from gangplane.controllers.job_pods import CONTROLLER_UID_LABEL, JOB_NAME_LABEL
from gangplane.controllers.job_policy import JobPlan, plan
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
        if job is not None and spec_of(job).get("managedBy", JOB_CONTROLLER) != JOB_CONTROLLER:
            return Result()  # not even its pods' finalizers (``handleOrphanPod``)
        if job is None or deleting(job):
            self._release_orphans(namespace, name, job)
            return Result()
        decided = self._pass(job)
        if decided.remove_finalizers and not decided.delete_job:  # counted: move them into the counts
            job = get_or_none(self.store, catalog.JOBS, namespace, name)
            if job is not None and not deleting(job):
                decided = self._pass(job)
        return Result(requeue_after=decided.requeue_after)

    def _pods(self, job: Object) -> list[Object]:
        selector = f"{CONTROLLER_UID_LABEL}={uid_of(job)}"
        pods = list_labelled(self.store, catalog.PODS, str(job["metadata"]["namespace"]), selector)
        return [pod for pod in pods if controlled_by(pod, uid_of(job))]

    def _pass(self, job: Object) -> JobPlan:
        """One ``syncJob``: the status (with the uncounted pods) first, then finalizers, deletes, creates."""
        decided = plan(job, self._pods(job), self.clock.now())
        if decided.delete_job:  # ttlSecondsAfterFinished: deleted in the foreground, as upstream
            delete_if_present(self.store, catalog.JOBS, job, Propagation.FOREGROUND)
            return decided
        job = {**job, "apiVersion": "batch/v1", "kind": "Job"}
        if decided.status_changed:
            self.store.update_status(catalog.JOBS, {**job, "status": decided.status})
            self._report(job, decided.status)
        for pod in decided.remove_finalizers:
            self._remove_finalizer(pod)
        for pod in decided.delete_pods:
            self._remove_finalizer(pod)  # ``deleteJobPods``: a pod the controller deletes is not counted
            delete_if_present(self.store, catalog.PODS, pod)
            self.events.event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {name_of(pod)}")
        for pod in decided.create_pods:
            self._create(job, pod)
        return decided

    def _remove_finalizer(self, pod: Object) -> None:
        """Drop job-tracking from the pod as stored (a write that lost a race reads the pod again)."""
        if jt.tracked(pod):
            namespace, name = str(pod["metadata"]["namespace"]), name_of(pod)
            finalizer = without_finalizer(jt.TRACKING_FINALIZER)
            patch_read(self.store, catalog.PODS, namespace, name, finalizer, uid=uid_of(pod))

    def _release_orphans(self, namespace: str, name: str, job: Object | None) -> None:
        """``handleOrphanPod``: the pods of a Job gone, or being deleted, lose the finalizer."""
        for pod in list_labelled(self.store, catalog.PODS, namespace, f"{JOB_NAME_LABEL}={name}"):
            refs = pod["metadata"].get("ownerReferences") or ()
            owner: dict[str, Any] = next((r for r in refs if r.get("controller")), {})
            mine = owner.get("kind") == "Job" and owner.get("name") == name
            if mine and (job is None or owner.get("uid") == uid_of(job)):
                self._remove_finalizer(pod)

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
