"""Pure parsing of what a request says: its path, query parameters, content types and DeleteOptions.

Nothing here touches the store or the network; handlers call these functions and act on the values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gangplane.errors import ApiError, BadRequest
from gangplane.server.resources import Registry, Served
from gangplane.store.base import ListOptions, Propagation


class MethodNotAllowed(ApiError):
    code = 405
    reason = "MethodNotAllowed"


class UnsupportedMediaType(ApiError):
    code = 415
    reason = "UnsupportedMediaType"


MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (MERGE_PATCH, JSON_PATCH, STRATEGIC_PATCH, APPLY_PATCH)
SUBRESOURCES = ("status", "log")


@dataclass(frozen=True, slots=True)
class Target:
    """The resource a request addresses. ``namespace`` is None for cluster scope or all namespaces."""

    served: Served
    namespace: str | None
    name: str = ""
    subresource: str = ""


def parse_target(registry: Registry, group: str, version: str, rest: list[str]) -> Target | None:
    """Resolve ``[namespaces/<ns>/]<plural>[/<name>[/<subresource>]]`` within one group version."""
    if len(rest) >= 3 and rest[0] == "namespaces":
        served = registry.find(group, version, rest[2])
        if served is not None and served.rt.namespaced:
            return _target(served, rest[1], rest[3:])
    if not rest:
        return None
    served = registry.find(group, version, rest[0])
    return None if served is None else _target(served, None, rest[1:])


def _target(served: Served, namespace: str | None, rest: list[str]) -> Target | None:
    if len(rest) > 2 or any(not part for part in rest):
        return None
    name = rest[0] if rest else ""
    sub = rest[1] if len(rest) == 2 else ""
    if sub and not _has_subresource(served, sub):
        return None
    return Target(served, namespace, name, sub)


def _has_subresource(served: Served, sub: str) -> bool:
    if sub == "status":
        return served.rt.has_status
    return sub == "log" and served.rt.group == "" and served.rt.kind == "Pod"


def flag(query: Mapping[str, str], key: str) -> bool:
    return query.get(key, "").lower() in ("1", "true")


def _int(query: Mapping[str, str], key: str, default: int = 0) -> int:
    raw = query.get(key, "")
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"invalid {key} {raw!r}: not an integer") from None
    if value < 0:
        raise BadRequest(f"invalid {key} {raw!r}: must not be negative")
    return value


# Event fields kubectl describe selects on; the store indexes only a few generic fields, so these are
# matched here, after the store has filtered by everything else.
EVENT_FIELDS = frozenset(
    [f"involvedObject.{f}" for f in ("kind", "namespace", "name", "uid", "apiVersion", "fieldPath")]
    + ["reason", "type", "reportingComponent"]
)


@dataclass(frozen=True, slots=True)
class FieldTerm:
    path: tuple[str, ...]
    value: str
    equal: bool

    def matches(self, obj: Mapping[str, Any]) -> bool:
        node: Any = obj
        for part in self.path:
            node = node.get(part) if isinstance(node, Mapping) else None
        return (
            ("" if node is None else str(node)) == self.value if self.equal else str(node or "") != self.value
        )


def split_field_selector(text: str) -> tuple[str, tuple[FieldTerm, ...]]:
    """(the part for the store, the ``EVENT_FIELDS`` terms matched by the server)."""
    kept, extra = [], []
    for term in (t.strip() for t in text.split(",") if t.strip()):
        key, op, value = _split_term(term)
        if key in EVENT_FIELDS:
            extra.append(FieldTerm(tuple(key.split(".")), value, op != "!="))
        else:
            kept.append(term)
    return ",".join(kept), tuple(extra)


def _split_term(term: str) -> tuple[str, str, str]:
    for op in ("!=", "==", "="):
        key, found, value = term.partition(op)
        if found:
            return key.strip(), op, value.strip()
    return term, "", ""


def list_options(query: Mapping[str, str], namespace: str | None) -> ListOptions:
    return ListOptions(
        namespace=namespace,
        label_selector=query.get("labelSelector", ""),
        field_selector=split_field_selector(query.get("fieldSelector", ""))[0],
        limit=_int(query, "limit"),
        continue_token=query.get("continue", ""),
    )


@dataclass(frozen=True, slots=True)
class WatchParams:
    resource_version: str
    bookmarks: bool
    timeout: float | None


def watch_params(query: Mapping[str, str]) -> WatchParams:
    seconds = _int(query, "timeoutSeconds")
    return WatchParams(query.get("resourceVersion", ""), flag(query, "allowWatchBookmarks"), seconds or None)


def dry_run(query: Mapping[str, str]) -> bool:
    """``dryRun=All``: the write is admitted and checked in full and nothing is stored."""
    value = query.get("dryRun", "")
    if value not in ("", "All"):
        raise BadRequest(f'unsupported dryRun value "{value}": only "All" is defined')
    return value == "All"


def patch_type(content_type: str) -> str:
    media = content_type.split(";", 1)[0].strip().lower()
    if media not in PATCH_TYPES:
        accepted = ", ".join(PATCH_TYPES)
        raise UnsupportedMediaType(f"the body of the request was in an unknown format - accepted: {accepted}")
    return media


def check_body_type(content_type: str, *, yaml_ok: bool = False) -> None:
    """Only JSON bodies (and YAML for apply); a 415 makes client-go retry protobuf requests as JSON."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media in ("", "application/json", "*/*", *PATCH_TYPES) or (yaml_ok and media.endswith("yaml")):
        return
    raise UnsupportedMediaType(
        f"the body of the request was in an unknown format: {media}; use application/json"
    )


def _propagation(value: object) -> Propagation:
    try:
        return Propagation(str(value))
    except ValueError:
        allowed = ", ".join(p.value for p in Propagation)
        raise BadRequest(f"propagationPolicy {value!r} is not supported; use one of {allowed}") from None


@dataclass(frozen=True, slots=True)
class DeleteParams:
    propagation: Propagation
    preconditions: dict[str, str] | None
    dry_run: bool = False
    grace_period: int | None = None  # DeleteOptions.gracePeriodSeconds (pods: store/graceful.py)


def delete_params(query: Mapping[str, str], body: Mapping[str, Any]) -> DeleteParams:
    """DeleteOptions from the body, overridden by query parameters, as the API server reads them."""
    policy: object = body.get("propagationPolicy") or Propagation.BACKGROUND.value
    if body.get("orphanDependents") is True:
        policy = Propagation.ORPHAN.value
    if "orphanDependents" in query:
        policy = Propagation.ORPHAN.value if flag(query, "orphanDependents") else Propagation.BACKGROUND.value
    policy = query.get("propagationPolicy", policy)
    in_body = body.get("dryRun") or []
    if not isinstance(in_body, list) or any(v != "All" for v in in_body):
        raise BadRequest(f'unsupported dryRun value {in_body!r}: only ["All"] is defined')
    return DeleteParams(
        _propagation(policy),
        _preconditions(body.get("preconditions")),
        dry_run(query) or bool(in_body),
        _grace_period(query, body),
    )


def _grace_period(query: Mapping[str, str], body: Mapping[str, Any]) -> int | None:
    """``gracePeriodSeconds`` from the query, else the body; an integer (negative ones count as 1 later)."""
    raw: object = query.get("gracePeriodSeconds", body.get("gracePeriodSeconds"))
    if raw is None or raw == "":
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        raise BadRequest(f"DeleteOptions.gracePeriodSeconds must be an integer, not {type(raw).__name__}")
    try:
        return int(raw)
    except ValueError:
        raise BadRequest(f"invalid gracePeriodSeconds {raw!r}: not an integer") from None


_PRECONDITION_FIELDS = ("uid", "resourceVersion")


def _preconditions(pre: object) -> dict[str, str] | None:
    """``metav1.Preconditions``: an object of optional strings; anything else is undecodable (400), and the
    delete must not go ahead on a precondition it could not read."""
    if pre is None:
        return None
    if not isinstance(pre, dict):
        raise BadRequest(f"DeleteOptions.preconditions must be an object, not {type(pre).__name__}")
    for key, value in pre.items():
        if key not in _PRECONDITION_FIELDS:
            raise BadRequest(f'DeleteOptions.preconditions: unknown field "{key}"')
        if value is not None and not isinstance(value, str):
            raise BadRequest(
                f"DeleteOptions.preconditions.{key} must be a string, not {type(value).__name__}"
            )
    return {k: v for k, v in pre.items() if v} or None


def delete_body(body: object) -> Mapping[str, Any]:
    """A DELETE body is a ``DeleteOptions`` object or nothing."""
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise BadRequest(f"DeleteOptions must be an object, not {type(body).__name__}")
    if body.get("propagationPolicy") is not None and not isinstance(body["propagationPolicy"], str):
        raise BadRequest("DeleteOptions.propagationPolicy must be a string")
    if body.get("orphanDependents") is not None and not isinstance(body["orphanDependents"], bool):
        raise BadRequest("DeleteOptions.orphanDependents must be a boolean")
    return body


def wants_table(accept: str) -> bool:
    """True when the client (kubectl get) prefers a ``meta.k8s.io`` Table over the object itself."""
    first = accept.split(",", 1)[0]
    params = {p.strip().split("=", 1)[0]: p.strip().partition("=")[2] for p in first.split(";")[1:]}
    return params.get("as") == "Table" and params.get("g") == "meta.k8s.io"


__all__ = [
    "APPLY_PATCH",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_PATCH",
    "BadRequest",
    "DeleteParams",
    "FieldTerm",
    "MethodNotAllowed",
    "Target",
    "UnsupportedMediaType",
    "WatchParams",
    "check_body_type",
    "delete_body",
    "delete_params",
    "dry_run",
    "flag",
    "list_options",
    "parse_target",
    "patch_type",
    "split_field_selector",
    "wants_table",
    "watch_params",
]
