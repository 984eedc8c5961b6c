"""Patch documents, as pure functions from (object, patch) to a new object; inputs are never mutated.

- JSON merge patch (RFC 7386): maps merge recursively, ``null`` deletes, everything else replaces.
- JSON patch (RFC 6902): add, remove, replace, move, copy, test over JSON pointers (RFC 6901).
- Strategic merge patch: ``api.merge.strategic_merge``, the one implementation the runtime's patches use too
  (list keys, ``$patch`` directives, bad directives rejected).

Every malformed patch raises ``errors.Invalid`` rather than half-applying.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from gangplane.api.merge import MERGE_KEYS as MERGE_KEYS  # re-exported for apply.py
from gangplane.api.merge import bad_patch
from gangplane.api.merge import strategic_merge as strategic_merge_patch
from gangplane.store.objects import clone

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 MergePatch(target, patch)."""
    if not isinstance(patch, dict):
        return clone(patch)
    out = clone(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_patch(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(node: list[Any], token: str, *, adding: bool) -> int:
    if adding and token == "-":
        return len(node)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise bad_patch(f"invalid array index {token!r}")
    i = int(token)
    if i > len(node) or (i == len(node) and not adding):
        raise bad_patch(f"array index {i} out of range")
    return i


def _resolve(doc: Any, tokens: list[str]) -> Any:
    node = doc
    for token in tokens:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, adding=False)]
        else:
            raise bad_patch(f"path /{'/'.join(tokens)} does not exist")
    return node


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return clone(value)
    parent = _resolve(doc, tokens[:-1])
    if isinstance(parent, dict):
        parent[tokens[-1]] = clone(value)
    elif isinstance(parent, list):
        parent.insert(_index(parent, tokens[-1], adding=True), clone(value))
    else:
        raise bad_patch("add target's parent is not a container")
    return doc


def _remove(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        raise bad_patch("cannot remove the whole document")
    parent = _resolve(doc, tokens[:-1])
    if isinstance(parent, dict) and tokens[-1] in parent:
        del parent[tokens[-1]]
    elif isinstance(parent, list):
        del parent[_index(parent, tokens[-1], adding=False)]
    else:
        raise bad_patch(f"path /{'/'.join(tokens)} does not exist")
    return doc


def _op_arg(op: Mapping[str, Any], name: str) -> Any:
    if name not in op:
        raise bad_patch(f"operation {op.get('op')!r} needs {name!r}", dict(op))
    return op[name]


def _apply_op(doc: Any, op: Mapping[str, Any]) -> Any:
    kind, path = op.get("op"), _pointer(str(_op_arg(op, "path")))
    if kind == "add":
        return _add(doc, path, _op_arg(op, "value"))
    if kind == "remove":
        return _remove(doc, path)
    if kind == "replace":
        _resolve(doc, path)
        return _add(_remove(doc, path), path, _op_arg(op, "value")) if path else clone(op["value"])
    if kind in ("move", "copy"):
        source = _pointer(str(_op_arg(op, "from")))
        value = clone(_resolve(doc, source))
        return _add(_remove(doc, source) if kind == "move" else doc, path, value)
    if kind == "test":
        if _resolve(doc, path) != _op_arg(op, "value"):
            raise bad_patch(f"test failed at {op['path']}")
        return doc
    raise bad_patch(f"unknown operation {kind!r}")


def json_patch(target: Any, patch: Any) -> Any:
    """RFC 6902: all operations or none."""
    if not isinstance(patch, list) or not all(isinstance(op, dict) for op in patch):
        raise bad_patch("a JSON patch is a list of operation objects")
    doc = clone(target)
    for op in patch:
        doc = _apply_op(doc, op)
    return doc


_BY_TYPE: Mapping[str, Callable[[Any, Any], Any]] = {
    MERGE_PATCH: merge_patch,
    "merge": merge_patch,
    JSON_PATCH: json_patch,
    "json": json_patch,
    STRATEGIC_MERGE_PATCH: strategic_merge_patch,
    "strategic": strategic_merge_patch,
}


def decode(patch: Any, patch_type: str) -> Any:
    """A body as sent on the wire (bytes or text) as JSON data; apply bodies may be YAML."""
    if isinstance(patch, bytes):
        patch = patch.decode()
    if not isinstance(patch, str):
        return patch
    try:
        return yaml.load(patch, Loader=yaml.CSafeLoader) if is_apply(patch_type) else json.loads(patch)
    except (ValueError, yaml.YAMLError) as exc:
        raise bad_patch(f"cannot decode {patch_type} body") from exc


def patcher(patch: Any, patch_type: str) -> Callable[[Any], Any]:
    """A function applying ``patch`` (decoded once) to a target; apply patches are handled by ``apply.py``."""
    fn = _BY_TYPE.get(patch_type)
    if fn is None:
        raise bad_patch(f"unsupported patch type {patch_type!r}")
    body = decode(patch, patch_type)
    return lambda target: fn(target, body)


def is_apply(patch_type: str) -> bool:
    return patch_type in (APPLY_PATCH, "apply", "application/apply-patch+json")
