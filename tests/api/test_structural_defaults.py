"""Structural defaulting (``api.structural``), ported from kubernetes
``staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting/algorithm_test.go`` ``TestDefault``
(the schemas written as the OpenAPI they come from), plus the defaulting tree and ``lacks_defaults``."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from gangplane.api.structural import apply_defaults, compile_defaults, lacks_defaults


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
