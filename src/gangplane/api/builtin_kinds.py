"""Validation of the Kubernetes built-in kinds the embedded API server stores, as kube-apiserver does it.

Only the fields the control plane reads are checked (the rest is kept as sent): Pod and Job pod-template
resource quantities (``pkg/apis/core/validation.ValidateResourceRequirements``: parseable, non-negative,
integers for extended resources, requests ≤ limits), Service ports, Lease and Event fields, ConfigMap and
Secret keys and sizes, and the volume kinds (``volume_kinds.py``). ``errors(kind, obj)`` returns every
problem; ``type_problems`` the ones upstream's typed decoder would refuse with 400 before validation runs.
``fold_string_data`` is the Secret ``stringData`` conversion upstream does on write
(``pkg/registry/core/secret/strategy.go``).
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from gangplane.api import quantity, volume_kinds
from gangplane.api.objectmeta import NameRule, dns1035_label, dns1123_label, dns1123_subdomain
from gangplane.errors import CauseType, FieldError

MAX_CONFIG_BYTES = 1024 * 1024  # core validation MaxSecretSize, also used for ConfigMaps
# Quantities are bounded by what an int64 of milli-units holds, the scale schedulers compute in
# (upstream's ``Quantity.MilliValue`` overflows silently above it; gangplane refuses instead).
MAX_QUANTITY = Decimal(2**63 - 1) / 1000
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")

Check = Callable[[dict[str, Any]], list[FieldError]]


def name_rule(group: str, kind: str) -> NameRule:
    """The name rule kube-apiserver applies to a kind: Services are DNS-1035 labels, Namespaces DNS-1123
    labels, everything else (also custom resources) a DNS-1123 subdomain."""
    if group == "" and kind == "Service":
        return dns1035_label
    if group == "" and kind == "Namespace":
        return dns1123_label
    return dns1123_subdomain


def _bad_type(path: str, value: Any, wanted: str) -> FieldError:
    return FieldError(path, CauseType.TYPE_INVALID, f"must be {wanted}, not {type(value).__name__}")


def _invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(path, CauseType.INVALID, detail, value)


def _dict(obj: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _int_at(obj: Mapping[str, Any], key: str, path: str, minimum: int) -> list[FieldError]:
    value = obj.get(key)
    if value is None:
        return []
    if type(value) is not int:
        return [_bad_type(f"{path}.{key}", value, "an integer")]
    if value < minimum:
        return [_invalid(f"{path}.{key}", value, f"must be greater than or equal to {minimum}")]
    return []


def _object_at(obj: Mapping[str, Any], key: str, path: str) -> list[FieldError]:
    value = obj.get(key)
    return (
        [] if value is None or isinstance(value, dict) else [_bad_type(f"{path}.{key}", value, "an object")]
    )


# ---- quantities --------------------------------------------------------------------------------------


def _quantity(path: str, name: str, raw: Any) -> tuple[Decimal | None, list[FieldError]]:
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        return None, [_bad_type(path, raw, "a quantity (string or number)")]
    value, problem = _judged(name, raw, type(raw).__name__)
    return value, [] if problem is None else [_invalid(path, raw, problem)]


@functools.lru_cache(maxsize=4096)
def _judged(name: str, raw: str | int | float, _: str) -> tuple[Decimal | None, str | None]:
    """The value of quantity ``raw`` of resource ``name`` and what is wrong with it (None: nothing). Pod
    creates check a dozen quantities each, nearly always the same few (the type is part of the key, as
    ``1 == 1.0``); ``Decimal`` is immutable, so cached values are safe to share."""
    try:
        value = quantity.parse(raw)
    except (ValueError, InvalidOperation, ArithmeticError):
        return (
            None,
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        )
    if not value.is_finite():
        return None, "must be a finite quantity"
    if value < 0:
        return value, "must be greater than or equal to 0"
    if value > MAX_QUANTITY:
        return value, f"must be less than or equal to {MAX_QUANTITY.normalize():f}"
    extended = name not in _STANDARD_RESOURCES and not name.startswith("hugepages-")
    if extended and value != value.to_integral_value():
        return value, "must be an integer"
    return value, None


def _resource_list(path: str, raw: Any) -> tuple[dict[str, Decimal], list[FieldError]]:
    if raw is None:
        return {}, []
    if not isinstance(raw, dict):
        return {}, [_bad_type(path, raw, "an object of quantities")]
    values: dict[str, Decimal] = {}
    errs: list[FieldError] = []
    for name, text in raw.items():
        value, problems = _quantity(f"{path}[{name}]", str(name), text)
        errs += problems
        if value is not None and not problems:
            values[str(name)] = value
    return values, errs


def resource_errors(resources: Any, path: str) -> list[FieldError]:
    if resources is None:
        return []
    if not isinstance(resources, dict):
        return [_bad_type(path, resources, "an object")]
    limits, errs = _resource_list(f"{path}.limits", resources.get("limits"))
    requests, more = _resource_list(f"{path}.requests", resources.get("requests"))
    for name, wanted in requests.items():
        if name in limits and wanted > limits[name]:
            errs.append(
                _invalid(
                    f"{path}.requests[{name}]", str(wanted), f"must be less than or equal to {name} limit"
                )
            )
    return errs + more


def pod_spec_errors(spec: Any, path: str) -> list[FieldError]:
    if spec is None:
        return []
    if not isinstance(spec, dict):
        return [_bad_type(path, spec, "an object")]
    errs: list[FieldError] = []
    for field in ("containers", "initContainers"):
        containers = spec.get(field)
        if containers is None:
            continue
        if not isinstance(containers, list):
            errs.append(_bad_type(f"{path}.{field}", containers, "a list"))
            continue
        for i, c in enumerate(containers):
            at = f"{path}.{field}[{i}]"
            errs += (
                resource_errors(c.get("resources"), f"{at}.resources")
                if isinstance(c, dict)
                else [_bad_type(at, c, "an object")]
            )
    return (
        errs
        + _int_at(spec, "terminationGracePeriodSeconds", path, 0)
        + _int_at(spec, "activeDeadlineSeconds", path, 1)
    )


# ---- kinds -------------------------------------------------------------------------------------------


def _pod(obj: dict[str, Any]) -> list[FieldError]:
    return pod_spec_errors(obj.get("spec"), "spec")


def _job(obj: dict[str, Any]) -> list[FieldError]:
    spec = obj.get("spec")
    if spec is None:
        return []
    if not isinstance(spec, dict):
        return [_bad_type("spec", spec, "an object")]
    errs = [e for k in ("parallelism", "completions", "backoffLimit") for e in _int_at(spec, k, "spec", 0)]
    errs += _int_at(spec, "activeDeadlineSeconds", "spec", 1)
    errs += _object_at(spec, "template", "spec")
    return errs + pod_spec_errors(_dict(spec, "template").get("spec"), "spec.template.spec")


def _service(obj: dict[str, Any]) -> list[FieldError]:
    spec = obj.get("spec")
    if spec is None:
        return []
    if not isinstance(spec, dict):
        return [_bad_type("spec", spec, "an object")]
    errs = _object_at(spec, "selector", "spec")
    ports = spec.get("ports")
    if ports is None:
        return errs
    if not isinstance(ports, list):
        return [*errs, _bad_type("spec.ports", ports, "a list")]
    for i, port in enumerate(ports):
        at = f"spec.ports[{i}]"
        if not isinstance(port, dict):
            errs.append(_bad_type(at, port, "an object"))
            continue
        number = port.get("port")
        if type(number) is not int:
            errs.append(_bad_type(f"{at}.port", number, "an integer"))
        elif not 1 <= number <= 65535:
            errs.append(_invalid(f"{at}.port", number, "must be between 1 and 65535, inclusive"))
    return errs


def _lease(obj: dict[str, Any]) -> list[FieldError]:
    spec = obj.get("spec")
    if spec is None:
        return []
    if not isinstance(spec, dict):
        return [_bad_type("spec", spec, "an object")]
    errs = _int_at(spec, "leaseDurationSeconds", "spec", 1) + _int_at(spec, "leaseTransitions", "spec", 0)
    holder = spec.get("holderIdentity")
    if holder is not None and not isinstance(holder, str):
        errs.append(_bad_type("spec.holderIdentity", holder, "a string"))
    return errs


def _event(obj: dict[str, Any]) -> list[FieldError]:
    errs = _object_at(obj, "involvedObject", "") + _int_at(obj, "count", "", 0)
    for key in ("reason", "message", "type"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            errs.append(_bad_type(key, obj[key], "a string"))
    return [FieldError(e.path.lstrip("."), e.type, e.detail, e.value) for e in errs]


def _config_keys(
    data: Any, path: str, value_ok: Callable[[Any], bool], wanted: str
) -> tuple[int, list[FieldError]]:
    if data is None:
        return 0, []
    if not isinstance(data, dict):
        return 0, [_bad_type(path, data, "an object")]
    errs: list[FieldError] = []
    size = 0
    for key, value in data.items():
        if len(key) > 253 or not _CONFIG_KEY.match(key):
            errs.append(
                _invalid(
                    path, key, "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
                )
            )
        if not value_ok(value):
            errs.append(_bad_type(f"{path}[{key}]", value, wanted))
        else:
            size += len(value)
    return size, errs


def _is_base64(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _too_big(size: int, path: str) -> list[FieldError]:
    if size <= MAX_CONFIG_BYTES:
        return []
    return [FieldError(path, CauseType.TOO_LONG, f"Too long: must have at most {MAX_CONFIG_BYTES} bytes")]


def _configmap(obj: dict[str, Any]) -> list[FieldError]:
    size, errs = _config_keys(obj.get("data"), "data", lambda v: isinstance(v, str), "a string")
    more, binary = _config_keys(obj.get("binaryData"), "binaryData", _is_base64, "base64-encoded bytes")
    return errs + binary + _too_big(size + more * 3 // 4, "")


def _secret(obj: dict[str, Any]) -> list[FieldError]:
    size, errs = _config_keys(obj.get("data"), "data", _is_base64, "base64-encoded bytes")
    if obj.get("type") is not None and not isinstance(obj["type"], str):
        errs.append(_bad_type("type", obj["type"], "a string"))
    _, bad_strings = _config_keys(
        obj.get("stringData"), "stringData", lambda v: isinstance(v, str), "a string"
    )
    errs += bad_strings
    return errs + _too_big(size * 3 // 4, "data")


def _namespace(obj: dict[str, Any]) -> list[FieldError]:
    return _object_at(obj, "spec", "") + _object_at(obj, "status", "")


_CHECKS: dict[tuple[str, str], Check] = {
    ("", "Pod"): _pod,
    ("batch", "Job"): _job,
    ("", "Service"): _service,
    ("coordination.k8s.io", "Lease"): _lease,
    ("", "Event"): _event,
    ("", "ConfigMap"): _configmap,
    ("", "Secret"): _secret,
    ("", "Namespace"): _namespace,
    **volume_kinds.CHECKS,  # PersistentVolumeClaim, PersistentVolume, StorageClass
}


def errors(group: str, kind: str, obj: dict[str, Any]) -> list[FieldError]:
    check = _CHECKS.get((group, kind))
    return [] if check is None else check(obj)


def is_type_problem(error: FieldError) -> bool:
    """Upstream decodes built-in kinds into Go structs first: a wrong type is a 400, not a 422."""
    return error.type is CauseType.TYPE_INVALID


def fold_string_data(obj: dict[str, Any]) -> dict[str, Any]:
    """A Secret as stored: ``type`` defaulted to ``Opaque`` (core/v1 ``SetDefaults_Secret``), ``stringData``
    entries base64-encoded into ``data`` (they win over ``data``). Values of the wrong type are left as they
    are, for the Secret's type check to refuse (400)."""
    if not obj.get("type"):
        obj = {**obj, "type": "Opaque"}
    string_data = obj.get("stringData")
    if string_data is None:
        return obj
    out = {k: v for k, v in obj.items() if k != "stringData"}
    data = out.get("data") or {}
    if not isinstance(string_data, dict) or not isinstance(data, dict):
        return {**out, "stringData": string_data}
    encoded = {
        k: base64.b64encode(v.encode()).decode() if isinstance(v, str) else v for k, v in string_data.items()
    }
    return {**out, "data": {**data, **encoded}}


def active_namespace(obj: dict[str, Any]) -> dict[str, Any]:
    """A Namespace as stored: ``status.phase`` ``Active`` (``pkg/registry/core/namespace/strategy.go``
    ``PrepareForCreate``), so ``kubectl get namespaces`` shows STATUS Active. Its ``spec.finalizers``
    (``kubernetes``) are not added: a namespace here is deleted at once, with no finalize step to wait for.
    Never mutates."""
    status = obj.get("status")
    if isinstance(status, dict) and status.get("phase"):
        return obj
    return {**obj, "status": {**(status if isinstance(status, dict) else {}), "phase": "Active"}}
