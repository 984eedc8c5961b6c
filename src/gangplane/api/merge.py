"""Strategic merge of wire dicts, for runtime patches and ``resourcesPerNode`` (pure).

Follows Kubernetes strategic-merge-patch for the fields Trainer patches: maps merge recursively, lists whose
items have a merge key merge item by item (new items appended, order of existing kept), other lists are
replaced, and ``None`` in the patch deletes the key.
"""

from __future__ import annotations

import copy
from typing import Any

# Field name -> merge key, as declared by the Kubernetes and JobSet Go types.
MERGE_KEYS: dict[str, str] = {
    "replicatedJobs": "name",
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "schedulingGates": "name",
    "imagePullSecrets": "name",
    "targets": "jobName",
}


def strategic_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """A new dict: ``patch`` merged onto ``base``; neither argument is changed."""
    merged = copy.deepcopy(base)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = strategic_merge(merged[key], value)
        elif isinstance(value, list) and key in MERGE_KEYS and isinstance(merged.get(key), list):
            merged[key] = merge_list(merged[key], value, MERGE_KEYS[key])
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def merge_list(base: list[Any], patch: list[Any], merge_key: str) -> list[Any]:
    """Merge list items by ``merge_key``: matching items merge, the rest of the patch is appended."""
    merged = copy.deepcopy(base)
    index = {item.get(merge_key): i for i, item in enumerate(merged) if isinstance(item, dict)}
    for item in patch:
        key = item.get(merge_key) if isinstance(item, dict) else None
        if key is not None and key in index:
            merged[index[key]] = strategic_merge(merged[index[key]], item)
        else:
            merged.append(copy.deepcopy(item))
    return merged


def upsert_by_name(items: list[Any], new: Any) -> list[Any]:
    """Replace the item with ``new``'s name, or append ``new`` (models or dicts with a ``name``)."""
    name = new["name"] if isinstance(new, dict) else new.name
    names = [i["name"] if isinstance(i, dict) else i.name for i in items]
    return (
        [new if n == name else i for n, i in zip(names, items, strict=True)]
        if name in names
        else [*items, new]
    )
