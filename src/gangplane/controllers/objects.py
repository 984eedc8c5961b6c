"""Pure helpers on wire-form objects (camelCase dicts) shared by the reconcilers.

Nothing here performs I/O or reads the clock: callers pass ``now`` as an RFC 3339 string.
"""

from __future__ import annotations

from typing import Any

from gangplane.store.base import Object


def meta(obj: Object) -> dict[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def name_of(obj: Object) -> str:
    return str(meta(obj).get("name") or "")


def namespace_of(obj: Object) -> str:
    return str(meta(obj).get("namespace") or "")


def uid_of(obj: Object) -> str:
    return str(meta(obj).get("uid") or "")


def labels_of(obj: Object) -> dict[str, str]:
    return dict(meta(obj).get("labels") or {})


def deleting(obj: Object) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def spec_of(obj: Object) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def status_of(obj: Object) -> dict[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, dict) else {}


def controller_ref(owner: Object) -> dict[str, Any]:
    """The ``ownerReferences`` entry a controller puts on what it creates (``SetControllerReference``)."""
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "name": name_of(owner),
        "uid": uid_of(owner),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controlled_by(obj: Object, owner_uid: str) -> bool:
    refs = meta(obj).get("ownerReferences") or []
    return any(r.get("uid") == owner_uid and r.get("controller") for r in refs if isinstance(r, dict))


def find_condition(conditions: list[dict[str, Any]], type_: str) -> dict[str, Any] | None:
    return next((c for c in conditions if c.get("type") == type_), None)


def condition_true(obj: Object, type_: str) -> bool:
    found = find_condition(status_of(obj).get("conditions") or [], type_)
    return found is not None and found.get("status") == "True"


def is_subset(wanted: Any, live: Any) -> bool:
    """Whether ``live`` already holds every value ``wanted`` sets (an apply of ``wanted`` would be a no-op
    for the values; lists compare item by item and must have the same length)."""
    if isinstance(wanted, dict):
        return isinstance(live, dict) and all(k in live and is_subset(v, live[k]) for k, v in wanted.items())
    if isinstance(wanted, list):
        return (
            isinstance(live, list)
            and len(wanted) == len(live)
            and all(is_subset(w, v) for w, v in zip(wanted, live, strict=True))
        )
    return bool(wanted == live)
