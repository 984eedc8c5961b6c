"""The pod garbage collector's part the embedded cluster needs: pods nothing else will finish.

Upstream PodGC (``pkg/controller/podgc/gc_controller.go``) force-deletes the pods of nodes that no longer
exist (``gcOrphaned``), terminating pods that were never scheduled (``gcUnscheduledTerminating``) and
terminating pods on an out-of-service node (``gcTerminating``). Before each delete it marks a pod that is not
yet ``Succeeded``/``Failed`` as ``Failed`` (``markFailedAndDeletePodWithCondition``); an orphaned pod also gets
``DisruptionTarget=True``, reason ``DeletionByPodGC``, message ``PodGC: node no longer exists``, so a Job's
``podFailurePolicy`` (``onPodConditions``) can tell it from a failure of its own. The delete has grace 0.

Here, as upstream:
- orphaned: a pod bound to a Node missing from the Node informer for the quarantine (40 s) and then missing
  from the store too (upstream's GET past the informer) is failed with that condition and deleted;
- unscheduled terminating: a terminating pod with no ``nodeName`` is failed and deleted at once.
The stand-in for ``gcTerminating``: a pod deleted gracefully (``store/graceful.py``) stays until its node
agent, its processes stopped, deletes it with grace 0. If that agent went away (its process crashed) nothing
would; upstream the node lifecycle marks the node not ready and an admin's ``out-of-service`` taint lets PodGC
finish it. Here the test is the node's Lease in ``kube-node-lease``: a terminating pod whose node has no
Lease, or one not renewed within its ``leaseDurationSeconds`` (40 s, the node lifecycle's grace), is failed
(no condition, as ``gcTerminating``) and deleted. While the Lease is fresh the pod is the agent's, and it is
looked at again when the Lease would expire. Every delete carries the pod's UID as a precondition.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gangplane.client.controller import Controller, Manager, Result, own_key
from gangplane.client.informer import Informer, Key, object_key
from gangplane.clock import Clock, parse_rfc3339
from gangplane.errors import Conflict, NotFound
from gangplane.schedulers.writes import with_condition
from gangplane.store import catalog
from gangplane.store.base import EventType, ListOptions, Object, Store
from gangplane.store.graceful import NODE_LEASE_NAMESPACE, node_of
from gangplane.store.objects import copy_object

_log = logging.getLogger(__name__)
DEFAULT_LEASE_SECONDS = 40  # the kubelet's nodeLeaseDurationSeconds


def lease_expiry(lease: Object | None) -> float | None:
    """When a node Lease stops vouching for its agent; None for no Lease (or one never renewed)."""
    spec = (lease or {}).get("spec") or {}
    renewed = spec.get("renewTime")
    if not isinstance(renewed, str):
        return None
    duration = spec.get("leaseDurationSeconds")
    return parse_rfc3339(renewed) + (duration if isinstance(duration, int) else DEFAULT_LEASE_SECONDS)


def agent_gone_in(pod: Object, lease: Object | None, now: float) -> float:
    """Seconds until nothing vouches for ``pod``'s node agent (0: nothing does now)."""
    if not node_of(pod):
        return 0.0
    expiry = lease_expiry(lease)
    return 0.0 if expiry is None else max(0.0, expiry - now)


ORPHANED_CONDITION: dict[str, Any] = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "DeletionByPodGC",  # gc_controller.go gcOrphaned
    "message": "PodGC: node no longer exists",
}
QUARANTINE_SECONDS = 40.0  # gc_controller.go quarantineTime: how long a node may be missing from the informer
_TERMINAL = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Verdict:
    """Why a pod is collected (upstream's metric reason) and the condition written with ``Failed``."""

    reason: str
    condition: dict[str, Any] | None = None


ORPHANED = Verdict("orphaned", ORPHANED_CONDITION)
UNSCHEDULED_TERMINATING = Verdict("terminating-unscheduled")
AGENT_GONE = Verdict("terminating-agent-gone")


def failed_status(pod: Object, condition: dict[str, Any] | None, now: float) -> Object | None:
    """The pod as PodGC's status write leaves it: ``Failed``, with ``condition`` if given; None when the pod
    is already ``Succeeded``/``Failed`` (no status write, only the delete)."""
    if (pod.get("status") or {}).get("phase") in _TERMINAL:
        return None
    updated = (with_condition(pod, condition, now) if condition else None) or copy_object(pod)
    updated.setdefault("status", {})["phase"] = "Failed"
    return updated


def terminating(pod: Object) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


class PodGarbageCollector:
    """Fails and force-deletes orphaned pods and terminating pods nothing will finish (module docstring)."""

    name = "pod-garbage-collector"

    def __init__(self, store: Store, clock: Clock, pods: Informer, leases: Informer, nodes: Informer) -> None:
        self.store, self.clock, self._pods, self._leases, self._nodes = store, clock, pods, leases, nodes
        self._missing_since: dict[str, float] = {}  # node name -> when the informer first lacked it

    def reconcile(self, key: Key) -> Result:
        pod = self._pods.get(*key)
        if pod is None:
            return Result()
        verdict, wait = self.verdict(pod)
        if verdict is None:
            return Result(requeue_after=wait)
        self._fail_and_delete(pod, verdict)
        return Result()

    def verdict(self, pod: Object) -> tuple[Verdict | None, float | None]:
        """Whether ``pod`` is collected now, else how long until it might be (None: not unless it changes)."""
        node = node_of(pod)
        if not node:
            return (UNSCHEDULED_TERMINATING if terminating(pod) else None), None
        waits = []
        orphan_wait = self._orphaned_in(node)
        if orphan_wait == 0:
            return ORPHANED, None
        if orphan_wait is not None:
            waits.append(orphan_wait)
        if terminating(pod):
            agent_wait = agent_gone_in(pod, self._leases.get(NODE_LEASE_NAMESPACE, node), self.clock.now())
            if agent_wait == 0:
                return AGENT_GONE, None
            waits.append(agent_wait)
        return None, min(waits, default=None)

    def node_event(self, kind: EventType, node: Object, _: Object | None) -> None:
        """A Node present again ends its quarantine, so a later deletion starts a fresh one."""
        if kind is not EventType.DELETED:
            self._missing_since.pop(str(node["metadata"]["name"]), None)

    def _orphaned_in(self, node: str) -> float | None:
        """Seconds of quarantine left for ``node`` (0: it no longer exists); None while it exists."""
        if self._nodes.get("", node) is not None:
            self._missing_since.pop(node, None)
            return None
        now = self.clock.now()
        left = self._missing_since.setdefault(node, now) + QUARANTINE_SECONDS - now
        if left > 0:
            return left
        try:  # upstream's checkIfNodeExists: the informer may lag, the store does not
            self.store.get(catalog.NODES, "", node)
        except NotFound:
            return 0.0
        self._missing_since.pop(node, None)
        return None

    def _fail_and_delete(self, pod: Object, verdict: Verdict) -> None:
        """``markFailedAndDeletePodWithCondition``: a lost status write (Conflict) is retried from a fresh
        read by the controller; the delete names the UID, so a pod re-created under the name is left."""
        failed = failed_status(pod, verdict.condition, self.clock.now())
        if failed is not None:
            self.store.update_status(catalog.PODS, failed)
        meta = pod["metadata"]
        _log.info(
            "pod-garbage-collector: force-deleting %s/%s (%s)",
            meta["namespace"],
            meta["name"],
            verdict.reason,
        )
        with contextlib.suppress(NotFound, Conflict):  # gone already, or re-created under the same name
            self.store.delete(
                catalog.PODS,
                meta["namespace"],
                meta["name"],
                preconditions={"uid": meta["uid"]},
                grace_period=0,
            )


NODE_INDEX = "pod-garbage-collector/node"  # pods by spec.nodeName; the taint eviction controller shares it


def bound_node(pod: Object) -> tuple[str, ...]:
    """``NODE_INDEX``'s value of ``pod``: its node, if bound."""
    return (node_of(pod),) if node_of(pod) else ()


def build_pod_gc(manager: Manager) -> Controller:
    """The collector on ``manager``'s shared pod and Node informers and a Lease informer of
    ``kube-node-lease``. A pod is queued when terminating or bound to a Node the informer lacks; a Node's
    deletion queues its pods."""
    pods = manager.informer(catalog.PODS)
    leases = manager.informer(catalog.LEASES, ListOptions(namespace=NODE_LEASE_NAMESPACE))
    nodes = manager.informer(catalog.NODES)
    pods.add_index(NODE_INDEX, bound_node)
    collector = PodGarbageCollector(manager.store, manager.clock, pods, leases, nodes)
    controller = manager.add(Controller(collector, manager.clock))
    nodes.add_handler(collector.node_event)

    def candidate(pod: Object) -> Iterable[Key]:
        node = node_of(pod)
        wanted = terminating(pod) or (node and nodes.get("", node) is None)
        return own_key(pod) if wanted else ()

    def pods_of_deleted(node: Object) -> Iterable[Key]:
        name = str((node.get("metadata") or {}).get("name") or "")
        if nodes.get("", name) is not None:
            return ()
        return [object_key(pod) for pod in pods.by_index(NODE_INDEX, name)]

    controller.watch(pods, candidate)
    controller.watch(nodes, pods_of_deleted)
    return controller


__all__ = [
    "NODE_INDEX",
    "ORPHANED_CONDITION",
    "PodGarbageCollector",
    "Verdict",
    "agent_gone_in",
    "bound_node",
    "build_pod_gc",
    "failed_status",
    "lease_expiry",
]
