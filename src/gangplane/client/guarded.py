"""Writes onto objects that other writers change too, each computed from a fresh read and guarded by that
read's ``resourceVersion``: when another writer got in between, the merge patch is refused (409) and computed
again from a new read, so a list written whole (conditions, finalizers) never drops an entry written
meanwhile (controller-runtime's ``Update`` checks the resourceVersion the same way)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gangplane.errors import Conflict, NotFound
from gangplane.store import MERGE_PATCH
from gangplane.store.base import Object, ResourceType, Store

WRITE_ATTEMPTS = 5
Body = Callable[[Object], dict[str, Any] | None]
"""The merge patch to write over the current object, or ``None`` when there is nothing to write."""


def patch_read(
    store: Store, rt: ResourceType, namespace: str, name: str, body_of: Body, *, uid: str = "",
    subresource: str = "",
) -> Object | None:  # fmt: skip
    """Write ``body_of(current)`` onto the object as it is stored now; the written object, or ``None`` when
    it is gone (or is another object than ``uid``) or there was nothing to write. A Conflict after
    ``WRITE_ATTEMPTS`` reads is raised."""
    for attempt in range(WRITE_ATTEMPTS):
        try:
            current = store.get(rt, namespace, name)
            meta = current.get("metadata") or {}
            body = body_of(current) if not uid or meta.get("uid") == uid else None
            if body is None:
                return None
            guard = {**(body.get("metadata") or {}), "resourceVersion": meta.get("resourceVersion")}
            return store.patch(rt, namespace, name, {**body, "metadata": guard}, MERGE_PATCH,
                               subresource=subresource)  # fmt: skip
        except NotFound:
            return None
        except Conflict:
            if attempt == WRITE_ATTEMPTS - 1:
                raise
    return None


def without_finalizer(finalizer: str) -> Body:
    """The patch removing ``finalizer`` (the list emptied is deleted), ``None`` when it is not there."""

    def body(current: Object) -> dict[str, Any] | None:
        found = (current.get("metadata") or {}).get("finalizers") or []
        if finalizer not in found:
            return None
        return {"metadata": {"finalizers": [f for f in found if f != finalizer] or None}}

    return body


__all__ = ["WRITE_ATTEMPTS", "Body", "patch_read", "without_finalizer"]
