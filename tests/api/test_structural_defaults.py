"""Structural defaulting (``api.structural``), ported from kubernetes
``staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting/algorithm_test.go`` ``TestDefault``
(the schemas written as the OpenAPI they come from), plus the defaulting tree and ``lacks_defaults``."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from gangplane.api.structural import apply_defaults, compile_defaults, lacks_defaults, prune_unknown


def _d(value: Any) -> dict[str, Any]:
    return {"default": value}


def _props(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


_ABC = {"type": "array", "items": _props(a=_d("A"), b=_d("B"), c=_d("C"))}
_NESTED = _props(
    array={"type": "array", "items": _props(a=_d("A"), b=_d("B"))},
    object=_props(a=_d("N"), b=_d("O")),
    additionalProperties={"type": "object", "additionalProperties": _props(a=_d("alpha"), b=_d("beta"))},
    foo=_d("bar"),
)

TEST_DEFAULT = [  # (name, json, schema, expected)
    ("empty", "null", {}, "null"),
    ("scalar", "4", _d("foo"), "4"),
    ("scalar array", "[1,2]", {"type": "array", "items": _d("foo")}, "[1,2]"),
    ("object array", '[{"a":1},{"b":1},{"c":1}]', _ABC,
     '[{"a":1,"b":"B","c":"C"},{"a":"A","b":1,"c":"C"},{"a":"A","b":"B","c":1}]'),
    ("object array object",
     '{"array":[{"a":1},{"b":2}],"object":{"a":1},"additionalProperties":{"x":{"a":1},"y":{"b":2}}}', _NESTED,
     '{"array":[{"a":1,"b":"B"},{"a":"A","b":2}],"object":{"a":1,"b":"O"},'
     '"additionalProperties":{"x":{"a":1,"b":"beta"},"y":{"a":"alpha","b":2}},"foo":"bar"}'),
    ("empty and null", '[{},{"a":1},{"a":0},{"a":0.0},{"a":""},{"a":null},{"a":[]},{"a":{}}]',
     {"type": "array", "items": _props(a=_d("A"))},
     '[{"a":"A"},{"a":1},{"a":0},{"a":0.0},{"a":""},{"a":"A"},{"a":[]},{"a":{}}]'),
    ("null in nullable list", "[null]", {"nullable": True, "items": _props(a=_d("A"))}, "[null]"),
    ("null in non-nullable list", "[null]", {"items": _d("A")}, '["A"]'),
    ("null in nullable object", '{"a": null}', _props(a={"nullable": True, "default": "A"}), '{"a": null}'),
    ("null in non-nullable object", '{"a": null}', _props(a=_d("A")), '{"a": "A"}'),
    ("null in nullable object with additionalProperties", '{"a": null}',
     {"additionalProperties": {"nullable": True, "default": "A"}}, '{"a": null}'),
    ("null in non-nullable object with additionalProperties", '{"a": null}',
     {"additionalProperties": _d("A")}, '{"a": "A"}'),
    ("null unknown field", '{"a": null}', {"additionalProperties": True}, '{"a": null}'),
]  # fmt: skip


@pytest.mark.parametrize(
    ("doc", "schema", "expected"), [t[1:] for t in TEST_DEFAULT], ids=[t[0] for t in TEST_DEFAULT]
)
def test_default(doc: str, schema: dict[str, Any], expected: str) -> None:
    value = json.loads(doc)
    defaults = compile_defaults(schema)
    before = copy.deepcopy(value)
    lacking = lacks_defaults(value, defaults)
    changed = apply_defaults(value, defaults)
    assert value == json.loads(expected)
    assert changed == lacking == (value != before)
    assert not lacks_defaults(value, defaults)  # defaulting twice adds nothing


def test_a_default_is_copied_and_defaulted_itself() -> None:
    schema = _props(
        spec={"type": "object", "default": {}, "properties": {"mode": _d("hard"), "list": _d([])}}
    )
    defaults = compile_defaults(schema)
    first, second = {}, {}
    apply_defaults(first, defaults)
    apply_defaults(second, defaults)
    assert first == {"spec": {"mode": "hard", "list": []}}
    first["spec"]["list"].append(1)
    assert second["spec"]["list"] == []  # each object has its own copy


def test_a_schema_without_defaults_compiles_to_nothing() -> None:
    assert compile_defaults(_props(a={"type": "string"}, b={"type": "array", "items": _props()})) is None
    assert not apply_defaults({"a": "x"}, None) and not lacks_defaults({"a": "x"}, None)


def test_declared_properties_are_not_defaulted_as_additional_ones() -> None:
    schema = {"type": "object", "properties": {"known": {"type": "object"}},
              "additionalProperties": _props(a=_d("A"))}  # fmt: skip
    value = {"known": {}, "other": {}}
    apply_defaults(value, compile_defaults(schema))
    assert value == {"known": {}, "other": {"a": "A"}}


# ---------------------------------------------------------------- pruning (``prune_unknown``)

_EMBEDDED = {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {"spec": _props(a={})}}
PRUNE = [  # (name, object, schema, what stays, the paths dropped)
    ("root fields are the resource's own", {"apiVersion": "v", "kind": "K", "metadata": {"x": 1}, "spec": {}},
     _props(spec=_props()), {"apiVersion": "v", "kind": "K", "metadata": {"x": 1}, "spec": {}}, []),
    ("unknown at any depth", {"spec": {"a": 1, "b": 2, "list": [{"c": 1, "d": 2}]}},
     _props(spec=_props(a={}, list={"type": "array", "items": _props(c={})})),
     {"spec": {"a": 1, "list": [{"c": 1}]}}, ["spec.b", "spec.list[0].d"]),
    ("additionalProperties true keeps any key", {"m": {"k": {"deep": 1}}},
     _props(m={"type": "object", "additionalProperties": True}), {"m": {"k": {"deep": 1}}}, []),
    ("additionalProperties schema applies to each value", {"m": {"k": {"a": 1, "z": 2}}},
     _props(m={"type": "object", "additionalProperties": _props(a={})}), {"m": {"k": {"a": 1}}}, ["m.k.z"]),
    ("preserve-unknown-fields keeps undeclared keys, not declared ones' unknowns",
     {"p": {"free": 1, "known": {"a": 1, "z": 2}}},
     _props(p={"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"known": _props(a={})}}),
     {"p": {"free": 1, "known": {"a": 1}}}, ["p.known.z"]),
    ("an embedded resource has its own apiVersion, kind and metadata",
     {"e": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"a": 1, "z": 2}, "other": 1}},
     _props(e=_EMBEDDED), {"e": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"a": 1}}},
     ["e.spec.z", "e.other"]),
    ("an object without properties keeps nothing", {"o": {"x": 1}}, _props(o={"type": "object"}), {"o": {}}, ["o.x"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("obj", "schema", "kept", "dropped"), [t[1:] for t in PRUNE], ids=[t[0] for t in PRUNE]
)
def test_prune_unknown(
    obj: dict[str, Any], schema: dict[str, Any], kept: dict[str, Any], dropped: list[str]
) -> None:
    assert prune_unknown(obj, schema) == dropped
    assert obj == kept
