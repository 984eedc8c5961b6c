"""Pure object rules shared by every backend: identity, scope, immutable metadata and generation.

Nothing here touches storage or takes a lock; each function returns a new dict and never mutates its inputs,
so the engine can hand stored dicts to watchers without copying them on the write path.
"""

from __future__ import annotations

import pickle
from typing import Any

from gangplane.api.builtin_kinds import name_rule
from gangplane.api.jsondata import clone as clone  # re-exported for the store's modules
from gangplane.errors import CauseType, Conflict, FieldError, Invalid
from gangplane.store.base import Object, ResourceType

Key = tuple[str, str]
TypeKey = tuple[str, str]

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
SYSTEM_METADATA = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)


def copy_object(obj: Object) -> Object:
    return {k: clone(v) for k, v in obj.items()}


def sharing_unchanged(old: Object | None, new: Object) -> Object:
    """``new`` with each top-level and ``metadata`` field that equals ``old``'s taken from ``old`` itself. Stored
    versions are never mutated, so consecutive versions can share what a write left alone (a status update
    shares the spec): a past version kept in the watch history then costs only what changed."""
    if old is None:
        return new
    out = {k: old[k] if k != "metadata" and k in old and old[k] == v else v for k, v in new.items()}
    old_m = meta(old)
    out["metadata"] = {k: old_m[k] if k in old_m and old_m[k] == v else v for k, v in meta(new).items()}
    return out


def copy_objects(objs: list[Object]) -> list[Object]:
    """Copies of many objects; a pickle round trip is faster than ``clone``. One object at a time: pickle
    keeps what its input shares shared, and stored objects share equal parts (``sharing.py``), so a batch's
    copies would be tied together (and per object it is also faster than one large batch)."""
    return [pickle.loads(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)) for obj in objs]


def uuid4_text(bits: int) -> str:
    """``str(uuid.UUID(int=bits, version=4))`` without building the UUID (a create's uid)."""
    bits = (bits & ~(0xF000 << 64) | 4 << 76) & ~(0xC000 << 48) | 0x8000 << 48
    h = f"{bits:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def group_resource(rt: ResourceType) -> str:
    """``plural.group`` as kube-apiserver names a resource in its messages."""
    return f"{rt.plural}.{rt.group}" if rt.group else rt.plural


def type_key(rt: ResourceType) -> TypeKey:
    return (rt.group, rt.plural)


def meta(obj: Object) -> dict[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def key_of(obj: Object) -> Key:
    m = meta(obj)
    return (m.get("namespace", ""), m.get("name", ""))


def resource_version(obj: Object) -> int:
    return int(meta(obj).get("resourceVersion") or 0)


def invalid(
    rt: ResourceType, name: str, path: str, kind: CauseType, detail: str, value: Any = None
) -> Invalid:
    return Invalid(rt.kind, name, [FieldError(path, kind, detail, value)])


def check_scope(rt: ResourceType, namespace: str, name: str) -> None:
    """Namespaced kinds need a namespace; cluster-scoped kinds must not have one."""
    if rt.namespaced and not namespace:
        raise invalid(rt, name, "metadata.namespace", CauseType.REQUIRED, "namespace is required")
    if not rt.namespaced and namespace:
        raise invalid(
            rt, name, "metadata.namespace", CauseType.FORBIDDEN, "not allowed on cluster-scoped kinds"
        )


def check_name(rt: ResourceType, name: str) -> None:
    """The name rule of the kind (validated again, with everything else, when the object is committed)."""
    if not name:
        raise invalid(rt, name, "metadata.name", CauseType.REQUIRED, "name or generateName is required")
    problems = name_rule(rt.group, rt.kind)(name)
    if problems:
        raise Invalid(
            rt.kind, name, [FieldError("metadata.name", CauseType.INVALID, p, name) for p in problems]
        )


def name_suffix(choice: Any) -> str:
    """Five characters as the API server picks them; ``choice`` is e.g. ``random.Random.choice``."""
    return "".join(choice(_SUFFIX_ALPHABET) for _ in range(5))


def prepare_create(rt: ResourceType, obj: Object, *, uid: str, now: str, copy: bool = True) -> Object:
    """The object as first stored: identity set, server-owned metadata reset, status dropped for kinds with
    a status subresource (status is written only through ``update_status``). Without ``copy`` it edits
    ``obj`` and its metadata dict in place, for a caller whose object it is to give."""
    out = copy_object(obj) if copy else obj
    out.setdefault("apiVersion", rt.api_version)
    out.setdefault("kind", rt.kind)
    m = out.setdefault("metadata", {})
    for field in (*SYSTEM_METADATA, "resourceVersion"):
        m.pop(field, None)
    m.update(uid=uid, creationTimestamp=now, generation=1)
    if not rt.namespaced:
        m.pop("namespace", None)
    if rt.has_status:
        out.pop("status", None)
    return out


def _spec_part(obj: Object) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def merge_for_update(rt: ResourceType, old: Object, new: Object) -> Object:
    """``new`` with everything the client may not change taken from ``old``: system metadata, identity and,
    for kinds with a status subresource, the whole status. Bumps ``generation`` on spec changes."""
    out = copy_object(new)
    out["apiVersion"], out["kind"] = old.get("apiVersion", rt.api_version), old.get("kind", rt.kind)
    m, old_m = out.setdefault("metadata", {}), meta(old)
    for field in (*SYSTEM_METADATA, "name", "namespace"):
        m.pop(field, None)
        if field in old_m:
            m[field] = old_m[field]
    if "managedFields" not in m and "managedFields" in old_m:
        m["managedFields"] = clone(old_m["managedFields"])
    if rt.has_status:
        out.pop("status", None)
        if "status" in old:
            out["status"] = clone(old["status"])
    return bump_generation(old, out)


def replace_status(old: Object, status: Any) -> Object:
    out = copy_object(old)
    out.pop("status", None)
    if status is not None:
        out["status"] = clone(status)
    return out


def bump_generation(old: Object, new: Object) -> Object:
    if _spec_part(old) != _spec_part(new):
        meta(new)["generation"] = int(meta(old).get("generation", 1)) + 1
    return new


def same_content(old: Object, new: Object) -> bool:
    """Equal apart from resourceVersion: such a write is a no-op and must not bump the version."""
    a, b = dict(old), dict(new)
    a["metadata"] = {k: v for k, v in meta(old).items() if k != "resourceVersion"}
    b["metadata"] = {k: v for k, v in meta(new).items() if k != "resourceVersion"}
    return a == b


def check_precondition(rt: ResourceType, stored: Object, wanted_rv: str | None) -> None:
    if wanted_rv and wanted_rv != meta(stored).get("resourceVersion"):
        name = meta(stored).get("name", "")
        msg = (
            f'Operation cannot be fulfilled on {rt.plural} "{name}": the object has been modified; '
            "please apply your changes to the latest version and try again"
        )
        raise Conflict(msg, kind=rt.kind, name=name)
