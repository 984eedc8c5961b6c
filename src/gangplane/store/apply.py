"""Server-side apply: field ownership in ``metadata.managedFields`` (FieldsV1) and apply merges.

A field path is a tuple of FieldsV1 tokens: ``f:<name>`` for a map field and ``k:{"name":"x"}`` for an item
of a list merged by key (the keys of ``patch.MERGE_KEYS``); any other list is one atomic leaf. A manager is
identified by (name, operation, subresource), as in Kubernetes.

Applying a configuration:
1. fields owned by another manager whose live value differs from the applied one conflict (HTTP 409 listing
   every field and manager) unless ``force``, which moves their ownership to the applier;
2. fields this manager applied before and omits now are removed unless another manager owns them (or
   something beneath them);
3. the configuration is merged into the live object and becomes this manager's field set.

Non-apply writes with a field manager take ownership of the fields they change (operation ``Update``),
without conflicts. ``$retainKeys``, set-typed primitive lists and per-version conversion are not modelled.
These functions are pure: they return new objects and never touch the store.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from gangplane.errors import CauseType, Conflict, FieldError
from gangplane.store.base import Object
from gangplane.store.objects import clone, meta
from gangplane.store.patch import MERGE_KEYS

Path = tuple[str, ...]
_MISSING: Any = object()
_TRACKED_METADATA = ("labels", "annotations", "finalizers", "ownerReferences")


@dataclass(frozen=True, slots=True)
class ManagedEntry:
    manager: str
    operation: str
    subresource: str
    api_version: str
    time: str
    fields: frozenset[Path]

    @property
    def identity(self) -> tuple[str, str, str]:
        return (self.manager, self.operation, self.subresource)

    def to_json(self) -> dict[str, Any]:
        out = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": to_fields_v1(self.fields),
        }
        return out | ({"subresource": self.subresource} if self.subresource else {})


def _item_token(field: str, item: Any) -> str | None:
    key = MERGE_KEYS.get(field)
    if key is None or not isinstance(item, dict) or key not in item:
        return None
    return "k:" + json.dumps({key: item[key]}, separators=(",", ":"), sort_keys=True)


def field_set(value: Any, path: Path = (), field: str = "") -> set[Path]:
    """Every leaf path of ``value``, plus the item path of every keyed list item."""
    if isinstance(value, dict) and value:
        return {p for k, v in value.items() for p in field_set(v, (*path, f"f:{k}"), k)}
    tokens = [_item_token(field, i) for i in value] if isinstance(value, list) and value else []
    if not tokens or None in tokens:
        return {path}
    out: set[Path] = set()
    for token, item in zip(tokens, value, strict=True):
        assert token is not None
        out.add((*path, token))
        out |= field_set(item, (*path, token))
    return out


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    members = sorted(paths)
    for path in members:
        node = tree
        for token in path:
            node = node.setdefault(token, {})
    for path in members:
        node = tree
        for token in path:
            node = node[token]
        if node and "." not in node:
            node["."] = {}
    return tree


def from_fields_v1(tree: dict[str, Any], prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    for token, child in tree.items():
        if token == ".":
            out.add(prefix)
        elif child:
            out |= from_fields_v1(child, (*prefix, token))
        else:
            out.add((*prefix, token))
    return out


def read_entries(obj: Object) -> list[ManagedEntry]:
    return [
        ManagedEntry(
            e.get("manager", ""),
            e.get("operation", ""),
            e.get("subresource", ""),
            e.get("apiVersion", ""),
            e.get("time", ""),
            frozenset(from_fields_v1(e.get("fieldsV1") or {})),
        )
        for e in meta(obj).get("managedFields") or []
        if isinstance(e, dict)
    ]


def trackable(obj: Object, *, has_status: bool, subresource: str) -> dict[str, Any]:
    """The part of an object whose fields have owners: not identity, not server-set metadata, and status
    only through the status subresource (for kinds that have one)."""
    if subresource == "status":
        return {"status": obj["status"]} if "status" in obj else {}
    out = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")}
    tracked = {k: v for k, v in meta(obj).items() if k in _TRACKED_METADATA}
    if tracked:
        out["metadata"] = tracked
    if not has_status and "status" in obj:
        out["status"] = obj["status"]
    return out


def get_at(obj: Any, path: Path) -> Any:
    node = obj
    for token in path:
        if token.startswith("f:") and isinstance(node, dict):
            node = node.get(token[2:], _MISSING)
        elif token.startswith("k:") and isinstance(node, list):
            wanted = json.loads(token[2:])
            node = next((i for i in node if isinstance(i, dict) and wanted.items() <= i.items()), _MISSING)
        else:
            return _MISSING
    return node


def _remove_at(obj: Any, path: Path) -> None:
    parent, token = get_at(obj, path[:-1]), path[-1]
    if token.startswith("f:") and isinstance(parent, dict):
        parent.pop(token[2:], None)
    elif token.startswith("k:") and isinstance(parent, list):
        item = get_at(obj, path)
        parent[:] = [i for i in parent if i is not item]


def merge(live: Any, applied: Any, field: str = "") -> Any:
    """Merge an applied configuration into a live value: maps and keyed lists merge, the rest replaces."""
    if isinstance(applied, dict) and isinstance(live, dict):
        return {**clone(live), **{k: merge(live.get(k), v, k) for k, v in applied.items()}}
    keyed = isinstance(applied, list) and all(_item_token(field, i) for i in applied)
    if keyed and field in MERGE_KEYS and isinstance(live, list):
        out = clone(live)
        for item in applied:
            token = _item_token(field, item)
            current = get_at(out, (token,)) if token else _MISSING
            if current is _MISSING:
                out.append(clone(item))
            else:
                out[next(i for i, x in enumerate(out) if x is current)] = merge(current, item)
        return out
    return clone(applied)


def _display(path: Path) -> str:
    parts = []
    for token in path:
        if token.startswith("f:"):
            parts.append("." + token[2:])
        else:
            ((k, v),) = json.loads(token[2:]).items()
            parts.append(f"[{k}={json.dumps(v)}]")
    return "".join(parts)


def _conflicts(live: Object, config: Any, fields: set[Path], others: list[ManagedEntry]) -> list[FieldError]:
    found = []
    for entry in others:
        for path in sorted(fields & entry.fields):
            if path[-1].startswith("k:") or get_at(live, path) == get_at(config, path):
                continue
            detail = f'conflict with "{entry.manager}"' + (
                " using " + entry.api_version if entry.api_version else ""
            )
            found.append(FieldError(_display(path), CauseType.INVALID, detail))
    return found


def _owned_below(path: Path, owned: set[Path]) -> bool:
    return any(p[: len(path)] == path for p in owned)


def _remove_unowned(obj: Any, dropped: set[Path], owned: set[Path]) -> None:
    """Remove fields a manager stopped applying, outermost first, keeping what others own."""
    removed: list[Path] = []
    for path in sorted(dropped, key=len):
        if not any(path[: len(r)] == r for r in removed) and not _owned_below(path, owned):
            _remove_at(obj, path)
            removed.append(path)


def _without(entries: list[ManagedEntry], paths: set[Path]) -> list[ManagedEntry]:
    trimmed = [replace(e, fields=e.fields - paths) for e in entries]
    return [e for e in trimmed if e.fields]


def _with_entries(obj: Object, entries: list[ManagedEntry]) -> Object:
    m = obj.setdefault("metadata", {})
    m.pop("managedFields", None)
    if entries:
        m["managedFields"] = [e.to_json() for e in entries]
    return obj


@dataclass(frozen=True, slots=True)
class ApplyRequest:
    manager: str
    force: bool
    has_status: bool
    subresource: str
    now: str


def apply_config(live: Object | None, applied: Object, req: ApplyRequest) -> Object:
    """The object after ``req.manager`` applies ``applied`` to ``live`` (None: the object is new)."""
    current = clone(live) if live is not None else {}
    entries = read_entries(current)
    mine = (req.manager, "Apply", req.subresource)
    config = trackable(applied, has_status=req.has_status, subresource=req.subresource)
    fields = field_set(config) - {()}
    others = [e for e in entries if e.identity != mine]
    conflicts = _conflicts(current, config, fields, others)
    if conflicts and not req.force:
        listed = "\n".join(f"- {c.detail}: {c.path}" for c in conflicts)
        message = f"Apply failed with {len(conflicts)} conflict{'s' if len(conflicts) > 1 else ''}:\n{listed}"
        raise Conflict(
            message, kind=applied.get("kind", ""), name=meta(applied).get("name", ""), causes=conflicts
        )
    others = _without(others, fields) if req.force else others
    previous = next((set(e.fields) for e in entries if e.identity == mine), set())
    _remove_unowned(current, previous - fields, {p for e in others for p in e.fields})
    merged = merge(current, config)
    for key in ("apiVersion", "kind"):
        merged.setdefault(key, applied.get(key))
    merged_meta = merged.setdefault("metadata", {})
    for key in ("name", "namespace"):
        if key in meta(applied):
            merged_meta.setdefault(key, meta(applied)[key])
    api_version = str(applied.get("apiVersion", ""))
    mine_entry = ManagedEntry(*mine, api_version, req.now, frozenset(fields))
    return _with_entries(merged, [*others, mine_entry] if fields else others)


def record_update(old: Object, new: Object, req: ApplyRequest) -> Object:
    """``new`` with ``req.manager`` (operation Update) owning the fields it changed from ``old``."""
    before = trackable(old, has_status=req.has_status, subresource=req.subresource)
    after = trackable(new, has_status=req.has_status, subresource=req.subresource)
    changed = {p for p in field_set(after) - {()} if get_at(before, p) != get_at(after, p)}
    gone = {p for p in field_set(before) - {()} if get_at(after, p) is _MISSING}
    if not changed and not gone:
        return new
    mine = (req.manager, "Update", req.subresource)
    entries = read_entries(new)
    previous = next((e.fields for e in entries if e.identity == mine), frozenset())
    others = _without([e for e in entries if e.identity != mine], changed | gone)
    fields = frozenset((previous | changed) - gone)
    entry = ManagedEntry(*mine, str(new.get("apiVersion", "")), req.now, fields)
    return _with_entries(clone(new), [*others, entry] if fields else others)
