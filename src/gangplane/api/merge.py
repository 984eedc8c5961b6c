"""Strategic merge of wire dicts: the one implementation, for runtime patches and ``resourcesPerNode`` (runtime
core) and for ``application/strategic-merge-patch+json`` requests (store). Pure; inputs are never mutated.

Kubernetes strategic-merge-patch over the list keys the Go types declare (``MERGE_KEYS``): maps merge
recursively, ``null`` deletes a key, lists named in ``MERGE_KEYS`` merge item by item on their key (new items
appended, order of existing kept), other lists (``tolerations`` among them) are replaced whole. Directives:
``$patch: delete`` removes an item or map, ``$patch: replace`` replaces a map or list, ``$patch: merge`` is the
default; ``$setElementOrder/<list>`` and ``$retainKeys`` are accepted and ignored. Anything else
(an unknown ``$patch`` value, an unknown ``$`` directive, a keyed list item without its key) raises
``errors.Invalid`` (422) rather than half-applying, as the API server refuses a bad patch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gangplane.api.jsondata import clone
from gangplane.errors import CauseType, FieldError, Invalid

# Field name -> merge key, as declared by the Kubernetes and JobSet Go types (patchMergeKey / listMapKey).
MERGE_KEYS: Mapping[str, str] = {
    "replicatedJobs": "name",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "ports": "containerPort",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "conditions": "type",
    "ownerReferences": "uid",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "schedulingGates": "name",
    "targets": "jobName",
}
_DIRECTIVES = ("merge", "replace", "delete")
_IGNORED_PREFIXES = ("$setElementOrder/", "$retainKeys", "$deleteFromPrimitiveList/")


def bad_patch(detail: str, value: Any = None) -> Invalid:
    return Invalid("Patch", "", [FieldError("patch", CauseType.INVALID, detail, value)])


def _directive(value: Any) -> Any:
    directive = value.get("$patch") if isinstance(value, dict) else None
    if directive is not None and directive not in _DIRECTIVES:
        raise bad_patch(f"unknown $patch directive {directive!r} (merge, replace or delete)", directive)
    return directive


def _merge_keyed_list(live: Any, patch: list[Any], key: str) -> list[Any]:
    if any(_directive(item) == "replace" for item in patch):
        return [clone(i) for i in patch if _directive(i) != "replace"]
    out = [clone(i) for i in live] if isinstance(live, list) else []
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise bad_patch(f"list item has no merge key {key!r}", item)
        at = next(
            (i for i, cur in enumerate(out) if isinstance(cur, dict) and cur.get(key) == item[key]), None
        )
        if _directive(item) == "delete":
            out = [cur for j, cur in enumerate(out) if j != at]
        elif at is None:
            out.append(strategic_merge({}, item))
        else:
            out[at] = strategic_merge(out[at], item)
    return out


def _value(field: str, live: Any, value: Any) -> Any:
    if isinstance(value, dict):
        return strategic_merge(live, value)
    if isinstance(value, list) and field in MERGE_KEYS:
        return _merge_keyed_list(live, value, MERGE_KEYS[field])
    return clone(value)


def strategic_merge(target: Any, patch: Any) -> Any:
    """``patch`` strategically merged onto ``target`` (a new value)."""
    if not isinstance(patch, dict):
        return clone(patch)
    directive = _directive(patch)
    if directive == "replace":
        return {k: clone(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    out = clone(target) if isinstance(target, dict) else {}
    for field, value in patch.items():
        if field.startswith("$"):
            if field != "$patch" and not field.startswith(_IGNORED_PREFIXES):
                raise bad_patch(f"unknown strategic merge directive {field!r}", field)
            continue
        if value is None or _directive(value) == "delete":
            out.pop(field, None)
        else:
            out[field] = _value(field, out.get(field), value)
    return out


def upsert_by_name(items: list[Any], new: Any) -> list[Any]:
    """Replace the item with ``new``'s name, or append ``new`` (models or dicts with a ``name``)."""
    name = new["name"] if isinstance(new, dict) else new.name
    names = [i["name"] if isinstance(i, dict) else i.name for i in items]
    return (
        [new if n == name else i for n, i in zip(names, items, strict=True)]
        if name in names
        else [*items, new]
    )
