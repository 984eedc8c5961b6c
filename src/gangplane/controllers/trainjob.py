"""The TrainJob controller's shell (upstream ``pkg/controller/trainjob_controller.go``).

One pass: read the TrainJob; leave it alone when another controller manages it; unless it finished, load its
runtime (the snapshot ConfigMap when present, else the live runtime, snapshotted now), build the desired
objects through the runtime framework and server-side-apply (field manager ``trainer``, forced) each one the
Trainer controller owns whose values differ from the live object; then compute the status (status plugin,
suspension, deadline) and write it once if it changed. A failed build or apply emits a Warning event
``TrainJobResourcesCreationFailed`` and is retried with back-off; it sets no condition, as upstream.
"""

from __future__ import annotations

import logging

from pydantic import ValidationError

from gangplane.api import trainer as t
from gangplane.api.meta import Condition
from gangplane.client.controller import Result
from gangplane.client.informer import Key
from gangplane.clock import Clock
from gangplane.controllers import trainjob_status as s
from gangplane.controllers.objects import deleting, is_subset
from gangplane.controllers.shell import (
    EventRecorder,
    StoreReader,
    create_if_absent,
    delete_if_present,
    get_or_none,
)
from gangplane.errors import ApiError, Forbidden
from gangplane.runtime.admission import resolve_runtime
from gangplane.runtime.core import new_objects
from gangplane.runtime.framework import Framework
from gangplane.runtime.points import AppliedBy
from gangplane.runtime.render import SNAPSHOT_SUFFIX, runtime_snapshot
from gangplane.store import catalog
from gangplane.store.base import Object, Store
from gangplane.store.patch import APPLY_PATCH

FIELD_MANAGER = "trainer"
CREATION_FAILED = "TrainJobResourcesCreationFailed"
_log = logging.getLogger(__name__)


class ApplyError(Exception):
    """A desired object of a kind the store does not serve."""


class TrainJobReconciler:
    name = "trainjob"

    def __init__(self, store: Store, clock: Clock, framework: Framework) -> None:
        self.store, self.clock, self.framework = store, clock, framework
        self.reader = StoreReader(store)
        self.events = EventRecorder(store, clock, "trainjob-controller")

    def reconcile(self, key: Key) -> Result:
        raw = get_or_none(self.store, catalog.TRAINJOBS, *key)
        if raw is None or deleting(raw):
            return Result()
        try:
            job = t.TrainJob.model_validate(raw)
        except ValidationError as err:
            _log.warning("trainjob %s/%s cannot be decoded: %s", *key, err)
            return Result()
        if (job.spec.managed_by or t.DEFAULT_MANAGED_BY) != t.DEFAULT_MANAGED_BY:
            return Result()
        failure = None if s.finished(job) else self._sync_children(job, raw)
        status, deadline = s.next_status(
            job, self.framework.run_status(job, self.reader), failure, self.clock.now()
        )
        if deadline.exceeded:
            self._delete_jobset(job)
        wanted = status.to_dict()
        if wanted != (raw.get("status") or {}):
            self.store.update_status(catalog.TRAINJOBS, {**raw, "status": wanted})
        return Result(requeue_after=deadline.requeue_after)

    def _sync_children(self, job: t.TrainJob, raw: Object) -> Condition | None:
        """Build and apply; a condition when the runtime cannot be used, ``None`` when all went well."""
        unsupported = s.unsupported_runtime(job)
        if unsupported is not None:
            return unsupported
        try:
            runtime = self._runtime(job)
        except Forbidden:
            return s.runtime_missing(job)
        try:
            built = new_objects(self.framework, job.model_copy(deep=True), runtime, self.reader)
            for desired in built.objects:
                if desired.applied_by == AppliedBy.TRAINER:
                    self._apply(desired.object.to_dict())
        except (ApiError, ApplyError, s.SnapshotError) as err:
            self.events.event(raw, "Warning", CREATION_FAILED, str(err))
            raise
        return None

    def _runtime(self, job: t.TrainJob) -> t.TrainingRuntime:
        """The snapshot's runtime, or the live one (``Forbidden`` when missing), snapshotted now."""
        namespace, name = job.metadata.namespace or "", job.metadata.name or ""
        snapshot = get_or_none(self.store, catalog.CONFIGMAPS, namespace, f"{name}{SNAPSHOT_SUFFIX}")
        if snapshot is not None:
            return s.runtime_from_snapshot(snapshot, job)
        runtime = resolve_runtime(job, self.reader)
        create_if_absent(self.store, catalog.CONFIGMAPS, runtime_snapshot(job, runtime).to_dict())
        return runtime

    def _apply(self, obj: Object) -> None:
        rt = catalog.by_kind(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if rt is None:
            raise ApplyError(f"no served resource for {obj.get('apiVersion')} {obj.get('kind')}")
        meta = obj.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        live = get_or_none(self.store, rt, namespace, name)
        if live is not None and is_subset(obj, live):
            return
        self.store.patch(rt, namespace if rt.namespaced else "", name, obj, APPLY_PATCH,
                         field_manager=FIELD_MANAGER, force=True)  # fmt: skip

    def _delete_jobset(self, job: t.TrainJob) -> None:
        namespace, name = job.metadata.namespace or "", job.metadata.name or ""
        jobset = get_or_none(self.store, catalog.JOBSETS, namespace, name)
        if jobset is not None:
            delete_if_present(self.store, catalog.JOBSETS, jobset)
