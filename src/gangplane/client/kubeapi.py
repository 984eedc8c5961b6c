"""Pure mapping between ``Store`` calls and the Kubernetes REST API: paths, query parameters, bodies, and
``Status`` error bodies back to gangplane's exception tree.

Works for any API server (gangplane's embedded one or a real cluster); nothing here performs I/O, so
``KubeStore`` stays a thin shell. Paths follow the API conventions (``/api/v1`` for the core group,
``/apis/<group>/<version>`` for named groups, ``namespaces/<ns>/`` for namespaced resources; see
kubernetes ``staging/src/k8s.io/client-go/rest/request.go`` ``URL``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from gangplane.errors import (
    AlreadyExists,
    ApiError,
    CauseType,
    Conflict,
    FieldError,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    Unauthorized,
)
from gangplane.store.base import EventType, ListOptions, Object, ObjectList, ResourceType, WatchEvent

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# The store accepts short names for patch types; the wire needs the media type.
_PATCH_MEDIA_TYPES: Mapping[str, str] = {
    "merge": MERGE_PATCH,
    MERGE_PATCH: MERGE_PATCH,
    "json": JSON_PATCH,
    JSON_PATCH: JSON_PATCH,
    "strategic": STRATEGIC_MERGE_PATCH,
    STRATEGIC_MERGE_PATCH: STRATEGIC_MERGE_PATCH,
    "apply": APPLY_PATCH,
    APPLY_PATCH: APPLY_PATCH,
    "application/apply-patch+json": APPLY_PATCH,
}

# ``kubectl get``'s Accept header: a server-side Table, falling back to the object.
TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


class ServerError(ApiError):
    """Any other ``Status`` the server answers with (400, 405, 415, 429, 5xx); ``code`` and ``reason`` are
    the server's."""

    def __init__(self, message: str, *, code: int, reason: str, kind: str = "", name: str = "") -> None:
        super().__init__(message, kind=kind, name=name)
        self.code = code
        self.reason = reason


def _group_version_prefix(rt: ResourceType) -> str:
    return f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"


def collection_path(rt: ResourceType, namespace: str | None) -> str:
    """``.../<plural>``, scoped to ``namespace`` when the type is namespaced and one is given."""
    scope = f"/namespaces/{quote(namespace, safe='')}" if rt.namespaced and namespace else ""
    return f"{_group_version_prefix(rt)}{scope}/{rt.plural}"


def object_path(rt: ResourceType, namespace: str, name: str, subresource: str = "") -> str:
    path = f"{collection_path(rt, namespace)}/{quote(name, safe='')}"
    return f"{path}/{subresource}" if subresource else path


def patch_media_type(patch_type: str) -> str:
    media = _PATCH_MEDIA_TYPES.get(patch_type)
    if media is None:
        detail = f"unsupported patch type {patch_type!r}"
        raise Invalid("Patch", "", [FieldError("patchType", CauseType.NOT_SUPPORTED, detail)])
    return media


def patch_body(patch: Any) -> bytes:
    """Text and bytes travel as given (JSON, or YAML for apply); anything else is encoded as JSON."""
    if isinstance(patch, bytes):
        return patch
    if isinstance(patch, str):
        return patch.encode()
    return json.dumps(patch, separators=(",", ":")).encode()


def namespace_for(rt: ResourceType, obj: Object) -> str:
    """The namespace a write of ``obj`` goes to: required for namespaced types, none for cluster ones."""
    meta = obj.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    if rt.namespaced and not namespace:
        detail = "namespace is required for a namespaced resource"
        raise Invalid(rt.kind, str(meta.get("name", "")), [_required("metadata.namespace", detail)])
    return namespace if rt.namespaced else ""


def name_for(rt: ResourceType, obj: Object) -> str:
    name = str((obj.get("metadata") or {}).get("name") or "")
    if not name:
        raise Invalid(rt.kind, "", [_required("metadata.name", "name is required")])
    return name


def _required(path: str, detail: str) -> FieldError:
    return FieldError(path, CauseType.REQUIRED, detail)


def with_type(rt: ResourceType, obj: Object) -> Object:
    """``obj`` with ``apiVersion`` and ``kind`` set (a real API server omits them on list items)."""
    return {**obj, "apiVersion": rt.api_version, "kind": rt.kind}


def list_params(options: ListOptions) -> dict[str, str]:
    params = {"labelSelector": options.label_selector, "fieldSelector": options.field_selector}
    if options.limit:
        params["limit"] = str(options.limit)
    params["continue"] = options.continue_token
    return {k: v for k, v in params.items() if v}


def watch_params(
    options: ListOptions, resource_version: str, bookmarks: bool, timeout: float | None
) -> dict[str, str]:
    """Query of a watch; ``timeoutSeconds`` is whole seconds on the wire, so a fraction rounds up."""
    params = {k: v for k, v in list_params(options).items() if k in ("labelSelector", "fieldSelector")}
    params["watch"] = "true"
    if resource_version:
        params["resourceVersion"] = resource_version
    if bookmarks:
        params["allowWatchBookmarks"] = "true"
    if timeout is not None:
        params["timeoutSeconds"] = str(max(1, math.ceil(timeout)))
    return params


def delete_body(
    propagation: str, preconditions: Mapping[str, str] | None, grace_period: int | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
    if preconditions:
        body["preconditions"] = dict(preconditions)
    if grace_period is not None:
        body["gracePeriodSeconds"] = grace_period
    return body


def object_list(rt: ResourceType, body: Any) -> ObjectList:
    if not isinstance(body, dict):
        raise ServerError(
            "the server answered a list with a non-object body", code=500, reason="InternalError"
        )
    meta = body.get("metadata") or {}
    remaining = meta.get("remainingItemCount")
    return ObjectList(
        [with_type(rt, item) for item in body.get("items") or []],
        str(meta.get("resourceVersion", "")),
        str(meta.get("continue") or ""),
        int(remaining) if remaining is not None else None,
    )


def resource_version_of(obj: Object) -> int:
    """The numeric resourceVersion (opaque on the wire; every known server uses an integer revision)."""
    raw = (obj.get("metadata") or {}).get("resourceVersion", "")
    return int(raw) if str(raw).isdigit() else 0


def watch_event(rt: ResourceType, line: bytes | str) -> WatchEvent:
    """One newline-delimited watch event; an ``ERROR`` event raises the ``Status`` it carries."""
    event = json.loads(line)
    kind, obj = str(event.get("type", "")), event.get("object") or {}
    if kind == "ERROR":
        raise error_from_status(int(obj.get("code") or 500), obj)
    if kind == EventType.BOOKMARK.value:
        return WatchEvent(EventType.BOOKMARK, obj, resource_version_of(obj))
    typed = obj if obj.get("kind") == "Table" else with_type(rt, obj)  # a Table watch (``kubectl get -w``)
    return WatchEvent(EventType(kind), typed, resource_version_of(obj))


def _causes(details: Mapping[str, Any]) -> list[FieldError]:
    out = []
    for cause in details.get("causes") or []:
        if not isinstance(cause, dict):
            continue
        try:
            kind = CauseType(str(cause.get("reason", "")))
        except ValueError:
            kind = CauseType.INVALID
        out.append(FieldError(str(cause.get("field", "")), kind, str(cause.get("message", ""))))
    return out


_BY_REASON: Mapping[str, type[ApiError]] = {
    "NotFound": NotFound,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Expired": Gone,
    "Gone": Gone,
    "Unauthorized": Unauthorized,
}
_BY_CODE: Mapping[int, type[ApiError]] = {401: Unauthorized, 404: NotFound, 409: Conflict, 410: Gone}


def error_from_status(code: int, body: Any) -> ApiError:
    """The gangplane exception for an HTTP error: its ``Status`` body when there is one, else the code."""
    status = body if isinstance(body, dict) and body.get("kind") == "Status" else {}
    message = str(status.get("message") or (body if isinstance(body, str) else "") or f"HTTP {code}")
    reason = str(status.get("reason") or "")
    code = int(status.get("code") or code)
    details = status.get("details") or {}
    kind, name, causes = str(details.get("kind", "")), str(details.get("name", "")), _causes(details)
    err: ApiError
    if code in (403, 422):
        err = (Forbidden if code == 403 else Invalid)(kind, name, causes)
        err.message, err.args = message, (message,)
        return err
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code)
    if cls is None:
        return ServerError(message, code=code, reason=reason or "InternalError", kind=kind, name=name)
    return cls(message, kind=kind, name=name, causes=causes)


__all__ = [
    "APPLY_PATCH",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "TABLE_ACCEPT",
    "ServerError",
    "collection_path",
    "delete_body",
    "error_from_status",
    "list_params",
    "name_for",
    "namespace_for",
    "object_list",
    "object_path",
    "patch_body",
    "patch_media_type",
    "resource_version_of",
    "watch_event",
    "watch_params",
    "with_type",
]
