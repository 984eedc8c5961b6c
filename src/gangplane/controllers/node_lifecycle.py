"""The node lifecycle controller: a Node whose agent stopped heartbeating goes ``Unknown`` and is tainted
``node.kubernetes.io/unreachable`` (NoSchedule, NoExecute); a recovered one is untainted. The rules are
``node_health.py``; this is the shell: informer caches in; out, each only when something changes, one
status write, one taint write and, for a node not ready, a status write per pod still marked ready.

Upstream runs ``monitorNodeHealth`` over every node every 5 s (``--node-monitor-period``). Here a node is
reconciled when it or its Lease changes, and once more when its grace period would run out (the work
queue's timer), so a cluster of healthy nodes costs one timer per node and no periodic pass. Zone
disruption is counted as nodes change (``node_zones.py``); a change of a zone's mode looks at every node
again. A new NoExecute taint waits for its zone's rate limit (``node_eviction.py``: ``--node-eviction-rate``,
``--secondary-node-eviction-rate``): a node not yet in turn is looked at again when its turn should come, and
the nodes behind one that leaves the line at once.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from gangplane.client.controller import Controller, Manager, Result
from gangplane.client.events import EventRecorder
from gangplane.client.informer import Informer, Key
from gangplane.clock import Clock
from gangplane.controllers.node_eviction import EvictionRates, ZoneTainters
from gangplane.controllers.node_health import (
    NODE_MONITOR_GRACE_SECONDS,
    NODE_STARTUP_GRACE_SECONDS,
    READY,
    Health,
    adds_no_execute,
    condition,
    desired_taints,
    grace_left,
    mark_unknown,
    not_ready,
    observe,
    pod_not_ready,
)
from gangplane.controllers.node_zones import NoExecute, no_execute_mode, zone_of, zone_rate
from gangplane.controllers.podgc import NODE_INDEX, bound_node
from gangplane.errors import NotFound
from gangplane.store import catalog
from gangplane.store.base import EventType, ListOptions, Object, Store
from gangplane.store.graceful import NODE_LEASE_NAMESPACE

_log = logging.getLogger(__name__)


class NodeLifecycle:
    """Judges each node's health from its heartbeats and writes the conditions and taints that follow."""

    name = "node-lifecycle"

    def __init__(
        self,
        store: Store,
        clock: Clock,
        nodes: Informer,
        leases: Informer,
        *,
        grace: float = NODE_MONITOR_GRACE_SECONDS,
        startup_grace: float = NODE_STARTUP_GRACE_SECONDS,
        pods: Informer | None = None,
        events: EventRecorder | None = None,
        rates: EvictionRates | None = None,
    ) -> None:
        """``pods``: the pod informer with ``NODE_INDEX``, for ``MarkPodsNotReady`` (None: not done)."""
        self.store, self.clock, self._nodes, self._leases = store, clock, nodes, leases
        self.grace, self.startup_grace = grace, startup_grace
        self.rates = rates or EvictionRates()
        self._tainters = ZoneTainters(clock, self.rates)
        self.wake: Callable[[str], None] = lambda _: None  # queue a node's key again (set by the builder)
        self._pods, self._events = pods, events
        self._counted: dict[str, tuple[str, bool]] = {}  # node -> (zone, Ready is True) as counted
        self._zones: dict[str, tuple[int, int]] = {}  # zone -> (ready nodes, others)
        self._health: dict[str, Health] = {}  # node name -> what was last seen (upstream's nodeHealthMap)
        self._lock = threading.Lock()

    def reconcile(self, key: Key) -> Result:
        name = key[1]
        node = self._nodes.get("", name)
        if node is None:
            with self._lock:
                self._health.pop(name, None)
            self._forget(name)
            return Result()
        now = self.clock.now()
        lease = self._leases.get(NODE_LEASE_NAMESPACE, name)
        with self._lock:
            health = self._health[name] = observe(self._health.get(name), node, lease, now)
        left = grace_left(node, health, now, self.grace, self.startup_grace)
        if left <= 0:
            node = self._mark_unknown(node, now)
        if not_ready(node):
            self._mark_pods_not_ready(name, now)
        taints, turn = self._taints(node, now)
        if taints is not None:
            self.store.update(catalog.NODES, {**node, "spec": {**(node.get("spec") or {}), "taints": taints}})
        waits = [w for w in (left, turn) if w is not None and w > 0]
        return Result(requeue_after=min(waits) if waits else None)

    def _taints(self, node: Object, now: float) -> tuple[list[dict[str, Any]] | None, float | None]:
        """The taints to write, and the seconds until a NoExecute taint held back for the rate limit gets its
        turn (``markNodeForTainting``, ``doNoExecuteTaintingPass``)."""
        name, zone = str(node["metadata"]["name"]), zone_of(node)
        mode = self.mode(zone)
        taints = desired_taints(node, now, mode)
        if mode is NoExecute.FOLLOW and adds_no_execute(node, taints):
            turn = self._tainters.admit(zone, name)
            if turn != 0.0:
                return desired_taints(node, now, NoExecute.HOLD), turn
            return taints, None
        self._forget(name)
        return taints, None

    def _forget(self, name: str) -> None:
        for behind in self._tainters.forget(name):
            self.wake(behind)

    def _mark_unknown(self, node: Object, now: float) -> Object:
        marked = mark_unknown(node, now)
        if marked is None:
            return node
        _log.info(
            "node-lifecycle: node %s stopped posting status; marking it Unknown", node["metadata"]["name"]
        )
        written = self.store.update_status(catalog.NODES, marked)
        was_ready = (condition(node, READY) or {}).get("status") == "True"
        if self._events is not None and was_ready:  # RecordNodeStatusChange, once per change
            message = f"Node {node['metadata']['name']} status is now: NodeNotReady"
            self._events.event(written, "Normal", "NodeNotReady", message)
        return written

    def _mark_pods_not_ready(self, node: str, now: float) -> None:
        """``MarkPodsNotReady``: a lost write (Conflict) fails the pass, which is retried from the caches."""
        for pod in self._pods.by_index(NODE_INDEX, node) if self._pods is not None else ():
            updated = pod_not_ready(pod, now)
            if updated is None:
                continue
            with contextlib.suppress(NotFound):
                written = self.store.update_status(catalog.PODS, updated)
                if self._events is not None:
                    self._events.event(written, "Warning", "NodeNotReady", "Node is not ready")

    def mode(self, zone: str) -> NoExecute:
        with self._lock:
            return no_execute_mode(zone, self._zones, self.rates)

    def count(self, kind: EventType, node: Object) -> bool:
        """Keep the zones' counts of ready nodes (``handleDisruption``); True when that changed how some zone
        handles NoExecute taints, so every node must be looked at again."""
        name = str((node.get("metadata") or {}).get("name") or "")
        with self._lock:
            before = self._rates()
            self._uncount(name)
            if kind is not EventType.DELETED:
                ready = (condition(node, READY) or {}).get("status") == "True"
                zone = zone_of(node)
                self._counted[name] = (zone, ready)
                pair = self._zones.get(zone, (0, 0))
                self._zones[zone] = (pair[0] + 1, pair[1]) if ready else (pair[0], pair[1] + 1)
            after = self._rates()
        for zone, rate in after.items():
            if before.get(zone) != rate:
                self._tainters.swap(zone, rate)
        return before != after

    def _rates(self) -> dict[str, float]:
        """Every zone's tainting rate; 0 in every zone when all are fully disrupted (``handleDisruption``)."""
        return {zone: zone_rate(zone, self._zones, self.rates) for zone in self._zones}

    def _uncount(self, name: str) -> None:
        zone, ready = self._counted.pop(name, ("", None))
        if ready is None:
            return
        pair = self._zones[zone]
        pair = (pair[0] - 1, pair[1]) if ready else (pair[0], pair[1] - 1)
        if pair == (0, 0):
            del self._zones[zone]
        else:
            self._zones[zone] = pair

    def health(self, name: str) -> Health | None:
        with self._lock:
            return self._health.get(name)


def _node_key(obj: Object) -> Iterable[Key]:
    return (("", str((obj.get("metadata") or {}).get("name") or "")),)


def build_node_lifecycle(
    manager: Manager,
    *,
    grace: float = NODE_MONITOR_GRACE_SECONDS,
    startup_grace: float = NODE_STARTUP_GRACE_SECONDS,
    rates: EvictionRates | None = None,
) -> Controller:
    """The controller on ``manager``'s shared Node informer and Lease informer of ``kube-node-lease``; a
    Node and its Lease (same name) queue the same key."""
    nodes, pods = manager.informer(catalog.NODES), manager.informer(catalog.PODS)
    leases = manager.informer(catalog.LEASES, ListOptions(namespace=NODE_LEASE_NAMESPACE))
    pods.add_index(NODE_INDEX, bound_node)
    events = EventRecorder(manager.store, manager.clock, "node-controller")  # upstream's event source
    lifecycle = NodeLifecycle(
        manager.store,
        manager.clock,
        nodes,
        leases,
        grace=grace,
        startup_grace=startup_grace,
        pods=pods,
        events=events,
        rates=rates,
    )
    controller = manager.add(Controller(lifecycle, manager.clock))
    lifecycle.wake = lambda name: controller.enqueue(("", name))

    def count(kind: EventType, node: Object, _: Object | None) -> None:
        if lifecycle.count(kind, node):
            for each in nodes.list():
                controller.enqueue(("", str(each["metadata"]["name"])))

    nodes.add_handler(count)  # before the watch: a node's reconcile sees its zone counted
    controller.watch(nodes, _node_key)
    controller.watch(leases, _node_key)
    return controller


__all__ = ["NodeLifecycle", "build_node_lifecycle"]
