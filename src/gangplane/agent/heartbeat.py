"""A node's presence in the API: its ``Node`` object and the ``Lease`` the kubelet renews as a heartbeat.

``register`` creates the Node, or brings an existing one (from a durable store) back to this config's labels,
taints and capacity with a fresh ``Ready`` condition. ``renew`` updates the Lease in ``kube-node-lease``
(every ``LEASE_SECONDS / 4``, as the kubelet does); the Node status itself is rewritten only at registration,
every ``STATUS_SECONDS``, and at a heartbeat that finds it not ``Ready`` (``repost_unless_ready``), so
schedulers watching nodes are not woken by heartbeats.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from gangplane.agent.node_status import conditions
from gangplane.agent.nodes import NodeSpec, node_object
from gangplane.clock import Clock, rfc3339
from gangplane.errors import AlreadyExists, NotFound
from gangplane.store.base import Object, Store
from gangplane.store.catalog import LEASES, NAMESPACES, NODES

_log = logging.getLogger(__name__)

LEASE_NAMESPACE = "kube-node-lease"
LEASE_SECONDS = 40
RENEW_SECONDS = LEASE_SECONDS / 4
STATUS_SECONDS = 300.0


def _micro_time(clock: Clock) -> str:
    """``metav1.MicroTime`` as the API writes it."""
    return rfc3339(clock.now()).replace("Z", ".000000Z")


CONFIG_TAINTS_ANNOTATION = "gangplane.dev/config-taints"
"""The taints (``key:effect``) the cluster config gave the Node at its last registration, as a JSON list."""


def register(store: Store, clock: Clock, spec: NodeSpec) -> Object:
    """Create or refresh the Node for ``spec`` (create ignores ``status``: it is written separately)."""
    wanted = node_object(spec, rfc3339(clock.now()))
    declared = json.dumps(sorted(_taint_ids(spec.taints)))
    wanted["metadata"]["annotations"] = {CONFIG_TAINTS_ANNOTATION: declared}
    try:
        current = store.create(NODES, wanted)
    except AlreadyExists:
        current = _refresh_spec(store, wanted)
    return _post_status(store, current, wanted["status"])


def _post_status(store: Store, node: Object, status: Object) -> Object:
    """Write the node's status unconditionally (no resourceVersion), as the kubelet's status PATCH does: the
    node lifecycle controller may taint the Node between the spec and the status write of a registration."""
    meta = {k: v for k, v in node["metadata"].items() if k != "resourceVersion"}
    return store.update_status(NODES, {**node, "metadata": meta, "status": status})


def _refresh_spec(store: Store, wanted: Object) -> Object:
    """An existing Node (a durable store) takes this config's labels and taints. Other labels stay, and so
    do taints the config never declared (``kubectl taint``, the node lifecycle controller's): the kubelet
    leaves an existing Node's taints alone. A taint an earlier config declared and this one drops goes."""
    current = store.get(NODES, "", wanted["metadata"]["name"])
    meta = current["metadata"]
    labels = {**(meta.get("labels") or {}), **wanted["metadata"]["labels"]}
    annotations = {**(meta.get("annotations") or {}), **wanted["metadata"]["annotations"]}
    declared = wanted["spec"].get("taints") or []
    owned = _taint_ids(declared) | _declared_before(meta)
    others = [t for t in (current.get("spec") or {}).get("taints") or [] if _taint_id(t) not in owned]
    node_spec = {k: v for k, v in (current.get("spec") or {}).items() if k != "taints"}
    if others or declared:
        node_spec["taints"] = [*others, *declared]
    meta = {**meta, "labels": labels, "annotations": annotations}
    return store.update(NODES, {**current, "metadata": meta, "spec": node_spec})


def _declared_before(meta: Object) -> set[str]:
    """The taints the last registration's config declared (none if the annotation is absent or garbled)."""
    try:
        found = json.loads((meta.get("annotations") or {}).get(CONFIG_TAINTS_ANNOTATION) or "[]")
    except ValueError:
        return set()
    return {str(t) for t in found} if isinstance(found, list) else set()


def _taint_id(taint: Object) -> str:
    return f"{taint.get('key')}:{taint.get('effect')}"


def _taint_ids(taints: list[Object]) -> set[str]:
    return {_taint_id(t) for t in taints}


def refresh_status(store: Store, clock: Clock, name: str) -> None:
    """Bump the conditions' heartbeat (the transition times stay)."""
    node = store.get(NODES, "", name)
    now = rfc3339(clock.now())
    conditions: list[dict[str, Any]] = [
        {**condition, "lastHeartbeatTime": now}
        for condition in (node.get("status") or {}).get("conditions") or []
    ]
    store.update_status(NODES, {**node, "status": {**node.get("status", {}), "conditions": conditions}})


def renew(store: Store, clock: Clock, name: str) -> None:
    """Create or renew the node's Lease."""
    now = _micro_time(clock)
    spec = {"holderIdentity": name, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": now}
    try:
        lease = store.get(LEASES, LEASE_NAMESPACE, name)
    except NotFound:
        _ensure_namespace(store)
        lease_object = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": spec}
        lease_object["metadata"] = {"name": name, "namespace": LEASE_NAMESPACE}
        with contextlib.suppress(AlreadyExists):
            store.create(LEASES, lease_object)
        return
    store.update(LEASES, {**lease, "spec": {**lease.get("spec", {}), **spec}})


def repost_unless_ready(store: Store, clock: Clock, name: str) -> None:
    """Post the node's conditions again when its ``Ready`` is not ``True``: the node lifecycle controller
    marked it ``Unknown`` while the heartbeats did not arrive (a suspended machine, a stalled process). The
    kubelet does the same: it posts its status whenever the Node differs from what it would post."""
    try:
        node = store.get(NODES, "", name)
    except NotFound:  # deleted under a running agent: nothing to post to
        return
    posted = (node.get("status") or {}).get("conditions") or []
    if any(c.get("type") == "Ready" and c.get("status") == "True" for c in posted):
        return
    _post_status(store, node, {**node.get("status", {}), "conditions": conditions(rfc3339(clock.now()))})


def _ensure_namespace(store: Store) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": LEASE_NAMESPACE}}
    with contextlib.suppress(AlreadyExists):
        store.create(NAMESPACES, namespace)


class Heartbeat:
    """Renews the Lease (and now and then the Node status) on a daemon thread until stopped."""

    def __init__(self, store: Store, clock: Clock, name: str, interval: float = RENEW_SECONDS) -> None:
        self._store, self._clock, self._name, self._interval = store, clock, name, interval
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._beat()
        self._thread = threading.Thread(target=self._loop, name=f"heartbeat-{self._name}", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        since_status = 0.0
        while not self._stopped.wait(self._interval):
            since_status += self._interval
            if since_status >= STATUS_SECONDS:
                since_status = 0.0
                self._guarded(refresh_status)
            self._beat()

    def _beat(self) -> None:
        self._guarded(renew)
        self._guarded(repost_unless_ready)

    def _guarded(self, step: Callable[[Store, Clock, str], None]) -> None:
        try:
            step(self._store, self._clock, self._name)
        except Exception:  # a failed heartbeat is retried next interval
            _log.exception("node %s: heartbeat failed", self._name)

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
