"""``/openapi/v2``: the OpenAPI v2 (Swagger 2.0) document older clients read, in JSON and in the protobuf form
client-go asks for; pure.

kubectl up to 1.26, and 1.27's validation probe, fetch ``/openapi/v2`` as
``application/com.github.proto-openapi.spec.v2@v1.0+protobuf`` (gnostic's ``openapi.v2.Document``) and read
two things from it: the definitions with their ``x-kubernetes-group-version-kind`` (``kubectl explain``, also
1.3x's ``--output=plaintext-openapiv2``) and each kind's PATCH operation with its ``fieldValidation``
parameter (``--validate``: present, validation is left to the server). Other clients (kubeconform, older
Python tools) read the JSON form. Both are one conversion of the v3 documents (``openapi``): ``$ref``\\ s point
into ``#/definitions``, a single ``allOf`` reference becomes the reference, ``anyOf`` / ``oneOf`` and
``nullable`` (no v2 form) are dropped, an int-or-string is ``type: string, format: int-or-string`` as
kube-apiserver writes it. The protobuf is written by hand (field numbers of gnostic's
``openapiv2/OpenAPIv2.proto``); every ``Any`` carries its value as YAML (JSON text, which YAML reads).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from gangplane.server.openapi import group_version_document
from gangplane.server.protowire import field_bytes as _bytes
from gangplane.server.protowire import field_double as _double
from gangplane.server.protowire import field_int as _int
from gangplane.server.protowire import field_text as _text
from gangplane.server.protowire import varint as _varint
from gangplane.server.resources import Registry

PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
"""The media type of the answer (kube-openapi's; clients ask with the older ``...spec.v2@v1.0+protobuf``,
whose ``@`` Go's ``mime`` parser refuses in a Content-Type)."""
_V3_REF, _V2_REF = "#/components/schemas/", "#/definitions/"
_DROPPED = frozenset({"anyOf", "oneOf", "nullable"})


# ---------------------------------------------------------------- the JSON document


def _schema(schema: Any) -> Any:
    """A v3 schema in v2 form, recursively."""
    if not isinstance(schema, Mapping):
        return schema
    found = {k: v for k, v in schema.items() if k not in _DROPPED}
    refs = found.get("allOf")
    if isinstance(refs, list) and len(refs) == 1 and "$ref" in refs[0]:
        del found["allOf"]
        found["$ref"] = refs[0]["$ref"]
    if isinstance(found.get("$ref"), str):
        found["$ref"] = found["$ref"].replace(_V3_REF, _V2_REF)
    if found.get("x-kubernetes-int-or-string") and "type" not in found:
        found |= {"type": "string", "format": "int-or-string"}
    if "properties" in found:
        found["properties"] = {name: _schema(sub) for name, sub in found["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(found.get(key), Mapping):
            found[key] = _schema(found[key])
    if "allOf" in found:
        found["allOf"] = [_schema(sub) for sub in found["allOf"]]
    return found


def _operation(op: Mapping[str, Any]) -> dict[str, Any]:
    params: list[dict[str, Any]] = [
        {"name": p["name"], "in": p["in"], "type": "string", "uniqueItems": True}
        for p in op.get("parameters", ())
    ]
    converted: dict[str, Any] = {"operationId": op["operationId"], "produces": ["application/json"]}
    body = (op.get("requestBody") or {}).get("content") or {}
    if body:
        converted["consumes"] = list(body)
        params.insert(
            0,
            {
                "name": "body",
                "in": "body",
                "required": True,
                "schema": _schema(next(iter(body.values()))["schema"]),
            },
        )
    response = op["responses"]["200"]
    schema = response["content"]["application/json"]["schema"]
    converted["parameters"] = params
    converted["responses"] = {"200": {"description": response["description"], "schema": _schema(schema)}}
    return converted | {k: v for k, v in op.items() if k.startswith("x-")}


def document(registry: Registry) -> dict[str, Any]:
    """The whole API in one Swagger 2.0 document, as kube-apiserver serves ``/openapi/v2``."""
    paths: dict[str, Any] = {}
    definitions: dict[str, Any] = {}
    for group, version in sorted({(s.rt.group, s.rt.version) for s in registry.served}):
        v3 = group_version_document(registry.in_group_version(group, version))
        for path, item in v3["paths"].items():
            paths[path] = {verb: _operation(op) for verb, op in item.items()}
        for name, schema in v3["components"]["schemas"].items():
            definitions[name] = _schema(schema)
    return {"swagger": "2.0", "info": {"title": "gangplane", "version": "v1"}, "paths": paths,
            "definitions": definitions}  # fmt: skip


# ---------------------------------------------------------------- protobuf wire form


def _any(number: int, value: Any) -> bytes:
    """gnostic ``Any``: the value as YAML (2)."""
    return _bytes(number, _text(2, json.dumps(value)))


def _named(number: int, name: str, value: bytes) -> bytes:
    return _bytes(number, _text(1, name) + _bytes(2, value))


def _extensions(number: int, obj: Mapping[str, Any]) -> bytes:
    return b"".join(_bytes(number, _text(1, k) + _any(2, v)) for k, v in obj.items() if k.startswith("x-"))


_SCHEMA_TEXT = {"$ref": 1, "format": 2, "title": 3, "description": 4, "pattern": 13}
_SCHEMA_DOUBLE = {"multipleOf": 6, "maximum": 7, "minimum": 9}
_SCHEMA_INT = {"exclusiveMaximum": 8, "exclusiveMinimum": 10, "maxLength": 11, "minLength": 12, "maxItems": 14,
               "minItems": 15, "uniqueItems": 16, "maxProperties": 17, "minProperties": 18, "readOnly": 27}  # fmt: skip


def encode_schema(schema: Mapping[str, Any]) -> bytes:
    """gnostic ``openapi.v2.Schema``."""
    out = [_text(n, schema[k]) for k, n in _SCHEMA_TEXT.items() if isinstance(schema.get(k), str)]
    out += [
        _double(n, schema[k]) for k, n in _SCHEMA_DOUBLE.items() if isinstance(schema.get(k), int | float)
    ]
    out += [_int(n, schema[k]) for k, n in _SCHEMA_INT.items() if isinstance(schema.get(k), int)]
    if "default" in schema:
        out.append(_any(5, schema["default"]))
    out += [_text(19, name) for name in schema.get("required", ())]
    out += [_any(20, value) for value in schema.get("enum", ())]
    extra = schema.get("additionalProperties")
    if isinstance(extra, bool):  # a oneof member: written even when false
        out.append(_bytes(21, _varint(2 << 3) + _varint(int(extra))))
    elif isinstance(extra, Mapping):
        out.append(_bytes(21, _bytes(1, encode_schema(extra))))
    if isinstance(schema.get("type"), str):
        out.append(_bytes(22, _text(1, schema["type"])))
    if isinstance(schema.get("items"), Mapping):
        out.append(_bytes(23, _bytes(1, encode_schema(schema["items"]))))
    out += [_bytes(24, encode_schema(sub)) for sub in schema.get("allOf", ())]
    if schema.get("properties"):
        props = b"".join(_named(1, k, encode_schema(v)) for k, v in schema["properties"].items())
        out.append(_bytes(25, props))
    out.append(_extensions(31, schema))
    return b"".join(out)


def _parameter(param: Mapping[str, Any]) -> bytes:
    """``ParametersItem`` > ``Parameter``: a body parameter (1) or a query one (non-body 2 > query 3)."""
    if param["in"] == "body":
        body = (
            _text(2, param["name"])
            + _text(3, "body")
            + _int(4, True)
            + _bytes(5, encode_schema(param["schema"]))
        )
        return _bytes(1, _bytes(1, body))
    query = _text(2, param["in"]) + _text(4, param["name"]) + _text(6, param["type"])
    query += _int(20, bool(param.get("uniqueItems")))
    return _bytes(1, _bytes(2, _bytes(3, query)))


def _encode_operation(op: Mapping[str, Any]) -> bytes:
    out = [_text(5, op["operationId"])]
    out += [_text(6, media) for media in op.get("produces", ())]
    out += [_text(7, media) for media in op.get("consumes", ())]
    out += [_bytes(8, _parameter(p)) for p in op.get("parameters", ())]
    codes = b""
    for code, response in op.get("responses", {}).items():
        body = _text(1, response.get("description", "")) + _bytes(
            2, _bytes(1, encode_schema(response["schema"]))
        )
        codes += _named(1, code, _bytes(1, body))
    out.append(_bytes(9, codes))
    out.append(_extensions(13, op))
    return b"".join(out)


_VERBS = {"get": 2, "put": 3, "post": 4, "delete": 5, "patch": 8}


def _path_items(paths: Mapping[str, Mapping[str, Any]]) -> Iterable[bytes]:
    for path, item in paths.items():
        ops = b"".join(
            _bytes(_VERBS[verb], _encode_operation(op)) for verb, op in item.items() if verb in _VERBS
        )
        yield _named(2, path, ops)


def encode(doc: Mapping[str, Any]) -> bytes:
    """gnostic ``openapi.v2.Document``: swagger (1), info (2), paths (8), definitions (9)."""
    info = _text(1, doc["info"]["title"]) + _text(2, doc["info"]["version"])
    definitions = b"".join(_named(1, name, encode_schema(s)) for name, s in doc["definitions"].items())
    paths = b"".join(_path_items(doc["paths"]))
    return _text(1, doc["swagger"]) + _bytes(2, info) + _bytes(8, paths) + _bytes(9, definitions)


class Documents:
    """``/openapi/v2`` for one registry, built at the first request (most sessions never ask for it)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._built: tuple[bytes, bytes] | None = None

    def answer(self, accept: str) -> tuple[bytes, str]:
        """(body, media type): protobuf when ``accept`` asks for it (client-go), JSON otherwise."""
        if self._built is None:
            doc = document(self.registry)
            self._built = json.dumps(doc, separators=(",", ":")).encode(), encode(doc)
        if "protobuf" in accept:
            return self._built[1], PROTOBUF
        return self._built[0], "application/json"


__all__ = ["PROTOBUF", "Documents", "document", "encode", "encode_schema"]
