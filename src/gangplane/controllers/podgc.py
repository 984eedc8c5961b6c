"""The pod garbage collector's part the embedded cluster needs: terminating pods nothing will finish.

A pod deleted gracefully (``store/graceful.py``) stays until its node's agent, its processes stopped,
deletes it with grace 0. If that agent went away (its process crashed, its node was dropped from the
cluster config) nothing would: upstream, the node lifecycle controller marks a node whose kubelet stopped
renewing its Lease not ready, and PodGC (``pkg/controller/podgc/gc_controller.go``) force-deletes the pods of
nodes that are gone (``gcOrphaned``) and terminating pods that are not scheduled (``gcUnscheduledTerminating``)
or on an out-of-service node (``gcTerminating``). Here the test is the node's Lease in ``kube-node-lease``: a
terminating pod whose node has no Lease, or one not renewed within its ``leaseDurationSeconds`` (40 s, the
node lifecycle's grace), is deleted with grace 0 and its UID as a precondition. While the Lease is fresh the
pod is the agent's, and it is looked at again when the Lease would expire.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from gangplane.client.controller import Controller, Manager, Result, own_key
from gangplane.client.informer import Informer, Key
from gangplane.clock import Clock, parse_rfc3339
from gangplane.errors import Conflict, NotFound
from gangplane.store import catalog
from gangplane.store.base import ListOptions, Object, Store
from gangplane.store.graceful import NODE_LEASE_NAMESPACE, node_of

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


def terminating(pod: Object) -> Iterable[Key]:
    return own_key(pod) if (pod.get("metadata") or {}).get("deletionTimestamp") else ()


class PodGarbageCollector:
    """Force-deletes terminating pods whose node agent is gone (module docstring)."""

    name = "pod-garbage-collector"

    def __init__(self, store: Store, clock: Clock, pods: Informer, leases: Informer) -> None:
        self.store, self.clock, self._pods, self._leases = store, clock, pods, leases

    def reconcile(self, key: Key) -> Result:
        pod = self._pods.get(*key)
        if pod is None or not (pod.get("metadata") or {}).get("deletionTimestamp"):
            return Result()
        lease = self._leases.get(NODE_LEASE_NAMESPACE, node_of(pod)) if node_of(pod) else None
        wait = agent_gone_in(pod, lease, self.clock.now())
        if wait > 0:
            return Result(requeue_after=wait)
        meta = pod["metadata"]
        with contextlib.suppress(NotFound, Conflict):  # gone already, or re-created under the same name
            self.store.delete(
                catalog.PODS,
                meta["namespace"],
                meta["name"],
                preconditions={"uid": meta["uid"]},
                grace_period=0,
            )
        return Result()


def build_pod_gc(manager: Manager) -> Controller:
    """The collector on ``manager``'s shared pod informer and a Lease informer of ``kube-node-lease``."""
    pods = manager.informer(catalog.PODS)
    leases = manager.informer(catalog.LEASES, ListOptions(namespace=NODE_LEASE_NAMESPACE))
    controller = manager.add(
        Controller(PodGarbageCollector(manager.store, manager.clock, pods, leases), manager.clock)
    )
    controller.watch(pods, terminating)
    return controller


__all__ = ["PodGarbageCollector", "agent_gone_in", "build_pod_gc", "lease_expiry"]
