"""The TrainJob controller's shell (upstream ``pkg/controller/trainjob_controller.go``).

One pass: read the TrainJob; leave it alone when another controller manages it; unless it finished, load its
runtime (the snapshot ConfigMap when present, else the live runtime, snapshotted now), build the desired
objects through the runtime framework and server-side-apply (field manager ``trainer``, forced) each one the
Trainer controller owns whose values differ from the live object; then compute the status (status plugin,
suspension, deadline) and write it once if it changed. A failed build or apply emits a Warning event
``TrainJobResourcesCreationFailed`` and sets no condition, as upstream; the pass still computes and writes the
status (so ``activeDeadlineSeconds`` still fails the job) and posts its events, then raises the collected
errors (``ReconcileError``) to be retried with back-off.

Every read goes through ``Reads``: the manager's informer caches in a running controller (a steady-state pass
makes no API request; see ``client/cache.py``), the store itself in the synchronous harness. Writes are made
only when the desired object differs from the cached one.

gangplane addition: while the job waits, the status also carries the ``gangplane.dev/Waiting`` condition
(``controllers/pending.py``) computed from the TrainJob's pods, its PodGroups (the ones the build names) and
its Kueue Workload; an event is posted on the TrainJob after the status write when its reason changes.
"""

from __future__ import annotations

import logging

from pydantic import ValidationError

from gangplane.api import trainer as t
from gangplane.api.jobset import JOBSET_NAME_LABEL
from gangplane.api.meta import Condition
from gangplane.api.scheduling import kueue as kq
from gangplane.client.cache import LiveReads, Reads, StoreReader
from gangplane.client.controller import ReconcileError, Result
from gangplane.client.informer import Key
from gangplane.clock import Clock, rfc3339
from gangplane.controllers import pending as p
from gangplane.controllers import trainjob_status as s
from gangplane.controllers.objects import controlled_by, deleting, is_subset
from gangplane.controllers.shell import EventRecorder, create_if_absent, delete_if_present
from gangplane.errors import ApiError, Forbidden
from gangplane.runtime.admission import resolve_runtime
from gangplane.runtime.core import new_objects
from gangplane.runtime.framework import Framework
from gangplane.runtime.info import RuntimeInfo
from gangplane.runtime.points import AppliedBy
from gangplane.runtime.render import SNAPSHOT_SUFFIX, runtime_snapshot
from gangplane.store import catalog
from gangplane.store.base import Object, ResourceType, Store
from gangplane.store.patch import APPLY_PATCH

FIELD_MANAGER = "trainer"
CREATION_FAILED = "TrainJobResourcesCreationFailed"
_log = logging.getLogger(__name__)


class ApplyError(Exception):
    """A desired object of a kind the store does not serve."""


class TrainJobReconciler:
    name = "trainjob"

    def __init__(
        self,
        store: Store,
        clock: Clock,
        framework: Framework,
        positions: p.QueuePositions | None = None,
        *,
        reads: Reads | None = None,
    ) -> None:
        """``positions``: where pending Kueue Workloads stand in their queues (the embedded Kueue knows);
        ``reads``: where reads come from (default: the store itself; the manager passes its caches)."""
        self.store, self.clock, self.framework, self.positions = store, clock, framework, positions
        self.reads = reads if reads is not None else LiveReads(store)
        self.reader = StoreReader(self.reads)
        self.events = EventRecorder(store, clock, "trainjob-controller")

    def reconcile(self, key: Key) -> Result:
        raw = self.reads.get(catalog.TRAINJOBS, *key)
        job = None if raw is None or deleting(raw) else _managed(raw, key)
        if raw is None or job is None:
            return Result()
        errors: list[Exception] = []
        failure, info = (None, None) if s.finished(job) else self._sync_children(job, raw, errors)
        now = self.clock.now()
        status, deadline = s.next_status(job, self.framework.run_status(job, self.reader), failure, now)
        if deadline.exceeded:
            try:
                self._delete_jobset(job)
            except ApiError as err:
                errors.append(err)
        event = self._waiting(job, raw, status, info, rfc3339(now))
        wanted = status.to_dict()
        if wanted != (raw.get("status") or {}):
            self.store.update_status(catalog.TRAINJOBS, {**raw, "status": wanted})
        if event is not None:
            self.events.event(raw, event.type, event.reason, event.message)
        if errors:
            raise ReconcileError(errors, deadline.requeue_after)
        return Result(requeue_after=deadline.requeue_after)

    def _sync_children(
        self, job: t.TrainJob, raw: Object, errors: list[Exception]
    ) -> tuple[Condition | None, RuntimeInfo | None]:
        """Build and apply; a condition when the runtime cannot be used, else ``None`` and the runtime info.
        A failed step is recorded in ``errors`` (and as a Warning event) instead of ending the pass."""
        unsupported = s.unsupported_runtime(job)
        if unsupported is not None:
            return unsupported, None
        try:
            runtime = self._runtime(job)
        except Forbidden:
            return s.runtime_missing(job), None
        except (ApiError, s.SnapshotError) as err:
            errors.append(err)
            return None, None
        try:
            built = new_objects(self.framework, job.model_copy(deep=True), runtime, self.reader)
            for desired in built.objects:
                if desired.applied_by == AppliedBy.TRAINER:
                    self._apply(desired.object.to_dict())
        except (ApiError, ApplyError) as err:
            self.events.event(raw, "Warning", CREATION_FAILED, str(err))
            errors.append(err)
            return None, None
        return None, built.info

    def _waiting(
        self, job: t.TrainJob, raw: Object, status: t.TrainJobStatus, info: RuntimeInfo | None, now: str
    ) -> s.WaitingEvent | None:
        """Set or drop the ``gangplane.dev/Waiting`` condition on ``status``; the event its change calls for."""
        old = s.waiting(job.status)
        if s.status_finished(status):
            s.set_waiting(status, None, now)
            return None
        namespace, name = job.metadata.namespace or "", job.metadata.name or ""
        pods = self.reads.list(catalog.PODS, namespace, f"{JOBSET_NAME_LABEL}={name}")
        workload = self._workload(job)
        position = None
        if workload is not None and self.positions is not None:
            position = self.positions.position(namespace, str(workload["metadata"].get("name", "")))
        groups = self._podgroups(job, info, pods)
        reason = p.pending_reason(raw, pods, groups, workload, position=position)
        s.set_waiting(status, reason, now)
        return s.waiting_event(old, reason, pods)

    def _podgroups(self, job: t.TrainJob, info: RuntimeInfo | None, pods: list[Object]) -> list[Object]:
        """The live PodGroups the pods name, and the one the runtime's ``podGroupPolicy`` gives the TrainJob's
        name (it exists before any pod)."""
        refs = p.podgroup_refs(pods)
        policy = info.pod_group_policy if info is not None else None
        name = job.metadata.name or ""
        if policy is not None and policy.coscheduling is not None:
            refs.append(("coscheduling", name))
        if policy is not None and policy.volcano is not None:
            refs.append(("volcano", name))
        namespace = job.metadata.namespace or ""
        found = (
            _tolerant_get(self.reads, p.PODGROUP_TYPES[kind], namespace, n) for kind, n in dict.fromkeys(refs)
        )
        return [group for group in found if group is not None]

    def _workload(self, job: t.TrainJob) -> Object | None:
        """The Kueue Workload Kueue made for this TrainJob (label ``kueue.x-k8s.io/job-uid`` and controller
        reference), when the TrainJob is queued; ``None`` without one or where Kueue is not installed."""
        uid = job.metadata.uid or ""
        if not (job.metadata.labels or {}).get(kq.QUEUE_NAME_LABEL) or not uid:
            return None
        selector = f"{kq.JOB_UID_LABEL}={uid}"
        try:
            found = self.reads.list(catalog.WORKLOADS, job.metadata.namespace or "", selector)
        except ApiError:
            return None
        return next((w for w in found if controlled_by(w, uid)), None)

    def _runtime(self, job: t.TrainJob) -> t.TrainingRuntime:
        """The snapshot's runtime, or the live one (``Forbidden`` when missing), snapshotted now. A runtime the
        cache lacks is read again from the server: a TrainJob applied with its runtime can reach the cache first,
        and failing it for that would be final."""
        namespace, name = job.metadata.namespace or "", job.metadata.name or ""
        snapshot = self.reads.get(catalog.CONFIGMAPS, namespace, f"{name}{SNAPSHOT_SUFFIX}")
        if snapshot is not None:
            return s.runtime_from_snapshot(snapshot, job)
        try:
            runtime = resolve_runtime(job, self.reader)
        except Forbidden:  # absent from the cache may only mean not yet seen: confirm live before failing
            runtime = resolve_runtime(job, StoreReader(LiveReads(self.store)))
        create_if_absent(self.store, catalog.CONFIGMAPS, runtime_snapshot(job, runtime).to_dict())
        return runtime

    def _apply(self, obj: Object) -> None:
        rt = catalog.by_kind(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if rt is None:
            raise ApplyError(f"no served resource for {obj.get('apiVersion')} {obj.get('kind')}")
        meta = obj.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        live = self.reads.get(rt, namespace, name)
        if live is not None and is_subset(obj, live):
            return
        self.store.patch(rt, namespace if rt.namespaced else "", name, obj, APPLY_PATCH,
                         field_manager=FIELD_MANAGER, force=True)  # fmt: skip

    def _delete_jobset(self, job: t.TrainJob) -> None:
        namespace, name = job.metadata.namespace or "", job.metadata.name or ""
        jobset = self.reads.get(catalog.JOBSETS, namespace, name)
        if jobset is not None:
            delete_if_present(self.store, catalog.JOBSETS, jobset)


def _managed(raw: Object, key: Key) -> t.TrainJob | None:
    """The TrainJob, when it decodes and this controller manages it (``spec.managedBy``)."""
    try:
        job = t.TrainJob.model_validate(raw)
    except ValidationError as err:
        _log.warning("trainjob %s/%s cannot be decoded: %s", *key, err)
        return None
    return job if (job.spec.managed_by or t.DEFAULT_MANAGED_BY) == t.DEFAULT_MANAGED_BY else None


def _tolerant_get(reads: Reads, rt: ResourceType, namespace: str, name: str) -> Object | None:
    """A read that also answers ``None`` for a kind the API server does not serve (live reads)."""
    try:
        return reads.get(rt, namespace, name)
    except ApiError:
        return None
