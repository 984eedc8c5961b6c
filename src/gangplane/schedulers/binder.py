"""The binding cycle: bindings written off the scheduling thread, one write each.

kube-scheduler assumes a pod in its cache and binds it in a goroutine, so the next pod is scheduled while
the last is written (``schedule_one.go``). Here ``BindingWorker`` takes bindings from the loop and POSTs a
``v1/Binding`` per pod (``pods/binding``: ``spec.nodeName`` and ``PodScheduled=True`` in one store
transaction) from a few threads; ``written`` follows each binding the store accepted (the loop's
``Scheduled`` Event), and ``on_done`` reports each outcome so the loop confirms or forgets the assumption.
``binder_for`` picks the one-write path the store offers: the store's own transaction (in process),
``bind_pod`` of an API client, or, for any other ``Store``, the two writes of old.

In process, one worker takes every binding queued when it comes for one (up to ``BATCH``) and makes them
durable together, as the API server's group commit does for concurrent requests: each binding is still its
own write with its own checks (a pod bound meanwhile is a 409 for that binding alone), but the bindings and
their Events share one journal transaction, where each binding and each Event had one of its own. So an
Event is kept exactly when its binding is. ``on_done`` hears of a binding only once it is durable: a
transaction that fails reports its bindings failed (the loop forgets and requeues them).
"""

from __future__ import annotations

import contextlib
import copy
import logging
import queue
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from gangplane.clock import Clock, rfc3339
from gangplane.errors import ApiError, Conflict, GangplaneError
from gangplane.store.base import Store
from gangplane.store.binding import bind_pod, pod_binding
from gangplane.store.catalog import PODS
from gangplane.store.core import ObjectStore
from gangplane.store.groups import GroupWrites, durable

_log = logging.getLogger(__name__)

BindFn = Callable[[str, str, Mapping[str, Any]], object]
"""``(namespace, name, v1 Binding)``: assign the pod, raising ``ApiError`` (409 when already bound)."""


def binder_for(store: Store, clock: Clock) -> BindFn:
    """The one-write binding of ``store`` (see module doc)."""
    if isinstance(store, ObjectStore):
        return partial(bind_pod, store)
    method = getattr(store, "bind_pod", None)
    if callable(method):
        return method  # type: ignore[no-any-return]
    return partial(_two_writes, store, clock)


def _two_writes(store: Store, clock: Clock, namespace: str, name: str, binding: Mapping[str, Any]) -> None:
    """For a ``Store`` without a binding transaction: ``nodeName``, then the condition."""
    pod = copy.deepcopy(store.get(PODS, namespace, name))
    if (pod.get("spec") or {}).get("nodeName"):
        raise Conflict(f"pod {name} is already assigned to node {pod['spec']['nodeName']!r}")
    pod["spec"]["nodeName"] = binding["target"]["name"]
    bound = store.update(PODS, pod)
    conditions = [
        c for c in (bound.get("status") or {}).get("conditions") or () if c.get("type") != "PodScheduled"
    ]
    stamp = rfc3339(clock.now())
    conditions.append(
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp}
    )
    bound.setdefault("status", {})["conditions"] = conditions
    store.update_status(PODS, bound)


@dataclass(frozen=True, slots=True)
class BindRequest:
    pod_key: str
    node: str
    uid: str = ""


Outcome = Callable[[BindRequest, Exception | None], None]
Written = Callable[[BindRequest], None]
BATCH = 64  # bindings one worker makes durable together at most


class BindingWorker:
    """``workers`` threads writing bindings; ``submit`` never blocks, ``flush`` waits for all submitted.
    With ``group`` (the in-process store) the bindings queued together share a transaction."""

    def __init__(
        self,
        bind: BindFn,
        on_done: Outcome,
        *,
        workers: int = 4,
        group: GroupWrites | None = None,
        written: Written | None = None,
    ) -> None:
        self._bind, self._on_done, self._workers, self._group = bind, on_done, workers, group
        self._written = written
        self._queue: queue.Queue[BindRequest | None] = queue.Queue()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for i in range(self._workers):
            thread = threading.Thread(target=self._run, name=f"scheduler-binder-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def submit(self, request: BindRequest) -> None:
        if self._threads:
            self._queue.put(request)
        else:  # not started (a synchronous pass): bind here
            self._write([request])

    def flush(self) -> None:
        if self._threads:
            self._queue.join()

    def stop(self) -> None:
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads.clear()

    def _run(self) -> None:
        while True:
            requests = self._taken()
            try:
                work = [r for r in requests if r is not None]
                self._write(work)
                if len(work) < len(requests):
                    return
            finally:
                for _ in requests:
                    self._queue.task_done()

    def _taken(self) -> list[BindRequest | None]:
        """The next request (waiting for it), with what else is queued behind it (up to ``BATCH``)."""
        taken = [self._queue.get()]
        with contextlib.suppress(queue.Empty):
            while len(taken) < BATCH and taken[-1] is not None:
                taken.append(self._queue.get_nowait())
        return taken

    def _write(self, requests: list[BindRequest]) -> None:
        if self._group is not None and requests:
            self._together(self._group, requests)
            return
        for request in requests:  # over the network: one request each
            self._on_done(request, self._attempt(request))

    def _attempt(self, request: BindRequest) -> Exception | None:
        """Write one binding (and what follows it); the error that refused it, if any."""
        namespace, _, name = request.pod_key.partition("/")
        try:
            self._bind(namespace, name, pod_binding(namespace, name, request.node, request.uid))
        except (ApiError, GangplaneError, OSError) as err:
            _log.debug("binding %s to %s failed: %s", request.pod_key, request.node, err)
            return err
        if self._written is not None:
            self._written(request)
        return None

    def _together(self, group: GroupWrites, requests: list[BindRequest]) -> None:
        """Each binding and its Event written, all made durable in one transaction, then each outcome
        reported. Borrowed writes: the bound pods they return are dropped unread, and the Bindings and
        Events they are given, built for them, are theirs to keep."""
        epoch = group.epoch
        try:
            with group.deferred(borrow=True):
                errors = [self._attempt(request) for request in requests]
        finally:  # what was buffered is in the store's cache already: durable even if a step raised
            failure = durable(group, epoch)
        if failure is not None:  # rolled back: none of these bindings (nor their Events) was kept
            _log.warning("a transaction of %d bindings failed: %s", len(requests), failure)
            errors = [error or failure for error in errors]
        for request, error in zip(requests, errors, strict=True):
            self._on_done(request, error)


__all__ = ["BATCH", "BindFn", "BindRequest", "BindingWorker", "binder_for"]
