"""Garbage-collection rules over ``ownerReferences``, as pure functions; the engine performs the writes.

Kubernetes runs the garbage collector asynchronously; the embedded store runs the same rules synchronously
inside the delete (or the finalizer-removing update) that triggers them, so a caller observes the final state
as soon as the call returns:

- Background: the owner goes first; then each dependent whose owners are all gone is deleted, and a
  dependent that still has a live owner only loses the reference to the deleted one.
- Foreground: the owner gets ``deletionTimestamp`` and the ``foregroundDeletion`` finalizer, its dependents
  are deleted (foreground, recursively), and the finalizer is dropped once no dependent with
  ``blockOwnerDeletion: true`` remains.
- Orphan: dependents lose their reference to the owner, then the owner is deleted.

Dependents whose owners are all missing (a cascade cut short by a crash, an owner that never existed) are
collected by the startup sweep (``collector.py``), as Kubernetes' collector does when it rebuilds its graph.
"""

from __future__ import annotations

from typing import Any

from gangplane.store.base import Object
from gangplane.store.objects import copy_object, meta

FOREGROUND_FINALIZER = "foregroundDeletion"


def owner_refs(obj: Object) -> list[dict[str, Any]]:
    return [r for r in meta(obj).get("ownerReferences") or [] if isinstance(r, dict)]


def owner_uids(obj: Object) -> set[str]:
    return {str(r["uid"]) for r in owner_refs(obj) if r.get("uid")}


def blocks_owner(obj: Object, owner_uid: str) -> bool:
    return any(r.get("uid") == owner_uid and r.get("blockOwnerDeletion") is True for r in owner_refs(obj))


def without_owner(obj: Object, owner_uid: str) -> Object:
    out = copy_object(obj)
    refs = [r for r in owner_refs(out) if r.get("uid") != owner_uid]
    m = out["metadata"]
    if refs:
        m["ownerReferences"] = refs
    else:
        m.pop("ownerReferences", None)
    return out


def finalizers(obj: Object) -> list[str]:
    return [str(f) for f in meta(obj).get("finalizers") or []]


def with_finalizers(obj: Object, names: list[str]) -> Object:
    out = copy_object(obj)
    if names:
        out["metadata"]["finalizers"] = names
    else:
        out["metadata"].pop("finalizers", None)
    return out


def mark_deleting(obj: Object, now: str, *, foreground: bool) -> Object:
    """The owner as stored while finalizers hold it: ``deletionTimestamp`` set, foreground finalizer added."""
    names = finalizers(obj)
    if foreground and FOREGROUND_FINALIZER not in names:
        names.append(FOREGROUND_FINALIZER)
    out = with_finalizers(obj, names)
    out["metadata"]["deletionTimestamp"] = now
    out["metadata"]["deletionGracePeriodSeconds"] = 0
    return out


def deleting(obj: Object) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def releasable(owner: Object, dependents: list[Object]) -> bool:
    """A foreground-deleting owner may drop its finalizer once no dependent blocks it."""
    uid = str(meta(owner).get("uid"))
    holding = deleting(owner) and FOREGROUND_FINALIZER in finalizers(owner)
    return holding and not any(blocks_owner(d, uid) for d in dependents)
