"""The node agent's two writes about a pod's deletion (the kubelet keeps no finalizer on pods):

- ``confirm_deleted``: the kubelet status manager's last word on a deleted pod whose containers all stopped:
  a delete with grace 0 and the pod's UID as a precondition (a pod re-created under the same name is not
  touched), which ends the store's graceful deletion (``store/graceful.py``);
- ``without_legacy_finalizer``: earlier agents put ``LEGACY_FINALIZER`` on every pod; a pod stored with it
  (a durable store of that time) has it removed when an agent next sees it, or nothing would.
"""

from __future__ import annotations

import contextlib

from gangplane.errors import Conflict, NotFound
from gangplane.store.base import Object, Store
from gangplane.store.catalog import PODS
from gangplane.store.patch import MERGE_PATCH

LEGACY_FINALIZER = "gangplane.io/node-agent"


def confirm_deleted(store: Store, pod: Object) -> None:
    meta = pod["metadata"]
    with contextlib.suppress(NotFound, Conflict):  # gone already, or replaced
        store.delete(
            PODS, meta["namespace"], meta["name"], preconditions={"uid": meta["uid"]}, grace_period=0
        )


def without_legacy_finalizer(store: Store, pod: Object) -> Object:
    """``pod`` as stored without ``LEGACY_FINALIZER`` (one write only when it has it)."""
    meta = pod["metadata"]
    names = list(meta.get("finalizers") or [])
    if LEGACY_FINALIZER not in names:
        return pod
    kept = [n for n in names if n != LEGACY_FINALIZER] or None
    patch = {"metadata": {"resourceVersion": meta["resourceVersion"], "finalizers": kept}}
    with contextlib.suppress(NotFound):
        return store.patch(PODS, meta["namespace"], meta["name"], patch, MERGE_PATCH)
    return pod


__all__ = ["LEGACY_FINALIZER", "confirm_deleted", "without_legacy_finalizer"]
