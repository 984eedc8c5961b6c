"""The embedded Kueue controller: the shell around the pure core, on the client controller framework.

One reconciler, two kinds of keys:
- a TrainJob key: create its Workload (owner = the TrainJob) from the live runtime, clear Kueue's patch once a
  stopped job has no active pods, then ask for an admission pass;
- the cycle key: bring the core up to date with the store (queues, flavors, Workloads, job readiness and
  completion), evict on waitForPodsReady timeouts, run admission cycles until one changes nothing, then
  write what they decided: ``status.admission`` and conditions on Workloads, start (patch + unsuspend) or
  stop (suspend) TrainJobs. It asks to run again at the core's next deadline (requeue, backoff, timeout).

Run with one worker: the core is not thread-safe and passes must not interleave.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from gangplane.api import trainer as t
from gangplane.api.scheduling import kueue_workload as kw
from gangplane.api.scheduling.kueue import RESOURCE_IN_USE_FINALIZER
from gangplane.client.controller import Controller, Manager, Result, controller_owner, own_key
from gangplane.client.guarded import patch_read, without_finalizer
from gangplane.client.informer import Key
from gangplane.clock import Clock, rfc3339
from gangplane.errors import NotFound
from gangplane.runtime.plugins.kueue import is_managed, workload_name
from gangplane.schedulers.kueue import jobs, localqueues
from gangplane.schedulers.kueue.changes import Batch, Changes
from gangplane.schedulers.kueue.convert import (
    assignment_from_admission,
    cluster_queue_spec,
    cohort_spec,
    condition_true,
    flavor_spec,
    history,
    reserved_at,
    workload_request,
    workload_status,
)
from gangplane.schedulers.kueue.cycle import CycleResult, run_cycle
from gangplane.schedulers.kueue.events import WorkloadEvents
from gangplane.schedulers.kueue.guarded import owned_conditions
from gangplane.schedulers.kueue.lifecycle import (
    OWNER_NOT_FOUND,
    OWNER_NOT_FOUND_MESSAGE,
    Fate,
    Verdict,
    controller_trainjob,
    is_finished,
    verdict,
)
from gangplane.schedulers.kueue.metrics import KueueMetrics
from gangplane.schedulers.kueue.snapshot import PendingSnapshot
from gangplane.schedulers.kueue.state import Eviction, KueueConfig, KueueState
from gangplane.schedulers.kueue.statuswriter import QueueStatusWriter
from gangplane.schedulers.kueue.storeview import (
    Queues,
    changed_workloads,
    owner_of,
    read_queues,
    trainjob,
    workload_and_job,
)
from gangplane.schedulers.kueue.visibility import PendingWorkload
from gangplane.schedulers.kueue.workloads import Phase, WorkloadState
from gangplane.store import MERGE_PATCH, catalog
from gangplane.store.base import Store

CYCLE_KEY: Key = ("", "kueue-admission-cycle")
MAX_CYCLES_PER_PASS = 200
_CONFIG_TYPES = (catalog.CLUSTER_QUEUES, catalog.COHORTS, catalog.RESOURCE_FLAVORS)


class KueueReconciler:
    name = "kueue"

    def __init__(self, store: Store, clock: Clock, metrics: KueueMetrics | None = None,
                 config: KueueConfig | None = None) -> None:  # fmt: skip
        self.store, self.clock, self.metrics = store, clock, metrics
        self.core = KueueState(config or KueueConfig())
        self.controller: Controller | None = None
        self._config_version: tuple[str, ...] = ()
        self._written: dict[str, Any] = {}
        self._touched: set[str] = set()
        self.snapshot = PendingSnapshot()
        self._moved_cqs: set[str] = set()  # ClusterQueues whose workloads changed in this pass
        self.queue_status = QueueStatusWriter(store)
        self.events = WorkloadEvents(store, clock)
        self._stamp = ""  # rfc3339 of the current pass: conditions that changed in it carry this time
        self.changes = Changes(CYCLE_KEY)
        self._queues = Queues()
        self._owners: dict[str, str] = {}  # Workload key -> owner TrainJob name
        self.on_position_changed: Callable[[Key], None] | None = None
        """Told each TrainJob whose Workload moved in its queue (the TrainJob controller's enqueue)."""

    def reconcile(self, key: Key) -> Result:
        if key == CYCLE_KEY:
            return self._schedule()
        self._sync_trainjob(*key)
        if self.controller is not None:
            self.controller.enqueue(CYCLE_KEY)
        return Result()

    # ------------------------------------------------------------ TrainJobs

    def _sync_trainjob(self, namespace: str, name: str) -> None:
        job = trainjob(self.store, namespace, name)
        if job is None or not is_managed(job):
            return
        wl_name = workload_name(name, job.metadata.uid or "")
        self.changes.mark(f"{namespace}/{wl_name}")  # its readiness or completion may have changed
        state = self.core.workloads.get(f"{namespace}/{wl_name}")
        if state is None and not jobs.job_finished(job)[0]:
            with contextlib.suppress(NotFound):
                self.store.get(catalog.WORKLOADS, namespace, wl_name)
                return
            workload = jobs.build_workload(self.store, self.clock, job)
            if workload is not None:
                workload.metadata.name = wl_name
                self.store.create(catalog.WORKLOADS, workload.to_dict())
        elif state is not None and state.phase in (Phase.PENDING, Phase.INACTIVE):
            jobs.stop_job(self.store, job)
            jobs.clear_patch_when_stopped(self.store, job)
        elif state is not None and state.phase == Phase.ADMITTED and job.spec.suspend:
            self._start(state)  # admitted but never started (a crash between the two writes): start it

    # ------------------------------------------------------------ reading the store into the core

    def _sync_config(self, now: float, changed: bool) -> list[Eviction]:
        if not changed:
            return []
        objects = {rt: self.store.list(rt).items for rt in _CONFIG_TYPES}
        # uid + generation: a spec change reconfigures the core, a status write (ours) does not
        version = tuple(
            f"{rt.plural}/{o['metadata']['name']}@{o['metadata'].get('uid')}/{o['metadata'].get('generation')}"
            for rt, items in objects.items()
            for o in items
        )
        if version == self._config_version:
            return []
        self._config_version = version
        evictions = self.core.configure(
            [cluster_queue_spec(o) for o in objects[catalog.CLUSTER_QUEUES]],
            [cohort_spec(o) for o in objects[catalog.COHORTS]],
            [flavor_spec(o) for o in objects[catalog.RESOURCE_FLAVORS]],
            now,
        )
        self._touched.update(self.core.mark_restarted(now))
        return evictions

    def _read_queues(self, now: float) -> None:
        """LocalQueues and Namespaces, before the Workloads: a stopped LocalQueue's workloads are held."""
        self._queues = read_queues(self.store)
        self._touched.update(localqueues.set_stop_policies(self.core, self._queues.stop_policies, now))

    def _sync_workloads(self, now: float, batch: Batch) -> list[Eviction]:
        """Read the changed Workloads into the core; returns the jobs to stop (a deactivated Workload's, a
        draining LocalQueue's)."""
        if batch.everything:
            self._read_queues(now)
        found, gone = changed_workloads(self.store, batch, self.core.workloads)
        finalize, evictions = [], []
        queues = self._queues
        for obj in found.values():
            workload = kw.Workload.model_validate(obj)
            namespace = workload.metadata.namespace or ""
            cq = queues.cluster_queues.get((namespace, workload.spec.queue_name or ""), "")
            request = workload_request(workload, cq, queues.namespace_labels.get(namespace, {}))
            fate, owner = self._fate(workload)
            if (ref := controller_trainjob(workload)) is not None:
                self._owners[request.key] = ref.name
            if fate.fate != Fate.DELETING:
                self._sync_one(workload, request, owner, now)
                evictions += self._sync_active(workload, request.key, now)
            else:  # a Workload being deleted leaves the core below: its quota and position are freed now
                gone.append(request.key)
                if owner is not None and fate.remove_finalizer:
                    jobs.stop_job(self.store, owner)
            if fate.fate == Fate.ORPHANED:
                self.core.finish_workload(request.key, False, OWNER_NOT_FOUND_MESSAGE, now, OWNER_NOT_FOUND)
                self._touched.add(request.key)
            if fate.remove_finalizer:
                finalize.append(workload)
        for key in gone:
            if (state := self.core.workloads.get(key)) is not None:
                self._moved_cqs.add(state.cluster_queue)
            self.core.delete_workload(key, now)
            self._written.pop(key, None)
            self._owners.pop(key, None)
        if batch.everything:  # every Workload read back (after a restart too): drain and restart marks
            restarted, drained = localqueues.settle(self.core, self._queues.stop_policies, now)
            self._touched.update(restarted)
            evictions += drained
        self._write_statuses()  # an orphan says Finished before its finalizer goes, as upstream
        for workload in finalize:
            self._remove_finalizer(workload)
        return evictions

    def _sync_active(self, workload: kw.Workload, key: str, now: float) -> list[Eviction]:
        """Follow ``spec.active`` (default true)."""
        changed, eviction = self.core.set_active(key, workload.spec.active is not False, now)
        if changed:
            self._touched.add(key)
        return [eviction] if eviction is not None else []

    def _fate(self, workload: kw.Workload) -> tuple[Verdict, t.TrainJob | None]:
        """The Workload's fate and its owner TrainJob; the owner is read only when something needs it."""
        if is_finished(workload) and not workload.metadata.deletion_timestamp:
            return verdict(workload, None), None
        owner = owner_of(self.store, workload)
        return verdict(workload, owner.metadata.uid if owner is not None else None), owner

    def _remove_finalizer(self, workload: kw.Workload) -> None:
        namespace, name = workload.metadata.namespace or "", workload.metadata.name or ""
        patch_read(self.store, catalog.WORKLOADS, namespace, name, without_finalizer(RESOURCE_IN_USE_FINALIZER),
                   uid=workload.metadata.uid or "")  # fmt: skip

    def _patch_workload(self, key: str, body: dict[str, Any]) -> None:
        namespace, name = key.split("/", 1)
        with contextlib.suppress(NotFound):
            self.store.patch(catalog.WORKLOADS, namespace, name, body, MERGE_PATCH)

    def _sync_one(self, workload: kw.Workload, request: Any, owner: t.TrainJob | None, now: float) -> None:
        state = self.core.workloads.get(request.key)
        if (
            state is not None
            and (left := localqueues.follow_local_queue(self.core, request, now)) is not None
        ):
            self._moved_cqs.add(left)  # its LocalQueue was deleted or created
            self._touched.add(request.key)
        if state is None:
            if is_finished(workload):
                return
            admitted = workload.status.admission if workload.status else None
            if admitted is not None and condition_true(workload, kw.WorkloadConditionType.QUOTA_RESERVED):
                reserved = reserved_at(workload) or now
                ready = condition_true(workload, kw.WorkloadConditionType.PODS_READY)
                self.core.restore_admitted(request, assignment_from_admission(admitted), reserved, ready,
                                           history(workload))  # fmt: skip
            else:
                self.core.add_workload(request, now, history(workload))
            self._touched.add(request.key)
        if owner is not None:
            self._sync_job_state(owner, request.key, now)

    def _sync_job_state(self, job: t.TrainJob, key: str, now: float) -> None:
        state = self.core.workloads.get(key)
        if state is None or state.phase == Phase.FINISHED:
            return
        finished, succeeded, message = jobs.job_finished(job)
        if finished:
            self.core.finish_workload(key, succeeded, message or "Job finished", now)
            if self.metrics is not None:
                self.metrics.observe_finished(state.cluster_queue)
            self._touched.add(key)
        elif state.phase == Phase.ADMITTED:
            before = state.pods_ready
            self.core.set_pods_ready(key, jobs.pods_ready(self.store, job), now)
            if before != state.pods_ready:
                self._touched.add(key)

    # ------------------------------------------------------------ the admission pass

    def _schedule(self) -> Result:
        now = self.clock.now()
        self._stamp = rfc3339(now)
        batch = self.changes.take()
        evictions = [*self._sync_config(now, batch.config)]
        evictions += self._sync_workloads(now, batch)
        evictions += self.core.check_pods_ready(now)
        if self.metrics is not None:  # the cycles' own evictions are observed with the cycle
            for eviction in evictions:
                self.metrics.observe_eviction(self.core, eviction)
        self._evict(evictions)
        progressed = False
        for _ in range(MAX_CYCLES_PER_PASS):
            started = time.monotonic()
            result = run_cycle(self.core, now)
            if self.metrics is not None:
                self.metrics.observe_cycle(self.core, result, now, time.monotonic() - started)
            self._evict(result.evictions)
            self._apply(result)
            progressed = result.progressed
            if not progressed:
                break
        self._write_statuses()
        cqs, self._moved_cqs = (None if batch.everything or batch.config else self._moved_cqs), set()
        if cqs is None or cqs:  # an idle pass (nothing changed) has nothing to publish
            self._snapshot_pending(cqs)
            self.queue_status.write(self.core, now, cqs)
        # stopped at the cycle cap with heads still moving: come back at once, not at the next timer
        wakeup = now if progressed else self.core.next_wakeup()
        return Result(requeue_after=max(0.05, wakeup - now) if wakeup is not None else None)

    def _snapshot_pending(self, cqs: set[str] | None) -> None:
        """Refresh the pending lists and positions of ``cqs`` (all when None) and tell the TrainJobs whose
        "N workloads ahead" is stale."""
        moved = self.snapshot.refresh(self.core, cqs, self._owners)
        if self.on_position_changed is not None:
            for key in moved:
                self.on_position_changed(key)

    def position(self, namespace: str, workload: str) -> int | None:
        """``controllers.pending.QueuePositions``: workloads ahead of this one in its LocalQueue."""
        return self.snapshot.position(namespace, workload)

    def pending_in_cluster_queue(self, cq: str) -> list[PendingWorkload] | None:
        """The visibility API's view of ``cq`` as of the last pass; None for an unknown ClusterQueue."""
        return self.snapshot.pending.get(cq)

    def pending_in_local_queue(self, namespace: str, local_queue: str) -> list[PendingWorkload]:
        return self.snapshot.in_local_queue(namespace, local_queue)

    def _evict(self, evictions: list[Eviction]) -> None:
        """Write the victims' Workload status (``Evicted``), then suspend their jobs, before any later
        admission is started: as upstream, where a preemptor is admitted only after its victims' eviction
        is written, no reader ever sees the preemptor admitted while a victim still looks admitted."""
        self._touched.update(e.key for e in evictions)
        for eviction in evictions:
            if eviction.set_inactive:  # persisted first: after a crash the Workload is still inactive
                self._patch_workload(eviction.key, {"spec": {"active": False}})
        self._write_statuses()
        for eviction in evictions:
            self._stop(eviction.key)

    def _apply(self, result: CycleResult) -> None:
        self._touched.update(w.key for w in (*result.admitted, *result.pending))
        self._write_statuses()  # a Workload says Admitted before its job starts, as upstream
        for workload in result.admitted:
            self._start(workload)

    def _start(self, state: WorkloadState) -> None:
        found = workload_and_job(self.store, state.key)
        if found is None or state.assignment is None:
            return
        workload, job = found
        admissions = jobs.pod_set_admissions(workload, state.assignment.pod_sets, self.core.flavors)
        jobs.start_job(self.store, job, admissions)

    def _stop(self, key: str) -> None:
        found = workload_and_job(self.store, key)
        if found is not None:
            jobs.stop_job(self.store, found[1])

    def _write_statuses(self) -> None:
        for key in sorted(self._touched):
            state = self.core.workloads.get(key)
            if state is None:
                continue
            self._moved_cqs.add(state.cluster_queue)
            status = workload_status(state)
            if self._written.get(key) == status:
                continue
            namespace, name = key.split("/", 1)
            body = owned_conditions(kw.WorkloadConditionType, status)  # others' conditions stay as stored
            written = patch_read(self.store, catalog.WORKLOADS, namespace, name, body, subresource="status")
            if written is not None:
                self._written[key] = status
                self.events.written(key, written, state.cluster_queue, self._stamp, state.pending_source)
        self._touched.clear()


@dataclass
class KueueController:
    """What the lead wires in: ``register(manager)`` adds the controller and its informers."""

    reconciler: KueueReconciler
    controller: Controller

    def register(self, manager: Manager) -> None:
        changes = self.reconciler.changes
        manager.add(self.controller)
        self.controller.watch(manager.informer(catalog.TRAINJOBS), own_key)
        self.controller.watch(manager.informer(catalog.TRAINJOBS), changes.owner)
        self.controller.watch(manager.informer(catalog.WORKLOADS), controller_owner(t.TRAINJOB_KIND))
        self.controller.watch(manager.informer(catalog.WORKLOADS), changes.workload)
        self.controller.watch(manager.informer(catalog.JOBSETS), changes.owner)
        for rt in _CONFIG_TYPES:
            self.controller.watch(manager.informer(rt), changes.configuration)
        for rt in (catalog.LOCAL_QUEUES, catalog.NAMESPACES):
            self.controller.watch(manager.informer(rt), changes.everything)
        changes.watched = True


def build_kueue_controller(
    store: Store, clock: Clock, metrics_registry: CollectorRegistry | None = None,
    config: KueueConfig | None = None,
) -> KueueController:  # fmt: skip
    """The embedded Kueue; ``metrics_registry`` None disables metrics. Register it on a ``Manager``."""
    metrics = KueueMetrics(metrics_registry) if metrics_registry is not None else None
    reconciler = KueueReconciler(store, clock, metrics, config)
    controller = Controller(reconciler, clock, workers=1)
    reconciler.controller = controller
    return KueueController(reconciler, controller)
