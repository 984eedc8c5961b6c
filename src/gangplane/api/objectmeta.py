"""ObjectMeta checks as kube-apiserver makes them, for every kind the embedded API server stores.

Two stages, as upstream: ``type_errors`` finds what a typed decoder could not decode (a string where
``labels`` wants a map, ``ownerReferences: 5``) — upstream answers those 400 ``BadRequest`` before validation
runs; ``meta_errors`` then checks the values (apimachinery ``ValidateObjectMeta``) — 422 ``Invalid``.
Name rules are apimachinery's ``validation.IsDNS1123Subdomain``/``IsDNS1123Label``/``IsDNS1035Label``,
``IsQualifiedName`` and ``IsValidLabelValue`` (staging/src/k8s.io/apimachinery/pkg/util/validation).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from gangplane.errors import CauseType, FieldError

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
ANNOTATIONS_MAX_BYTES = 256 * 1024  # apimachinery TotalAnnotationSizeLimitB

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(f"^{_LABEL}$")
_DNS1123_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_DNS1035_LABEL = re.compile("^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED = re.compile("^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile("^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    f"'{_LABEL}(\\.{_LABEL})*')"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    f"and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    f"'{_LABEL}')"
)
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_QUALIFIED_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
    "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)

NameRule = Callable[[str], list[str]]


def dns1123_subdomain(value: str) -> list[str]:
    problems = [f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters"] * (len(value) > 253)
    return problems + [_SUBDOMAIN_MSG] * (not _DNS1123_SUBDOMAIN.match(value))


def dns1123_label(value: str) -> list[str]:
    problems = [f"must be no more than {DNS1123_LABEL_MAX} characters"] * (len(value) > 63)
    return problems + [_LABEL_MSG] * (not _DNS1123_LABEL.match(value))


def dns1035_label(value: str) -> list[str]:
    problems = [f"must be no more than {DNS1123_LABEL_MAX} characters"] * (len(value) > 63)
    return problems + [_DNS1035_MSG] * (not _DNS1035_LABEL.match(value))


def qualified_name(value: str) -> list[str]:
    """``IsQualifiedName``: an optional DNS-subdomain prefix and '/', then a name of at most 63."""
    parts = value.split("/")
    if len(parts) > 2:
        return ["a qualified name " + _QUALIFIED_MSG.removeprefix("name part ")]
    problems: list[str] = []
    if len(parts) == 2:
        prefix = parts[0]
        prefix_problems = dns1123_subdomain(prefix) if prefix else ["must be non-empty"]
        problems = [f"prefix part {p}" for p in prefix_problems]
    name = parts[-1]
    if not name:
        return [*problems, "name part must be non-empty"]
    if len(name) > QUALIFIED_NAME_MAX:
        problems.append(f"name part must be no more than {QUALIFIED_NAME_MAX} characters")
    return problems + [_QUALIFIED_MSG] * (not _QUALIFIED.match(name))


def label_value(value: str) -> list[str]:
    problems = [f"must be no more than {LABEL_VALUE_MAX} characters"] * (len(value) > LABEL_VALUE_MAX)
    return problems + [_VALUE_MSG] * (not _LABEL_VALUE.match(value))


def _prefix_rule(rule: NameRule) -> NameRule:
    """``generateName`` is checked with its trailing dash masked (apimachinery ``maskTrailingDash``)."""
    return lambda value: rule(value[:-1] + "a" if value.endswith("-") and len(value) > 1 else value)


# ---- stage 1: types (400) ----------------------------------------------------------------------------

_STRING_FIELDS = ("name", "generateName", "namespace", "uid", "resourceVersion", "creationTimestamp")
_OWNER_STRINGS = ("apiVersion", "kind", "name", "uid")


def _type_error(path: str, value: Any, wanted: str) -> FieldError:
    got = type(value).__name__ if value is not None else "null"
    return FieldError(path, CauseType.TYPE_INVALID, f"must be {wanted}, not {got}")


def _string_map(path: str, value: Any) -> list[FieldError]:
    if value is None:
        return []
    if not isinstance(value, dict):
        return [_type_error(path, value, "an object of strings")]
    return [_type_error(f"{path}[{k}]", v, "a string") for k, v in value.items() if not isinstance(v, str)]


def _owner_types(path: str, ref: Any) -> list[FieldError]:
    if not isinstance(ref, dict):
        return [_type_error(path, ref, "an object")]
    errs = [
        _type_error(f"{path}.{k}", ref[k], "a string") for k in _OWNER_STRINGS if not _str_or_absent(ref, k)
    ]
    for key in ("controller", "blockOwnerDeletion"):
        if ref.get(key) is not None and not isinstance(ref[key], bool):
            errs.append(_type_error(f"{path}.{key}", ref[key], "a boolean"))
    return errs


def _str_or_absent(obj: Mapping[str, Any], key: str) -> bool:
    return obj.get(key) is None or isinstance(obj[key], str)


def _list_of(path: str, value: Any, each: Callable[[str, Any], list[FieldError]]) -> list[FieldError]:
    if value is None:
        return []
    if not isinstance(value, list):
        return [_type_error(path, value, "a list")]
    return [e for i, item in enumerate(value) for e in each(f"{path}[{i}]", item)]


def _string_item(path: str, value: Any) -> list[FieldError]:
    return [] if isinstance(value, str) else [_type_error(path, value, "a string")]


def type_errors(metadata: Any) -> list[FieldError]:
    """What a typed ``ObjectMeta`` decoder would refuse (upstream: 400 before validation)."""
    if not isinstance(metadata, dict):
        return [_type_error("metadata", metadata, "an object")]
    errs = [
        _type_error(f"metadata.{k}", metadata[k], "a string")
        for k in _STRING_FIELDS
        if not _str_or_absent(metadata, k)
    ]
    if metadata.get("generation") is not None and type(metadata["generation"]) is not int:
        errs.append(_type_error("metadata.generation", metadata["generation"], "an integer"))
    errs += _string_map("metadata.labels", metadata.get("labels"))
    errs += _string_map("metadata.annotations", metadata.get("annotations"))
    errs += _list_of("metadata.finalizers", metadata.get("finalizers"), _string_item)
    errs += _list_of("metadata.ownerReferences", metadata.get("ownerReferences"), _owner_types)
    return errs


# ---- stage 2: values (422) ---------------------------------------------------------------------------


def _each(path: str, value: str, problems: list[str]) -> list[FieldError]:
    return [FieldError(path, CauseType.INVALID, p, value) for p in problems]


def name_errors(metadata: Mapping[str, Any], rule: NameRule) -> list[FieldError]:
    name, generate = metadata.get("name") or "", metadata.get("generateName") or ""
    if not name and not generate:
        return [FieldError("metadata.name", CauseType.REQUIRED, "name or generateName is required")]
    errs = _each("metadata.generateName", generate, _prefix_rule(rule)(generate)) if generate else []
    return errs + (_each("metadata.name", name, rule(name)) if name else [])


def label_errors(labels: Mapping[str, str], path: str = "metadata.labels") -> list[FieldError]:
    errs: list[FieldError] = []
    for key, value in labels.items():
        errs += _each(path, key, qualified_name(key))
        errs += _each(path, value, label_value(value))
    return errs


def annotation_errors(annotations: Mapping[str, str]) -> list[FieldError]:
    errs = [e for key in annotations for e in _each("metadata.annotations", key, qualified_name(key.lower()))]
    size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if size > ANNOTATIONS_MAX_BYTES:
        errs.append(
            FieldError(
                "metadata.annotations", CauseType.TOO_LONG, f"must have at most {ANNOTATIONS_MAX_BYTES} bytes"
            )
        )
    return errs


def finalizer_errors(finalizers: list[str]) -> list[FieldError]:
    return [
        e for i, f in enumerate(finalizers) for e in _each(f"metadata.finalizers[{i}]", f, qualified_name(f))
    ]


def owner_errors(refs: list[dict[str, Any]]) -> list[FieldError]:
    """apimachinery ``ValidateOwnerReferences``: every field required, at most one controller."""
    errs: list[FieldError] = []
    for i, ref in enumerate(refs):
        path = f"metadata.ownerReferences[{i}]"
        for key in _OWNER_STRINGS:
            if not ref.get(key):
                errs.append(FieldError(f"{path}.{key}", CauseType.INVALID, f"{key} must not be empty"))
        version = str(ref.get("apiVersion") or "")
        if version.count("/") > 1:
            errs.append(
                FieldError(
                    f"{path}.apiVersion", CauseType.INVALID, "must be version or group/version", version
                )
            )
        if str(ref.get("kind", "")).endswith("List"):
            errs.append(
                FieldError(f"{path}.kind", CauseType.INVALID, "kind must not be a List kind", ref.get("kind"))
            )
    if sum(1 for r in refs if r.get("controller") is True) > 1:
        errs.append(
            FieldError(
                "metadata.ownerReferences",
                CauseType.INVALID,
                "Only one reference can have Controller set to true",
            )
        )
    return errs


def meta_errors(metadata: Mapping[str, Any], rule: NameRule, *, namespaced: bool) -> list[FieldError]:
    """``ValidateObjectMeta`` over metadata that passed ``type_errors``."""
    errs = name_errors(metadata, rule)
    if namespaced and metadata.get("namespace"):
        errs += _each("metadata.namespace", metadata["namespace"], dns1123_label(metadata["namespace"]))
    errs += label_errors(metadata.get("labels") or {})
    errs += annotation_errors(metadata.get("annotations") or {})
    errs += finalizer_errors(metadata.get("finalizers") or [])
    errs += owner_errors(metadata.get("ownerReferences") or [])
    return errs
