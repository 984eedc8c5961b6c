"""OpenAPI v3 schemas of the built-in kinds (Pod, Job, ConfigMap, PriorityClass, ...), built from the same
protobuf descriptors the server decodes kubectl's bodies with (``k8sproto``), so ``kubectl explain
pod.spec.containers`` works to any depth, as it does for the custom kinds.

Each message becomes a named component (``io.k8s.api.core.v1.PodSpec``, Kubernetes' own names); a field that
holds a message refers to it (``allOf: [$ref]``, as the real API server writes it). apimachinery's wire types
are components of their JSON shape: ``Time`` a date-time string, ``Quantity`` and ``IntOrString``
int-or-string, ``RawExtension`` an open object. The descriptors carry no prose, so neither do these schemas.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from gangplane.server import k8sproto

_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
_INT_OR_STRING = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
_SPECIAL: dict[str, dict[str, Any]] = {
    f"{_META}.Time": {"type": "string", "format": "date-time"},
    f"{_META}.MicroTime": {"type": "string", "format": "date-time"},
    f"{_META}.Duration": {"type": "string"},
    f"{_META}.FieldsV1": {"type": "object"},
    "k8s.io.apimachinery.pkg.runtime.RawExtension": {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    },
    "k8s.io.apimachinery.pkg.api.resource.Quantity": _INT_OR_STRING,
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": {**_INT_OR_STRING, "format": "int-or-string"},
}
_SCALARS: dict[int, dict[str, Any]] = {
    FieldDescriptor.TYPE_STRING: {"type": "string"},
    FieldDescriptor.TYPE_BOOL: {"type": "boolean"},
    FieldDescriptor.TYPE_BYTES: {"type": "string", "format": "byte"},
    FieldDescriptor.TYPE_INT32: {"type": "integer", "format": "int32"},
    FieldDescriptor.TYPE_INT64: {"type": "integer", "format": "int64"},
    FieldDescriptor.TYPE_DOUBLE: {"type": "number", "format": "double"},
    FieldDescriptor.TYPE_FLOAT: {"type": "number", "format": "float"},
}


def component_name(full_name: str) -> str:
    """``k8s.io.api.core.v1.Pod`` -> ``io.k8s.api.core.v1.Pod``."""
    return "io.k8s." + full_name.removeprefix("k8s.io.")


def kind_message(api_version: str, kind: str) -> Descriptor | None:
    package = k8sproto.PACKAGES.get(api_version)
    if package is None:
        return None
    try:
        found: Descriptor = k8sproto._pool().FindMessageTypeByName(f"{package}.{kind}")
        return found
    except KeyError:
        return None


def _field_schema(field: FieldDescriptor, needed: list[Descriptor]) -> dict[str, Any]:
    message = field.message_type
    if message is not None and message.GetOptions().map_entry:
        return {"type": "object", "additionalProperties": _single(message.fields_by_name["value"], needed)}
    single = _single(field, needed)
    return {"type": "array", "items": single} if field.is_repeated else single


def _single(field: FieldDescriptor, needed: list[Descriptor]) -> dict[str, Any]:
    message = field.message_type
    if message is None:
        return dict(_SCALARS.get(field.type, {"type": "string"}))
    needed.append(message)
    return {"allOf": [{"$ref": f"#/components/schemas/{component_name(message.full_name)}"}]}


def _message_schema(message: Descriptor, needed: list[Descriptor]) -> dict[str, Any]:
    properties = {f.name: _field_schema(f, needed) for f in message.fields}
    return {"type": "object", "properties": properties}


def components(root: Descriptor, gvk: dict[str, str]) -> tuple[str, dict[str, dict[str, Any]]]:
    """The kind's component name and every component it reaches (itself with ``apiVersion``/``kind``)."""
    needed, found = [root], {}
    while needed:
        message = needed.pop()
        name = component_name(message.full_name)
        if name not in found:
            special = _SPECIAL.get(message.full_name)
            found[name] = dict(special) if special is not None else _message_schema(message, needed)
    top = component_name(root.full_name)
    properties = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, **found[top]["properties"]}
    found[top] = {**found[top], "properties": properties, "x-kubernetes-group-version-kind": [gvk]}
    return top, found


__all__ = ["component_name", "components", "kind_message"]
