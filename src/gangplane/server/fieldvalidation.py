"""The ``fieldValidation`` query parameter of a write, for custom kinds, as kube-apiserver answers it.

A custom object's fields that its CRD schema does not declare (``api.structural.prune_unknown``) are, by the
request's ``fieldValidation``: ``Strict`` (kubectl's default) a ``400 BadRequest``, "KIND in version "V" cannot
be handled as a KIND: strict decoding error: unknown field "spec.x", ..."; ``Warn`` dropped, each with a
``Warning`` header ``unknown field "spec.x"``; ``Ignore`` (``kubectl --validate=false``) dropped silently.
kube-apiserver takes ``Warn`` when the parameter is absent; gangplane keeps its stricter answer then (the
models refuse an unknown Trainer field with ``422``), so its own clients, which never send the parameter, see
no change. The handlers set the parameter for the write they run (``requested``); the admission reads it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar

from gangplane.api.jsondata import clone
from gangplane.api.structural import prune_unknown
from gangplane.errors import BadRequest
from gangplane.server.openapi import crd_schemas
from gangplane.store.base import Object, ResourceType, warn

STRICT, WARN, IGNORE = "Strict", "Warn", "Ignore"
_MODE: ContextVar[str | None] = ContextVar("gangplane_field_validation", default=None)


@contextlib.contextmanager
def requested(params: Mapping[str, str]) -> Iterator[None]:
    """The write run in this block was asked for with these query parameters."""
    mode = params.get("fieldValidation") or None
    if mode is not None and mode not in (IGNORE, STRICT, WARN):  # refused before anything is written
        raise BadRequest(
            f'fieldValidation: Unsupported value: "{mode}": supported values: "{IGNORE}", "{STRICT}", "{WARN}"'
        )
    token = _MODE.set(mode)
    try:
        yield
    finally:
        _MODE.reset(token)


def _schema(rt: ResourceType) -> Mapping[str, object] | None:
    return crd_schemas().get(f"{rt.api_version}/{rt.kind}") if _MODE.get() is not None else None


def has_unknown(rt: ResourceType, obj: Object) -> bool:
    """Whether ``apply`` would change or refuse ``obj`` (reads only)."""
    schema = _schema(rt)
    return schema is not None and bool(prune_unknown(clone(obj), schema))


def apply(rt: ResourceType, obj: Object) -> None:
    """Drop ``obj``'s unknown fields in place, warning of them, or refuse them, as the request asked."""
    schema = _schema(rt)
    unknown = prune_unknown(obj, schema) if schema is not None else []
    if not unknown:
        return
    if _MODE.get() == STRICT:
        listed = ", ".join(f'unknown field "{path}"' for path in unknown)
        name = str((obj.get("metadata") or {}).get("name") or "")
        undecodable = f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}'
        message = f"{undecodable}: strict decoding error: {listed}"
        raise BadRequest(message, kind=rt.kind, name=name)
    if _MODE.get() == WARN:
        for path in unknown:
            warn(f'unknown field "{path}"')


__all__ = ["IGNORE", "STRICT", "WARN", "apply", "has_unknown", "requested"]
