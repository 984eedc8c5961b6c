"""Controllers: level-based reconcile loops fed by informers through a work queue, and the manager that runs
them (with shared informers and optional leader election).

Contract for a ``Reconciler``:
- ``reconcile(key)`` is called with a ``(namespace, name)`` key, never concurrently for the same key; it
  reads current state (informer caches or the store), makes the world match, and returns a ``Result``;
- it must be idempotent: it is called again after every relevant change, after ``requeue_after`` seconds
  (clock time), and with exponential back-off after it raises;
- it must not block on long waits: return ``Result(requeue_after=...)`` instead.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from gangplane.client.informer import Informer, Key, object_key
from gangplane.client.workqueue import WorkQueue
from gangplane.clock import Clock
from gangplane.errors import Conflict, NotFound
from gangplane.store.base import EventType, ListOptions, Object, ResourceType, Store

_log = logging.getLogger(__name__)

Mapper = Callable[[Object], Iterable[Key]]


@dataclass(frozen=True, slots=True)
class Result:
    requeue_after: float | None = None


class ReconcileError(Exception):
    """The steps of a pass that failed, raised after the pass did everything it still could (status, events);
    retried with back-off, and no later than ``requeue_after`` (a deadline still has to fire)."""

    def __init__(self, errors: list[Exception], requeue_after: float | None = None) -> None:
        super().__init__("; ".join(str(e) for e in errors))
        self.errors, self.requeue_after = errors, requeue_after


class Reconciler(Protocol):
    name: str

    def reconcile(self, key: Key) -> Result: ...


def own_key(obj: Object) -> Iterable[Key]:
    return (object_key(obj),)


def controller_owner(kind: str) -> Mapper:
    """Map an object to its controlling owner of ``kind`` (same namespace)."""

    def mapper(obj: Object) -> Iterable[Key]:
        meta = obj.get("metadata") or {}
        for ref in meta.get("ownerReferences") or ():
            if ref.get("kind") == kind and ref.get("controller"):
                yield str(meta.get("namespace") or ""), str(ref.get("name"))

    return mapper


class Controller:
    """Runs one reconciler over a de-duplicating queue with ``workers`` threads."""

    def __init__(self, reconciler: Reconciler, clock: Clock, *, workers: int = 1) -> None:
        self.reconciler, self.clock = reconciler, clock
        self.queue: WorkQueue[Key] = WorkQueue(clock)
        self._workers = workers
        self._threads: list[threading.Thread] = []

    @property
    def name(self) -> str:
        return self.reconciler.name

    def enqueue(self, key: Key) -> None:
        self.queue.add(key)

    def watch(self, informer: Informer, mapper: Mapper = own_key) -> None:
        """Enqueue the keys ``mapper`` yields for every event's new and old object."""

        def handler(_: EventType, obj: Object, old: Object | None) -> None:
            for source in (obj, old) if old is not None else (obj,):
                for key in mapper(source):
                    self.queue.add(key)

        informer.add_handler(handler)

    def process_one(self, timeout: float | None = 0) -> bool:
        """Reconcile the next ready key; False when none was ready within ``timeout``."""
        key = self.queue.get(timeout)
        if key is None:
            return False
        try:
            result = self.reconciler.reconcile(key)
        except Conflict:
            self.queue.add_rate_limited(key)  # someone wrote first: read again and retry soon
        except NotFound:
            self.queue.forget(key)  # deleted while we worked; its deletion event brings us back if needed
        except ReconcileError as err:
            _log.warning("%s: reconcile %s/%s failed: %s", self.name, *key, err)
            self.queue.add_rate_limited(key)
            if err.requeue_after is not None:
                self.queue.add_after(key, err.requeue_after)
        except Exception:
            _log.exception("%s: reconcile %s/%s failed", self.name, *key)
            self.queue.add_rate_limited(key)
        else:
            self.queue.forget(key)
            if result.requeue_after is not None:
                self.queue.add_after(key, result.requeue_after)
        finally:
            self.queue.done(key)
        return True

    def start(self) -> None:
        for i in range(self._workers):
            thread = threading.Thread(target=self._work, name=f"{self.name}-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _work(self) -> None:
        while not self.queue.shutting_down:
            self.process_one(timeout=None)

    def stop(self) -> None:
        self.queue.shutdown()
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads.clear()


class Manager:
    """Shared informers (one per type and filter) plus controllers, started together.

    With a leader elector, informers run on every replica but controllers start only while this replica leads
    (and stop when it loses the lease)."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store, self.clock = store, clock
        self._informers: dict[tuple[ResourceType, ListOptions], Informer] = {}
        self._controllers: list[Controller] = []
        self._started = False
        self._lock = threading.Lock()  # reconcilers' cache reads create informers from worker threads

    def informer(self, rt: ResourceType, options: ListOptions | None = None) -> Informer:
        """The shared informer of ``rt`` under ``options``, created on first use (and started at once when
        the manager runs already, as controller-runtime's cache does for a kind first read in a reconcile)."""
        key = (rt, options or ListOptions())
        with self._lock:
            informer = self._informers.get(key)
            if informer is None:
                informer = self._informers[key] = Informer(self.store, rt, key[1])
                if self._started:
                    informer.start()
        return informer

    def add(self, controller: Controller) -> Controller:
        self._controllers.append(controller)
        return controller

    def start_informers(self, timeout: float = 30.0) -> None:
        with self._lock:
            self._started = True
            informers = list(self._informers.values())
        for informer in informers:
            informer.start()
        for informer in informers:
            if not informer.wait_synced(timeout):
                raise TimeoutError(f"informer for {informer.rt.plural} did not sync within {timeout}s")

    def start_workers(self) -> None:
        for controller in self._controllers:
            controller.start()

    def start(self, timeout: float = 30.0) -> None:
        self.start_informers(timeout)
        self.start_workers()

    def stop_workers(self) -> None:
        for controller in self._controllers:
            controller.stop()

    def stop(self) -> None:
        self.stop_workers()
        for informer in list(self._informers.values()):
            informer.stop()

    def idle(self) -> bool:
        return all(c.queue.idle() for c in self._controllers)


__all__ = [
    "Controller",
    "Manager",
    "Mapper",
    "ReconcileError",
    "Reconciler",
    "Result",
    "controller_owner",
    "own_key",
]
