"""Kubernetes protobuf request bodies of the built-in kinds, decoded to the JSON objects the rest of the server
takes; pure (given the shipped descriptors).

``kubectl create configmap|secret|namespace|job|priorityclass`` and ``kubectl run`` send
``application/vnd.kubernetes.protobuf``: the ``k8s\\x00`` envelope (``protowire``) around the kind's message.
The messages are read with the protobuf runtime from descriptors compiled by protoc from upstream's
``.proto`` files (``k8s_builtin.desc``, ``scripts/gen_k8s_descriptors.py``): core/v1, batch/v1,
scheduling.k8s.io/v1 and coordination.k8s.io/v1. Conversion to JSON follows
apimachinery's own types: ``Time`` as RFC 3339, ``Quantity`` and ``IntOrString`` as their string or number,
``bytes`` (Secret ``data``) as base64, ``RawExtension``/``FieldsV1`` as the JSON they carry. Go's marshaller
writes unset strings and times as empty values; those are dropped, as JSON's ``omitempty`` would.
"""

from __future__ import annotations

import base64
import functools
import json
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message

from gangplane.server import protowire
from gangplane.server.query import BadRequest, UnsupportedMediaType

# apiVersion -> the proto package of its messages (k8s.io/api/<group>/<version>/generated.proto).
PACKAGES = {
    "v1": "k8s.io.api.core.v1",
    "batch/v1": "k8s.io.api.batch.v1",
    "scheduling.k8s.io/v1": "k8s.io.api.scheduling.v1",
    "coordination.k8s.io/v1": "k8s.io.api.coordination.v1",
}
_META = "k8s.io.apimachinery.pkg.apis.meta.v1"


@functools.cache
def _pool() -> descriptor_pool.DescriptorPool:
    packed = resources.files("gangplane.server").joinpath("k8s_builtin.desc").read_bytes()
    pool = descriptor_pool.DescriptorPool()
    for file in descriptor_pb2.FileDescriptorSet.FromString(packed).file:
        pool.Add(file)
    return pool


def _time(msg: Any) -> str | None:
    if not msg.seconds:
        return None
    return datetime.fromtimestamp(msg.seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_time(msg: Any) -> str | None:
    if not msg.seconds:
        return None
    at = datetime.fromtimestamp(msg.seconds + msg.nanos / 1e9, UTC)
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _raw_json(data: bytes) -> Any:
    return json.loads(data) if data else None


_SPECIAL: dict[str, Any] = {
    f"{_META}.Time": _time,
    f"{_META}.MicroTime": _micro_time,
    f"{_META}.Duration": lambda m: m.duration or None,
    f"{_META}.FieldsV1": lambda m: _raw_json(m.Raw),
    "k8s.io.apimachinery.pkg.runtime.RawExtension": lambda m: _raw_json(m.raw),
    "k8s.io.apimachinery.pkg.api.resource.Quantity": lambda m: m.string or None,
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": lambda m: m.intVal if m.type == 0 else m.strVal,
}


def _value(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type is not None:
        special = _SPECIAL.get(field.message_type.full_name)
        return special(value) if special is not None else to_json(value)
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode()
    return value


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == {} or value == []


def _field(field: FieldDescriptor, value: Any) -> Any:
    entry = field.message_type
    if entry is not None and entry.GetOptions().map_entry:
        inner = entry.fields_by_name["value"]
        return {key: _value(inner, item) for key, item in value.items()}
    if field.is_repeated:
        return [_value(field, item) for item in value]
    return _value(field, value)


def to_json(message: Message) -> dict[str, Any]:
    """A decoded message as Kubernetes JSON (proto field names are the JSON names)."""
    out = {}
    for field, value in message.ListFields():
        converted = _field(field, value)
        if not _empty(converted):
            out[field.name] = converted
    return out


def _descriptor(api_version: str, kind: str) -> Descriptor:
    package = PACKAGES.get(api_version)
    if package is not None:
        try:
            found: Descriptor = _pool().FindMessageTypeByName(f"{package}.{kind}")
            return found
        except KeyError:
            pass
    raise UnsupportedMediaType(
        f"the body of the request was in protobuf for {kind} ({api_version}), which this server decodes "
        f"only for the built-in groups ({', '.join(PACKAGES)}); send application/json"
    )


def decode(body: bytes) -> dict[str, Any]:
    """The JSON object a protobuf request body carries; 400 when malformed, 415 for other kinds."""
    try:
        envelope = protowire.envelope(body)
        message = message_factory.GetMessageClass(_descriptor(envelope.api_version, envelope.kind))()
        message.ParseFromString(envelope.raw)
    except (protowire.WireError, DecodeError) as exc:
        raise BadRequest(f"the request body could not be decoded as protobuf: {exc}") from None
    return {"apiVersion": envelope.api_version, "kind": envelope.kind, **to_json(message)}


__all__ = ["PACKAGES", "decode", "to_json"]
