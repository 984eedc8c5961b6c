"""The scheduler shell: informers in, passes over the embedded schedulers, writes out.

``SchedulerLoop`` is built as kube-scheduler is: informer events feed the scheduler cache (``cache.py``:
parsed once per resourceVersion, snapshots brought up to date by generation) and the scheduling queue
(``queue.py``: active / back-off / unschedulable, requeued by the hints of ``intake.py``); a pass (the pure
``passes.run_pass``) runs only when something is active, over what is active; each binding is assumed in the
cache and written by the binding worker (``binder.py``: one ``pods/binding`` write each) while the next pass
runs; the rest of a result (evictions, status writes, "why pending" conditions) is written by ``writes.py``.
``plan_pass`` and the condition helpers are re-exported here for the callers that know them by this module.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any

from gangplane.client.informer import Informer
from gangplane.clock import Clock
from gangplane.schedulers.base import (
    Changes,
    CycleResult,
    PendingReason,
    Queueing,
    Scheduler,
    Status,
    StatusWrite,
)
from gangplane.schedulers.binder import BindFn, BindingWorker, BindRequest, binder_for
from gangplane.schedulers.cache import SchedulerCache
from gangplane.schedulers.core.gang import Binding
from gangplane.schedulers.core.objects import pod_key
from gangplane.schedulers.core.snapshot import Snapshot
from gangplane.schedulers.intake import Intake
from gangplane.schedulers.passes import (
    INVALID_POD,
    SCHEDULER_ERROR,
    PassResult,
    build_snapshot,
    group_key,
    plan_pass,
    run_pass,
)
from gangplane.schedulers.queue import SchedulingQueue
from gangplane.schedulers.writes import (
    POD_SCHEDULED,
    ResultWriter,
    scheduled_condition,
    unschedulable_condition,
    with_condition,
)
from gangplane.store.base import EventType, Object, ResourceType, Store
from gangplane.store.catalog import NODES, PODS
from gangplane.store.groups import group_writes_of

_log = logging.getLogger(__name__)


class _ObjectLists:
    """Informer contents in (namespace, name) order, re-sorted only after a change of that type."""

    def __init__(self, informers: Mapping[ResourceType, Informer]) -> None:
        self._informers = informers
        self._versions: dict[ResourceType, int] = dict.fromkeys(informers, 0)
        self._sorted: dict[ResourceType, tuple[int, list[Object]]] = {}

    def changed(self, rt: ResourceType) -> None:
        self._versions[rt] += 1

    def get(self, rt: ResourceType) -> list[Object]:
        version = self._versions.get(rt, 0)
        kept = self._sorted.get(rt)
        if kept is None or kept[0] != version:
            items = sorted(self._informers[rt].list(), key=pod_key) if rt in self._informers else []
            kept = self._sorted[rt] = (version, items)
        return kept[1]


def queueing_of(scheduler: Scheduler) -> Queueing:
    """How a scheduler is queued: per gang or pod (``queueing = Queueing.PER_UNIT``, the default scheduler),
    else one session over every pending pod of it (Volcano, KAI), as upstream runs them."""
    mode = getattr(scheduler, "queueing", Queueing.SESSION)
    return mode if isinstance(mode, Queueing) else Queueing.SESSION


class SchedulerLoop:
    """Runs ``schedulers`` (keyed by ``schedulerName``, in run order) against a store, event-driven.

    Informer events feed the ``cache`` and the ``queue`` (``intake``); a pass takes the active units, brings
    the kept snapshot up to date, runs the cycles, assumes each binding in the cache and hands it to the
    binding worker, then writes the rest. ``start`` runs passes on a thread that sleeps until an event or
    the next back-off expiry (no periodic pass); ``run_once`` runs one pass and waits for its bindings
    (tests, tools). ``period`` bounds the sleep only while some back-off or leftover timer is pending.
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        schedulers: Mapping[str, Scheduler],
        *,
        period: float = 1.0,
        binder: BindFn | None = None,
        bind_workers: int | None = None,
    ) -> None:
        self.store, self.clock, self.schedulers, self.period = store, clock, dict(schedulers), period
        types = [NODES, PODS, *(rt for s in self.schedulers.values() for rt in s.watches)]
        self.informers: dict[ResourceType, Informer] = {
            rt: Informer(store, rt) for rt in dict.fromkeys(types)
        }
        self.cache = SchedulerCache(partial(group_key, self.schedulers))
        self.queue = SchedulingQueue({n: queueing_of(s) for n, s in self.schedulers.items()})
        self.intake = Intake(
            self.cache, self.queue, self.schedulers, partial(self._changes, groups=frozenset())
        )
        self.writer = ResultWriter(store, clock, self.informers)
        self.writer.lost = self._status_lost
        group = group_writes_of(store) if binder is None else None
        # in process one worker takes every binding queued and commits them together; a binding over the
        # network waits on a round trip, so a few workers keep several in flight (kube-scheduler: one each)
        workers = bind_workers or (1 if group is not None else 4)
        self.binder = BindingWorker(
            binder or binder_for(store, clock),
            self._bound,
            workers=workers,
            group=group,
            written=self._scheduled,
        )
        self._lists = _ObjectLists(self.informers)
        self._lock = threading.RLock()
        self._snapshot: Snapshot | None = None
        self._changed = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._writes: ThreadPoolExecutor | None = None  # one thread: a pass's writes land in order
        self._written: list[Future[None]] = []
        self.passes = 0
        self._per_unit = [n for n, s in self.schedulers.items() if queueing_of(s) is Queueing.PER_UNIT]
        for name in self._per_unit:  # a group's members by key, for ``Changes.members``
            self.informers[PODS].add_index(_group_index(name), partial(_group_of, self.schedulers[name]))
        for rt, informer in self.informers.items():
            informer.add_handler(partial(self._on_event, rt))

    def _on_event(self, rt: ResourceType, kind: EventType, obj: Object, old: Object | None) -> None:
        with self._lock:
            self._lists.changed(rt)
            if rt == NODES:
                self.intake.on_node(kind, obj, old)
            elif rt == PODS:
                self.intake.on_pod(kind, obj, old)
            if rt != NODES:
                self.intake.on_object(rt, kind, obj, old)
        self._changed.set()

    # -- lifecycle ------------------------------------------------------------------------------------------
    def start_informers(self, timeout: float = 30.0) -> None:
        for informer in self.informers.values():
            informer.start()
        for informer in self.informers.values():
            if not informer.wait_synced(timeout):
                raise TimeoutError(f"informer for {informer.rt.plural} did not sync within {timeout}s")

    def start(self, timeout: float = 30.0) -> None:
        self.start_informers(timeout)
        self.binder.start()
        self._writes = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scheduler-writes")
        self._thread = threading.Thread(target=self._run, name="scheduler-loop", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._changed.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.binder.stop()
        if self._writes is not None:
            self._writes.shutdown(wait=True)
        for informer in self.informers.values():
            informer.stop()

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._changed.wait(self._sleep())
            self._changed.clear()
            if self._stopped.is_set():
                return
            try:
                self.schedule()
            except Exception:  # a failed pass must not stop scheduling; the queue keeps what is pending
                _log.exception("scheduler pass failed")

    def _sleep(self) -> float | None:
        """Until the next timer (back-off expiry, leftover flush), at most ``period``; forever when idle."""
        with self._lock:
            if self.queue.has_work():
                return 0.0
            due = self.queue.next_due()
        return None if due is None else min(max(due - self.clock.now(), 0.0), self.period)

    # -- one pass -------------------------------------------------------------------------------------------
    def run_once(self) -> PassResult:
        """One pass now, all its writes done before it returns."""
        result = self.schedule()
        self.binder.flush()
        for written in self._written:
            written.result()
        self._written.clear()
        return result

    def schedule(self) -> PassResult:
        """Take the active units, run their schedulers over the kept snapshot, hand bindings to the binder
        and write everything else. Costs what is pending and what changed, not what is bound."""
        now = self.clock.now()
        with self._lock:
            batch = self.queue.pop(now)
            broken = self.intake.take_broken()
            if not batch and not broken:
                return PassResult()
            snapshot = self._snapshot = self.cache.update_snapshot(self._snapshot)
        self.passes += 1
        running = {n: s for n, s in self.schedulers.items() if n in batch.pending}
        changes = {n: self._changes(n, batch.groups.get(n, frozenset())) for n in self._per_unit}
        token = snapshot.checkpoint()
        planned = run_pass(now, snapshot, batch.pending, _LazyObjects(self._lists), running, changes)
        snapshot.rollback(token)  # the cache, not the pass, decides what the kept snapshot counts
        with self._lock:
            requests = [self._assume(b) for _, r in planned.results for b in r.bindings]
            for name, result in planned.results:
                self.queue.done(batch, name, result, now)
        planned.results.extend(_broken_results(broken))
        for request in requests:
            if request is not None:
                self.binder.submit(request)
        for name, result in planned.results:
            self._write(result, name)
        return planned

    def _changes(self, name: str, groups: frozenset[str]) -> Changes:
        return Changes(groups, partial(self.informers[PODS].by_index, _group_index(name)), self._get)

    def _get(self, rt: ResourceType, key: str) -> Object | None:
        informer = self.informers.get(rt)
        namespace, _, name = key.partition("/")
        return informer.get(namespace, name) if informer is not None else None

    def _status_lost(self, scheduler: str, write: StatusWrite) -> None:
        """A status write lost a race (writer thread): its group is decided again in the next pass."""
        if scheduler in self._per_unit:
            with self._lock:
                self.queue.mark_dirty(scheduler, f"{write.namespace or 'default'}/{write.name}")
            self._changed.set()

    def _write(self, result: CycleResult, scheduler: str) -> None:
        """Evictions, status writes and conditions: on the writer thread when started (the next pass does
        not wait for them), else here."""
        if self._writes is None:
            self.writer.write(result, scheduler)
            return
        self._written = [f for f in self._written if not f.done()]
        self._written.append(self._writes.submit(self._guarded_write, result, scheduler))

    def _guarded_write(self, result: CycleResult, scheduler: str) -> None:
        try:
            self.writer.write(result, scheduler)
        except Exception:  # a failed write is decided again by a later pass; the writer must go on
            _log.exception("scheduler writes failed")

    def _assume(self, binding: Binding) -> BindRequest | None:
        try:
            info = self.cache.assume(binding.pod_key, binding.node)
        except (KeyError, ValueError) as err:  # deleted or changed while the pass ran: decided again
            _log.debug("binding of %s dropped: %s", binding.pod_key, err)
            return None
        self.queue.remove(binding.pod_key)
        return BindRequest(binding.pod_key, binding.node, info.uid)

    def _scheduled(self, request: BindRequest) -> None:
        """kube-scheduler's ``Scheduled`` Event once the binding is written: on a binder thread, off the
        scheduling cycle (in process, in the binding's own transaction)."""
        self.writer.scheduled(request.pod_key, request.node, request.uid)

    def _bound(self, request: BindRequest, error: Exception | None) -> None:
        """The binder's report: success is confirmed by the informer; a failure forgets the assumption and
        requeues the pod (with back-off) and every waiting pod (the assumed room is free again)."""
        if error is None:
            return
        with self._lock:
            self.cache.forget(request.pod_key)
            entry = self.cache.pods.get(request.pod_key)
            if entry is not None and entry.pending and entry.info is not None:
                self.queue.add(entry.info)
                self.queue.backoff(entry.info.key, self.clock.now())
            self.queue.move()
        self._changed.set()


def _group_index(scheduler: str) -> str:
    return f"group/{scheduler}"


def _group_of(scheduler: Scheduler, pod: Object) -> list[str]:
    group = scheduler.group_of(pod)
    return [group] if group is not None else []


def _broken_results(broken: Mapping[str, Mapping[str, str]]) -> list[tuple[str, CycleResult]]:
    """An ``Error`` reason for each pending pod whose spec does not convert (noted once per change)."""
    return [
        (name, CycleResult(pending=[_invalid(key, why) for key, why in keys.items()]))
        for name, keys in broken.items()
    ]


def _invalid(key: str, why: str) -> PendingReason:
    return PendingReason((key,), Status.ERROR, f"pod spec cannot be scheduled: {why}", INVALID_POD)


class _LazyObjects(Mapping[ResourceType, Sequence[Mapping[str, Any]]]):
    """Every informer's objects, listed (sorted) only when some cycle reads that type."""

    def __init__(self, lists: _ObjectLists) -> None:
        self._lists = lists

    def __getitem__(self, rt: ResourceType) -> Sequence[Mapping[str, Any]]:
        return self._lists.get(rt)

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(self._lists._informers)

    def __len__(self) -> int:
        return len(self._lists._informers)


__all__ = [
    "INVALID_POD",
    "POD_SCHEDULED",
    "SCHEDULER_ERROR",
    "PassResult",
    "SchedulerLoop",
    "build_snapshot",
    "plan_pass",
    "queueing_of",
    "run_pass",
    "scheduled_condition",
    "unschedulable_condition",
    "with_condition",
]
