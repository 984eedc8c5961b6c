"""Manifests in and out: YAML/JSON documents <-> plain dicts <-> typed models, dispatched on apiVersion/kind.

Contracts:
- Loading never guesses: a YAML or JSON syntax error is a ``ManifestError`` naming the file and line; a
  document that is not a mapping is a ``ManifestError`` too. ``kind: List`` documents are expanded into their
  items, as kubectl does.
- ``to_model`` reports *every* schema problem at once as an ``Invalid`` (422) whose causes carry Kubernetes
  field paths (``spec.trainer.env[2].name``), never pydantic's tuples.
- Dumping keeps key order as given, so a loaded manifest is written back in the user's order.

This module does file I/O only in ``load_paths``; everything else is pure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from gangplane.api import jobset, scheduling, trainer
from gangplane.api.base import ApiModel
from gangplane.api.core import Node, Pod
from gangplane.api.corev1_config import ConfigMap, Secret
from gangplane.errors import CauseType, FieldError, Invalid, ManifestError

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

MODELS: dict[tuple[str, str], type[ApiModel]] = {
    (trainer.GROUP, trainer.TRAINJOB_KIND): trainer.TrainJob,
    (trainer.GROUP, trainer.TRAINING_RUNTIME_KIND): trainer.TrainingRuntime,
    (trainer.GROUP, trainer.CLUSTER_TRAINING_RUNTIME_KIND): trainer.ClusterTrainingRuntime,
    ("jobset.x-k8s.io", "JobSet"): jobset.JobSet,
    ("", "Pod"): Pod,
    ("", "Node"): Node,
    ("", "ConfigMap"): ConfigMap,
    ("", "Secret"): Secret,
    **{
        (api_version.rpartition("/")[0], kind): model
        for (api_version, kind), model in scheduling.MODELS.items()
    },
}
"""(API group, kind) -> model. Callers may add entries (e.g. the scheduling kinds); keys never change."""


def group_of(api_version: str) -> str:
    """``trainer.kubeflow.org/v1alpha1`` -> ``trainer.kubeflow.org``; ``v1`` -> ``""`` (the core group)."""
    return api_version.rpartition("/")[0]


def model_for(api_version: str, kind: str) -> type[ApiModel] | None:
    """The model registered for this apiVersion's group and kind, or None."""
    return MODELS.get((group_of(api_version), kind))


# ---------------------------------------------------------------- loading


def parse_documents(text: str, source: str) -> list[dict[str, Any]]:
    """Every non-empty document of a multi-document YAML (or JSON) text, ``kind: List`` expanded."""
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise ManifestError(_yaml_message(exc, source)) from None
    objs: list[dict[str, Any]] = []
    for number, doc in enumerate(docs, start=1):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise ManifestError(f"{source}: document {number} is a {type(doc).__name__}, not a mapping")
        objs.extend(_expand_list(doc, source, number))
    return objs


def _yaml_message(exc: yaml.YAMLError, source: str) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
    problem = getattr(exc, "problem", None) or str(exc)
    return f"{where}: invalid YAML: {problem}"


def _expand_list(doc: dict[str, Any], source: str, number: int) -> list[dict[str, Any]]:
    if doc.get("kind") != "List" or not str(doc.get("apiVersion", "v1")).endswith("v1"):
        return [doc]
    items = doc.get("items") or []
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ManifestError(f"{source}: document {number}: List items must be mappings")
    return list(items)


def load_paths(paths: list[Path]) -> list[tuple[str, dict[str, Any]]]:
    """(source file, object) for every object in the given files and directories.

    Directories are searched recursively for ``*.yaml``, ``*.yml`` and ``*.json``, in sorted order; files
    named explicitly are read whatever their suffix. Objects keep their order within a file.
    """
    out: list[tuple[str, dict[str, Any]]] = []
    for path in paths:
        for file in _manifest_files(path):
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ManifestError(f"{file}: cannot read: {exc}") from None
            out.extend((str(file), obj) for obj in parse_documents(text, str(file)))
    return out


def _manifest_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
    if path.is_file():
        return [path]
    raise ManifestError(f"{path}: no such file or directory")


# ---------------------------------------------------------------- models


def to_model(obj: dict[str, Any]) -> ApiModel:
    """The typed model of a wire dict; ``Invalid`` with every schema error as a Kubernetes field error."""
    api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
    name = _name_of(obj)
    if not api_version or not kind:
        missing = "apiVersion" if not api_version else "kind"
        raise Invalid(kind or "Object", name, [FieldError(missing, CauseType.REQUIRED, "Required value")])
    cls = model_for(api_version, kind)
    if cls is None:
        detail = f'no kind "{kind}" is registered for version "{api_version}"'
        raise Invalid(kind, name, [FieldError("kind", CauseType.NOT_SUPPORTED, detail, kind)])
    try:
        return cls.model_validate(obj)
    except ValidationError as exc:
        raise Invalid(kind, name, field_errors(exc)) from None


def _name_of(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name") or "") if isinstance(meta, dict) else ""


def field_errors(exc: ValidationError) -> list[FieldError]:
    """pydantic errors as Kubernetes field errors, in pydantic's order."""
    return [_field_error(e) for e in exc.errors(include_url=False)]


def field_path(loc: tuple[int | str, ...]) -> str:
    """``('spec', 'trainer', 'env', 2, 'name')`` -> ``spec.trainer.env[2].name``.

    Locations use the wire (camelCase) keys because models are validated by alias; entries pydantic adds for
    union members or validator functions (``function-after[...]``) are not fields and are dropped.
    """
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif "[" not in part:
            path += f".{part}" if path else part
    return path


_TYPE_NAMES = {"int": "integer", "string": "string", "bool": "boolean", "float": "number", "list": "array"}
_TYPE_NAMES |= {"dict": "object", "model": "object", "model_attributes": "object"}


def _field_error(err: ErrorDetails) -> FieldError:
    kind, path = err["type"], field_path(err["loc"])
    value = err.get("input")
    if kind == "missing":
        return FieldError(path, CauseType.REQUIRED, "Required value")
    if kind == "extra_forbidden":
        return FieldError(path, CauseType.UNKNOWN_FIELD, "field not declared in schema")
    base = kind.split("_")[0] if kind != "model_attributes_type" else "model_attributes"
    if base in _TYPE_NAMES and kind.endswith(("_type", "_parsing", "_from_float")):
        return FieldError(path, CauseType.TYPE_INVALID, f"must be of type {_TYPE_NAMES[base]}", _shown(value))
    if kind in ("too_long", "string_too_long"):
        return FieldError(path, CauseType.TOO_LONG, err["msg"], _shown(value))
    if kind in ("literal_error", "enum"):
        return FieldError(path, CauseType.NOT_SUPPORTED, err["msg"], _shown(value))
    return FieldError(path, CauseType.INVALID, err["msg"].removeprefix("Value error, "), _shown(value))


def _shown(value: Any) -> Any:
    """Scalars are shown in the error; containers would only repeat the manifest."""
    return value if isinstance(value, str | int | float | bool) else None


# ---------------------------------------------------------------- dumping


class _Dumper(yaml.SafeDumper):
    """Safe dumper writing multi-line strings (scripts) as literal blocks."""


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def dump_yaml(objs: list[dict[str, Any]]) -> str:
    """Multi-document YAML (``---`` between documents), keys in the order given."""
    return yaml.dump_all(
        objs, Dumper=_Dumper, sort_keys=False, explicit_start=len(objs) > 1, allow_unicode=True, width=2**16
    )


def dump_json(objs: list[dict[str, Any]]) -> str:
    """One object as itself, otherwise a ``v1`` ``List`` (as ``kubectl get -o json``); keys as given."""
    if len(objs) == 1:
        return json.dumps(objs[0], indent=4, ensure_ascii=False) + "\n"
    doc = {"apiVersion": "v1", "items": objs, "kind": "List", "metadata": {"resourceVersion": ""}}
    return json.dumps(doc, indent=4, ensure_ascii=False) + "\n"


__all__ = [
    "MANIFEST_SUFFIXES",
    "MODELS",
    "dump_json",
    "dump_yaml",
    "field_errors",
    "field_path",
    "group_of",
    "load_paths",
    "model_for",
    "parse_documents",
    "to_model",
]
