"""Validate-then-persist: the checks every object passes before the engine journals it.

Every write (API requests, controllers, the garbage collector) reaches the journal through
``Engine._commit``, which calls ``checked``: ObjectMeta and the built-in kinds are checked as kube-apiserver
checks them (types → 400 ``BadRequest``, values → 422 ``Invalid``), the object must encode as strict JSON
(no NaN/Infinity) and fit etcd's per-object limit (413). What passes is exactly what ``load`` reads back.
``load_problem`` is the read side: a row that fails it (written by an older version, or edited by hand) is
quarantined at startup instead of stopping the server.
"""

from __future__ import annotations

import json

from gangplane.api import builtin_kinds, limits, objectmeta, volume_kinds
from gangplane.errors import ApiError, BadRequest, FieldError, Invalid, RequestEntityTooLarge
from gangplane.store.base import Object, ResourceType


def _name(obj: Object) -> str:
    m = obj.get("metadata")
    name = m.get("name") if isinstance(m, dict) else None
    return name if isinstance(name, str) else ""


def _undecodable(rt: ResourceType, obj: Object, errors: list[FieldError]) -> BadRequest:
    listed = "; ".join(str(e) for e in errors)
    message = f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {listed}'
    return BadRequest(message, kind=rt.kind, name=_name(obj), causes=errors)


def prepared(rt: ResourceType, obj: Object) -> Object:
    """What the API server does to an object before validating it (a Secret's ``stringData`` → ``data``,
    the volume kinds' defaults)."""
    if rt.group == "" and rt.kind == "Secret":
        return builtin_kinds.fold_string_data(obj)
    if rt.group == "" and rt.kind == "Namespace":
        return builtin_kinds.active_namespace(obj)
    return volume_kinds.defaulted(rt.group, rt.kind, obj)


def check_types(rt: ResourceType, obj: Object) -> None:
    """400 for what upstream's typed decoder refuses; runs before admission and patch logic read the object."""
    _check_types(rt, obj, builtin_kinds.errors(rt.group, rt.kind, obj))


def _check_types(rt: ResourceType, obj: Object, kind_errors: list[FieldError]) -> None:
    bad_types = objectmeta.type_errors(obj.get("metadata"))
    bad_types += [e for e in kind_errors if builtin_kinds.is_type_problem(e)]
    if bad_types:
        raise _undecodable(rt, obj, bad_types)


def check(rt: ResourceType, obj: Object) -> None:
    """Raise what kube-apiserver would answer for ``obj``: 400 for types, 422 for values. The kind's rules
    run once for both."""
    kind_errors = builtin_kinds.errors(rt.group, rt.kind, obj)
    _check_types(rt, obj, kind_errors)
    rule = builtin_kinds.name_rule(rt.group, rt.kind)
    problems = objectmeta.meta_errors(obj["metadata"], rule, namespaced=rt.namespaced)
    problems += [e for e in kind_errors if not builtin_kinds.is_type_problem(e)]
    if problems:
        raise Invalid(rt.kind, _name(obj), problems)


def encoded(rt: ResourceType, obj: Object) -> str:
    """The object as the journal stores it; 400 if it is not strict JSON, 413 over the object limit."""
    try:
        body = limits.dumps(obj)
    except ValueError as exc:
        raise BadRequest(
            f"{rt.kind} {_name(obj)!r} cannot be stored: {exc}", kind=rt.kind, name=_name(obj)
        ) from None
    if len(body) > limits.MAX_OBJECT_BYTES:
        raise RequestEntityTooLarge(
            f"etcdserver: request is too large ({len(body)} bytes; at most {limits.MAX_OBJECT_BYTES} per object)",
            kind=rt.kind,
            name=_name(obj),
        )
    return body


def size_of(obj: Object) -> int:
    """The encoded size of an object already stored (never raises: it is only for accounting)."""
    try:
        return len(json.dumps(obj, separators=(",", ":"), default=str))
    except (ValueError, TypeError, RecursionError):
        return 0


def load_problem(rt: ResourceType, obj: object) -> str | None:
    """Why a stored row cannot be served (None if it can): the engine needs a dict with string name and uid
    and well-typed metadata to index it."""
    if not isinstance(obj, dict):
        return "the stored body is not a JSON object"
    bad_types = objectmeta.type_errors(obj.get("metadata"))
    if bad_types:
        return "; ".join(str(e) for e in bad_types)
    m = obj["metadata"]
    if not m.get("name") or not m.get("uid"):
        return "metadata.name and metadata.uid are required"
    if bool(m.get("namespace")) != rt.namespaced:
        return "metadata.namespace does not match the kind's scope"
    return None


def same_problems(rt: ResourceType, old: Object, new_error: Invalid) -> bool:
    """Whether ``new_error`` names only problems the stored ``old`` already has (an update may keep them)."""
    try:
        check(rt, old)
    except Invalid as exc:
        return {str(c) for c in new_error.causes} <= {str(c) for c in exc.causes}
    except ApiError:
        return False
    return False
