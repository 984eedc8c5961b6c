"""The binding cycle: bindings written off the scheduling thread, one write each.

kube-scheduler assumes a pod in its cache and binds it in a goroutine, so the next pod is scheduled while
the last is written (``schedule_one.go``). Here ``BindingWorker`` takes bindings from the loop and POSTs a
``v1/Binding`` per pod (``pods/binding``: ``spec.nodeName`` and ``PodScheduled=True`` in one store
transaction) from a few threads; ``on_done`` reports each outcome so the loop confirms or forgets the
assumption. ``binder_for`` picks the one-write path the store offers: the store's own transaction
(in process), ``bind_pod`` of an API client, or, for any other ``Store``, the two writes of old.
"""

from __future__ import annotations

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


class BindingWorker:
    """``workers`` threads writing bindings; ``submit`` never blocks, ``flush`` waits for all submitted."""

    def __init__(self, bind: BindFn, on_done: Outcome, *, workers: int = 4) -> None:
        self._bind, self._on_done, self._workers = bind, on_done, workers
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
            self._one(request)

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
            request = self._queue.get()
            try:
                if request is None:
                    return
                self._one(request)
            finally:
                self._queue.task_done()

    def _one(self, request: BindRequest) -> None:
        namespace, _, name = request.pod_key.partition("/")
        error: Exception | None = None
        try:
            self._bind(namespace, name, pod_binding(namespace, name, request.node, request.uid))
        except (ApiError, GangplaneError, OSError) as err:
            _log.debug("binding %s to %s failed: %s", request.pod_key, request.node, err)
            error = err
        self._on_done(request, error)


__all__ = ["BindFn", "BindRequest", "BindingWorker", "binder_for"]
