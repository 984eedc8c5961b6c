"""Taint-based eviction: a pod bound to a node with a NoExecute taint it does not tolerate is deleted, as
kube-controller-manager's taint-eviction-controller does (``pkg/controller/tainteviction/taint_eviction.go``).

- every NoExecute taint must be tolerated, else the pod goes at once; of the tolerations used (the first
  that tolerates each taint, ``GetMatchingTolerations``), the least ``tolerationSeconds`` decides when
  (``getMinTolerationTime``: <= 0 means at once); tolerations without ``tolerationSeconds`` tolerate forever;
- before the delete the pod gets ``DisruptionTarget=True``, reason ``DeletionByTaintManager``
  (``addConditionAndDeletePod``), and an Event ``TaintManagerEviction`` is recorded; the delete is an
  ordinary graceful one (``store/graceful.py``), with the pod's UID as a precondition.

Differences (docs/nodes.md): the toleration time counts from the taint's ``timeAdded`` (the node lifecycle
controller sets it), not from when this controller first saw the taint, so a restart does not restart the
count; a taint without ``timeAdded`` counts from when this controller first saw the node tainted. A pod
already terminating is left to its deletion. The timer is the work queue's ``add_after``: no CPU while
nothing is tainted.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gangplane.client.controller import Controller, Manager, Result, own_key
from gangplane.client.events import EventRecorder
from gangplane.client.informer import Informer, Key, object_key
from gangplane.clock import Clock, parse_rfc3339
from gangplane.controllers.podgc import NODE_INDEX, bound_node, terminating
from gangplane.errors import Conflict, NotFound
from gangplane.schedulers.core.objects import NO_EXECUTE, Taint, Toleration
from gangplane.schedulers.writes import with_condition
from gangplane.store import catalog
from gangplane.store.base import EventType, Object, Store
from gangplane.store.graceful import node_of

_log = logging.getLogger(__name__)

EVICTION_CONDITION: dict[str, Any] = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "DeletionByTaintManager",
    "message": "Taint manager: deleting due to NoExecute taint",
}


def no_execute_taints(node: Object | None) -> list[dict[str, Any]]:
    return [t for t in ((node or {}).get("spec") or {}).get("taints") or () if t.get("effect") == NO_EXECUTE]


def _toleration(raw: Mapping[str, Any]) -> Toleration:
    return Toleration(
        str(raw.get("key") or ""), str(raw.get("operator") or "Equal"), str(raw.get("value") or ""),
        str(raw.get("effect") or ""),
    )  # fmt: skip


def _added(taint: Mapping[str, Any], fallback: float) -> float:
    stamp = taint.get("timeAdded")
    try:
        return parse_rfc3339(stamp) if isinstance(stamp, str) else fallback
    except ValueError:
        return fallback


def eviction_time(pod: Object, taints: Sequence[Mapping[str, Any]], fallback: float) -> float | None:
    """When ``pod`` must go because of ``taints`` (its node's NoExecute taints), by the clock; None: never.
    ``fallback`` stands for the ``timeAdded`` a taint lacks."""
    if not taints:
        return None
    tolerations = (pod.get("spec") or {}).get("tolerations") or ()
    deadlines: list[float] = []
    for raw in taints:
        taint = Taint(str(raw.get("key") or ""), str(raw.get("value") or ""), NO_EXECUTE)
        used = next((t for t in tolerations if _toleration(t).tolerates(taint)), None)
        if used is None:
            return float("-inf")  # not tolerated: at once
        seconds = used.get("tolerationSeconds")
        if isinstance(seconds, int) and not isinstance(seconds, bool):
            deadlines.append(_added(raw, fallback) + max(0, seconds))
    return min(deadlines, default=None)


class TaintEviction:
    """Deletes the pods whose node's NoExecute taints they no longer tolerate (module docstring)."""

    name = "taint-eviction-controller"

    def __init__(
        self, store: Store, clock: Clock, pods: Informer, nodes: Informer, events: EventRecorder | None = None
    ) -> None:
        self.store, self.clock, self._pods, self._nodes = store, clock, pods, nodes
        self._events = events
        self._tainted_since: dict[str, float] = {}  # node -> when first seen with NoExecute taints
        self._lock = threading.Lock()

    def reconcile(self, key: Key) -> Result:
        pod = self._pods.get(*key)
        if pod is None or terminating(pod) or not node_of(pod):
            return Result()
        node = node_of(pod)
        taints = no_execute_taints(self._nodes.get("", node))
        due = eviction_time(pod, taints, self._since(node, bool(taints)))
        if due is None:
            return Result()
        wait = due - self.clock.now()
        if wait > 0:
            return Result(requeue_after=wait)
        self._evict(pod)
        return Result()

    def _since(self, node: str, tainted: bool) -> float:
        with self._lock:
            if not tainted:
                self._tainted_since.pop(node, None)
                return self.clock.now()
            return self._tainted_since.setdefault(node, self.clock.now())

    def _evict(self, pod: Object) -> None:
        """``addConditionAndDeletePod``: a lost status write (Conflict) is retried from a fresh read."""
        meta = pod["metadata"]
        _log.info("taint-eviction-controller: deleting pod %s/%s", meta["namespace"], meta["name"])
        if self._events is not None:
            message = f"Marking for deletion Pod {meta['namespace']}/{meta['name']}"
            self._events.event(pod, "Normal", "TaintManagerEviction", message)
        marked = with_condition(pod, EVICTION_CONDITION, self.clock.now())
        if marked is not None:
            self.store.update_status(catalog.PODS, marked)
        with contextlib.suppress(NotFound, Conflict):  # gone already, or re-created under the same name
            self.store.delete(
                catalog.PODS, meta["namespace"], meta["name"], preconditions={"uid": meta["uid"]}
            )


def _taints_changed(kind: EventType, node: Object, old: Object | None) -> bool:
    return kind is not EventType.MODIFIED or no_execute_taints(node) != no_execute_taints(old)


def build_taint_eviction(manager: Manager) -> Controller:
    """The controller on ``manager``'s shared pod and Node informers: a Node whose NoExecute taints change
    queues its pods; a pod is queued when it appears or changes while its node has NoExecute taints."""
    pods, nodes = manager.informer(catalog.PODS), manager.informer(catalog.NODES)
    pods.add_index(NODE_INDEX, bound_node)
    events = EventRecorder(manager.store, manager.clock, TaintEviction.name)
    eviction = TaintEviction(manager.store, manager.clock, pods, nodes, events)
    controller = manager.add(Controller(eviction, manager.clock))

    def on_node(kind: EventType, node: Object, old: Object | None) -> None:
        if _taints_changed(kind, node, old):
            name = str((node.get("metadata") or {}).get("name") or "")
            for pod in pods.by_index(NODE_INDEX, name):
                controller.enqueue(object_key(pod))

    def on_tainted_node(pod: Object) -> Iterable[Key]:
        return own_key(pod) if no_execute_taints(nodes.get("", node_of(pod))) else ()

    nodes.add_handler(on_node)
    controller.watch(pods, on_tainted_node)
    return controller


__all__ = [
    "EVICTION_CONDITION",
    "TaintEviction",
    "build_taint_eviction",
    "eviction_time",
    "no_execute_taints",
]
