"""The kubelet's events about a pod's containers (``pkg/kubelet/events``): reasons, messages, and which
restarts to report as ``BackOff`` (pure apart from the recorder they are written through), and the queue
(``EventSink``) that writes them off the pod workers."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Mapping
from typing import Any, Protocol

from gangplane.agent import pod_state as ps
from gangplane.client.events import EventRecorder
from gangplane.store.base import Object
from gangplane.store.groups import durable, group_writes_of

_log = logging.getLogger(__name__)


class Events(Protocol):
    def event(self, obj: Object, type_: str, reason: str, message: str, field_path: str = "") -> None: ...


def container_event(
    events: Events, pod: Mapping[str, Any], name: str, type_: str, reason: str, message: str
) -> None:
    """An event on the pod with the container as ``fieldPath`` (``spec.containers{main}``)."""
    spec = pod.get("spec") or {}
    inits = {str(c.get("name")) for c in spec.get("initContainers") or []}
    where = f"spec.initContainers{{{name}}}" if name in inits else f"spec.containers{{{name}}}"
    events.event({**pod, "apiVersion": "v1", "kind": "Pod"}, type_, reason, message, where)


def backoffs_to_report(
    spec: ps.Spec, run: ps.PodRun, reported: Mapping[str, int], now: float
) -> list[tuple[str, int]]:
    """(container, restart count) of each container now waiting out a back-off not yet reported."""
    out = []
    for name, record in run.containers.items():
        at = ps.restart_at(spec, run, record)
        if at is None or at <= now or record.backoff <= 0 or reported.get(name) == record.restart_count:
            continue
        out.append((name, record.restart_count))
    return out


def backoff_message(pod: Mapping[str, Any], name: str) -> str:
    meta = pod.get("metadata") or {}
    target = f"{meta.get('name')}_{meta.get('namespace')}({meta.get('uid')})"
    return f"Back-off restarting failed container {name} in pod {target}"


# client-go's ``maxQueuedEvents``: the broadcaster's queue, beyond which new events are dropped
# (``watch.NewLongQueueBroadcaster(maxQueuedEvents, watch.DropIfChannelFull)``, tools/record/event.go).
MAX_QUEUED = 1000
BATCH = 64  # events queued together that one transaction writes at most


class EventSink:
    """The kubelet's events leave its pod workers at once: client-go's broadcaster queues them and one
    goroutine writes them, so a slow Event write never delays a container start. Here one thread per agent
    writes them, in order; when ``MAX_QUEUED`` wait already, a new one is dropped (and logged) as there."""

    def __init__(self, recorder: EventRecorder, limit: int = MAX_QUEUED) -> None:
        self.recorder, self._limit = recorder, limit
        self._queue: deque[tuple[Object, str, str, str, str]] = deque()
        self._ready = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None  # started with the first event

    def event(self, obj: Object, type_: str, reason: str, message: str, field_path: str = "") -> None:
        with self._ready:
            if len(self._queue) >= self._limit or self._closed:
                why = "the agent stopped" if self._closed else f"{len(self._queue)} events queued"
                _log.warning("event %s for %s dropped: %s", reason, _name(obj), why)
                return
            self._queue.append((obj, type_, reason, message, field_path))
            self._ready.notify()
            if self._thread is None:
                self._thread = threading.Thread(target=self._write, name=f"events-{self.recorder.host}")
                self._thread.daemon = True
                self._thread.start()

    def close(self, timeout: float | None = None) -> None:
        """Write what is queued, then end the writer thread."""
        with self._ready:
            self._closed = True
            self._ready.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _write(self) -> None:
        while True:
            with self._ready:
                while not self._queue and not self._closed:
                    self._ready.wait()
                if not self._queue:
                    return
                batch = [self._queue.popleft() for _ in range(min(len(self._queue), BATCH))]
            self._record(batch)

    def _record(self, batch: list[tuple[Object, str, str, str, str]]) -> None:
        """The events in order; those queued together share one transaction in the in-process store (an
        Event is best effort, as client-go's: a failed transaction is logged, not retried)."""
        group = group_writes_of(self.recorder.store)
        if group is None:
            for item in batch:
                self.recorder.event(*item)
            return
        epoch = group.epoch
        try:
            with group.deferred():
                for item in batch:
                    self.recorder.event(*item)
        finally:  # what was buffered is in the store's cache already: made durable even if a step raised
            failure = durable(group, epoch)
        if failure is not None:
            _log.warning("events not recorded (%d of them): %s", len(batch), failure)


def _name(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")
