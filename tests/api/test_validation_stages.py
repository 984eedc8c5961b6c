"""Every stage's errors in one answer: schema errors (types, unknown fields, required values) together with
the rules that need a parsed object (names, minimums, CEL rules), not one stage per fix round."""

from __future__ import annotations

from typing import Any

import pytest

from gangplane.api import validation
from gangplane.api.validation.stages import path_parts


def _job(**trainer: Any) -> dict[str, Any]:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "Bad_Name"},
            "spec": {"runtimeRef": {"name": "torch"}, "trainer": trainer}}  # fmt: skip


def _all(obj: dict[str, Any]) -> list[str]:
    parsed = validation.parse_wire(obj)
    assert parsed.model is not None
    return [
        f"{e.path}: {e.detail}" for e in parsed.with_rules(validation.validate_object(parsed.model).errors)
    ]


def test_type_errors_do_not_hide_name_and_minimum_errors() -> None:
    found = _all(_job(numNodes="abc", numProcPerNode=0, bogus=1, env=[{"name": "A"}, "oops", {"value": "x"}]))
    assert found == [
        "spec.trainer.env[1]: must be of type object",
        "spec.trainer.env[2].name: Required value",
        "spec.trainer.numNodes: must be of type integer",
        "spec.trainer.bogus: field not declared in schema",
        "metadata.name: metadata.name must match RFC 1035 DNS label format",
        "spec.trainer.numProcPerNode: numProcPerNode must be greater than or equal to 1",
    ]


def test_a_rule_about_a_field_set_aside_is_not_reported_twice() -> None:
    found = _all(_job(numProcPerNode="x"))
    assert [f for f in found if f.startswith("spec.trainer.numProcPerNode")] == [
        "spec.trainer.numProcPerNode: must be of type integer"
    ]


def test_nothing_to_keep_still_reports_the_schema_errors() -> None:
    parsed = validation.parse_wire({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                    "metadata": {"name": "j"}, "spec": "not an object"})  # fmt: skip
    assert parsed.model is None and [e.path for e in parsed.errors] == ["spec"]


def test_the_wire_object_is_not_changed() -> None:
    obj = _job(numNodes="abc")
    validation.parse_wire(obj)
    assert obj["spec"]["trainer"] == {"numNodes": "abc"}


@pytest.mark.parametrize(
    ("path", "parts"),
    [("spec.trainer.env[2].name", ["spec", "trainer", "env", 2, "name"]), ("a[0][1]", ["a", 0, 1]), ("", [])],
)
def test_path_parts(path: str, parts: list[str | int]) -> None:
    assert path_parts(path) == parts
