"""Check wire dicts against the upstream CRDs in ``shared/crds`` (a test helper, never for product code).

``validate_against_crd(obj)`` finds the CRD by the object's apiVersion group and kind, takes the
openAPIV3Schema of the served version named in apiVersion, and validates with jsonschema (Draft 2020-12) after
translating the Kubernetes extensions the way the API server applies them:

- ``x-kubernetes-int-or-string``: integer or string (the CRD's own ``pattern`` still checks strings);
- structural schemas reject unknown fields: an object with ``properties`` and without
  ``x-kubernetes-preserve-unknown-fields`` gets ``additionalProperties: false`` (kubectl's strict field
  validation), so a misspelt alias is caught;
- ``x-kubernetes-embedded-resource``: ``apiVersion``, ``kind`` and ``metadata`` are allowed;
- ``x-kubernetes-list-type: map``: items unique by ``x-kubernetes-list-map-keys`` (a missing key takes the
  item schema's default); ``set``: unique items;
- ``nullable: true``: null is allowed.

CEL rules (``x-kubernetes-validations``) and ``format`` are not checked. The top-level ``metadata`` is only
``type: object`` in a CRD and accepts any fields. Schemas are parsed once and cached.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator, ValidationError, validators

_REPO = Path(__file__).resolve().parents[1]
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SUBSCHEMA_MAPS = ("properties",)
_SUBSCHEMAS = ("additionalProperties", "items", "not")
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf")


def _find_shared() -> Path | None:
    env = os.environ.get("GANGPLANE_SHARED")
    candidates = [Path(env)] if env else []
    candidates += [_REPO / "shared", _REPO.parent / "shared"]
    return next((c for c in candidates if (c / "crds").is_dir()), None)


SHARED_DIR = _find_shared()
"""``shared/`` (``$GANGPLANE_SHARED``, else next to or inside the checkout); ``None`` when absent."""


def load_yaml(text: str) -> Any:
    """One YAML document, parsed by libyaml (the pure-Python loader takes seconds over the CRDs)."""
    return yaml.load(text, Loader=_LOADER)


def load_yaml_all(text: str) -> list[Any]:
    return list(yaml.load_all(text, Loader=_LOADER))


def validate_against_crd(obj: dict[str, Any]) -> list[str]:
    """Readable errors (``$.spec.x[0].y: message``), sorted by path; empty when ``obj`` is valid."""
    located = _locate(obj)
    if isinstance(located, str):
        return [located]
    validator = _validator(*located)
    errors = sorted(validator.iter_errors(obj), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    return [f"{error.json_path}: {error.message}" for error in errors]


def errors_for_schema(schema: dict[str, Any], instance: Any) -> list[str]:
    """``validate_against_crd`` for a bare openAPIV3Schema (to test the translation on small schemas)."""
    errors = _KubernetesValidator(_translate(schema)).iter_errors(instance)
    return sorted(f"{error.json_path}: {error.message}" for error in errors)


def normalize_int_or_string(obj: Any) -> Any:
    """A copy of ``obj`` with numbers at ``x-kubernetes-int-or-string`` positions written as strings.

    Quantities read from YAML (``nvidia.com/gpu: 2``) become ``"2"`` in the models; normalising both sides
    lets a round trip be compared semantically.
    """
    located = _locate(obj)
    if isinstance(located, str):
        raise LookupError(located)
    return _normalize(_raw_schema(*located), obj)


# ---------------------------------------------------------------- locating the schema


def _locate(obj: dict[str, Any]) -> tuple[str, str, str] | str:
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or "/" not in api_version or not isinstance(kind, str):
        return f"$: apiVersion group/version and kind are required, got {api_version!r} {kind!r}"
    group, version = api_version.rsplit("/", 1)
    crd = _crd(group, kind)
    if crd is None:
        return f"$: no CRD for {kind}.{group} in {SHARED_DIR}"
    served = [v["name"] for v in crd["spec"]["versions"] if v.get("served")]
    if version not in served:
        return f"$.apiVersion: {kind}.{group} serves {served}, not {version!r}"
    return group, kind, version


@functools.cache
def _crd(group: str, kind: str) -> dict[str, Any] | None:
    if SHARED_DIR is None:
        return None
    for path in sorted((SHARED_DIR / "crds").glob(f"{group}_*.yaml")):
        crd = yaml.load(path.read_text(), Loader=_LOADER)
        if crd["spec"]["group"] == group and crd["spec"]["names"]["kind"] == kind:
            return dict(crd)
    return None


@functools.cache
def _raw_schema(group: str, kind: str, version: str) -> dict[str, Any]:
    crd = _crd(group, kind)
    assert crd is not None
    entry = next(v for v in crd["spec"]["versions"] if v["name"] == version)
    return dict(entry["schema"]["openAPIV3Schema"])


@functools.cache
def _validator(group: str, kind: str, version: str) -> Any:
    return _KubernetesValidator(_translate(_raw_schema(group, kind, version)))


# ---------------------------------------------------------------- translating the Kubernetes extensions


def _translate(schema: dict[str, Any]) -> dict[str, Any]:
    out = _translate_children(schema)
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if schema.get("x-kubernetes-embedded-resource"):
        out["properties"] = {**_EMBEDDED, **out.get("properties", {})}
    closed = not schema.get("x-kubernetes-preserve-unknown-fields")
    if closed and "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    if schema.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True
    if out.pop("nullable", False):
        return {"anyOf": [{"type": "null"}, out]}
    return out


_EMBEDDED = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}}


def _translate_children(schema: dict[str, Any]) -> dict[str, Any]:
    out = dict(schema)
    for key in _SUBSCHEMA_MAPS:
        if key in schema:
            out[key] = {name: _translate(sub) for name, sub in schema[key].items()}
    for key in _SUBSCHEMAS:
        if isinstance(schema.get(key), dict):
            out[key] = _translate(schema[key])
    for key in _SUBSCHEMA_LISTS:
        if key in schema:
            out[key] = [_translate(sub) for sub in schema[key]]
    return out


def _list_map_keys(
    validator: Any, keys: list[str], instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    """``x-kubernetes-list-map-keys``: no two items of a ``map`` list share their key tuple."""
    if schema.get("x-kubernetes-list-type") != "map" or not isinstance(instance, list):
        return
    defaults = _key_defaults(schema, keys)
    seen: dict[tuple[Any, ...], int] = {}
    for index, item in enumerate(instance):
        if not isinstance(item, dict):
            continue
        key = tuple(item.get(k, defaults.get(k)) for k in keys)
        if key in seen:
            shown = dict(zip(keys, key, strict=True))
            yield ValidationError(f"items {seen[key]} and {index} have the same map key {shown}")
        seen.setdefault(key, index)


def _key_defaults(schema: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    properties = schema.get("items", {}).get("properties", {})
    return {k: properties[k]["default"] for k in keys if "default" in properties.get(k, {})}


_KubernetesValidator = validators.extend(Draft202012Validator, {"x-kubernetes-list-map-keys": _list_map_keys})


# ---------------------------------------------------------------- normalising int-or-string values


def _normalize(schema: dict[str, Any], value: Any) -> Any:
    if schema.get("x-kubernetes-int-or-string") and _is_number(value):
        return str(value)
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        other = extra if isinstance(extra, dict) else {}
        return {k: _normalize(properties.get(k, other), v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalize(schema.get("items", {}), item) for item in value]
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
