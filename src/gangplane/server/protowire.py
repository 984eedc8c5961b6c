"""The protobuf wire format without generated classes (Kubernetes' request envelope read, fields written); pure.

Typed kubectl commands and client-go send built-in kinds as ``application/vnd.kubernetes.protobuf``: the magic
``k8s\\x00`` then a ``runtime.Unknown`` message (k8s.io/apimachinery/pkg/runtime/generated.proto: 1 typeMeta
{1 apiVersion, 2 kind}, 2 raw, 3 contentEncoding, 4 contentType) whose ``raw`` bytes are the object's own
message. This module reads the protobuf wire format (varints and length-delimited fields) and that envelope;
decoding ``raw`` into an object needs the kind's message definitions, which gangplane does not ship, so
callers that need the object's fields answer 415 for other kinds.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5


class WireError(ValueError):
    """Bytes that are not a well-formed protobuf message."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= len(data) or shift > 63:
            raise WireError("truncated or overlong varint")
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos


def fields(data: bytes) -> dict[int, list[int | bytes]]:
    """Field number -> its values in order: ints for varint and fixed fields, bytes for length-delimited."""
    found: dict[int, list[int | bytes]] = {}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == _VARINT:
            value, pos = _varint(data, pos)
        elif wire == _LENGTH:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise WireError(f"field {number} runs past the end of the message")
            value, pos = data[pos : pos + size], pos + size
        elif wire in (_FIXED64, _FIXED32):
            width = 8 if wire == _FIXED64 else 4
            value, pos = int.from_bytes(data[pos : pos + width], "little"), pos + width
        else:
            raise WireError(f"unsupported wire type {wire} for field {number}")
        found.setdefault(number, []).append(value)
    return found


def _text(values: list[int | bytes] | None) -> str:
    last = (values or [b""])[-1]
    return last.decode() if isinstance(last, bytes) else str(last)


@dataclass(frozen=True, slots=True)
class Envelope:
    api_version: str
    kind: str
    raw: bytes


def is_envelope(body: bytes) -> bool:
    return body.startswith(MAGIC)


def envelope(body: bytes) -> Envelope:
    """The ``runtime.Unknown`` after the magic: which kind it carries and that kind's encoded message."""
    if not is_envelope(body):
        raise WireError("not a Kubernetes protobuf body (no k8s\\x00 prefix)")
    unknown = fields(body[len(MAGIC) :])
    type_meta = (unknown.get(1) or [b""])[-1]
    meta = fields(type_meta) if isinstance(type_meta, bytes) else {}
    raw = (unknown.get(2) or [b""])[-1]
    return Envelope(_text(meta.get(1)), _text(meta.get(2)), raw if isinstance(raw, bytes) else b"")


# ---------------------------------------------------------------- writing (the OpenAPI v2 document)


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s as ten bytes, as protobuf writes them
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field_bytes(number: int, data: bytes) -> bytes:
    return varint(number << 3 | _LENGTH) + varint(len(data)) + data


def field_text(number: int, value: str) -> bytes:
    """A string field; empty is not written (proto3)."""
    return field_bytes(number, value.encode()) if value else b""


def field_int(number: int, value: int | bool) -> bytes:
    """A varint field (int, bool); zero is not written (proto3)."""
    return varint(number << 3 | _VARINT) + varint(int(value)) if value else b""


def field_double(number: int, value: float) -> bytes:
    return varint(number << 3 | _FIXED64) + struct.pack("<d", float(value))


__all__ = [
    "CONTENT_TYPE", "MAGIC", "Envelope", "WireError", "envelope", "field_bytes", "field_double", "field_int",
    "field_text", "fields", "is_envelope", "varint",
]  # fmt: skip
