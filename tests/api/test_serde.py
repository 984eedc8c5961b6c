"""Manifest loading, kind dispatch, schema errors as Kubernetes field errors, and dumping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import RuntimeBuilder, TrainJobBuilder
from gangplane.api import serde
from gangplane.api.base import ApiModel
from gangplane.api.serde import (
    dump_json,
    dump_yaml,
    field_path,
    load_paths,
    model_for,
    parse_documents,
    to_model,
)
from gangplane.api.trainer import ClusterTrainingRuntime, TrainingRuntime, TrainJob
from gangplane.errors import CauseType as C
from gangplane.errors import Invalid, ManifestError

UPSTREAM_RUNTIMES = Path("/work/shared/upstream/runtimes")


def test_parse_skips_empty_documents_and_expands_lists() -> None:
    text = "---\n# only a comment\n---\na: 1\n---\n---\nkind: List\napiVersion: v1\nitems: [{b: 2}, {c: 3}]\n"
    assert parse_documents(text, "x.yaml") == [{"a": 1}, {"b": 2}, {"c": 3}]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml:3:2: invalid YAML", id="unclosed-flow"),
        pytest.param("a: 1\n  b: 2\n", "bad.yaml:2:", id="bad-indent"),
        pytest.param(
            "a: 1\n---\n- 1\n- 2\n", "bad.yaml: document 2 is a list, not a mapping", id="not-a-mapping"
        ),
        pytest.param(
            "kind: List\napiVersion: v1\nitems: [1]\n", "List items must be mappings", id="list-of-scalars"
        ),
    ],
)
def test_parse_errors_name_file_and_line(text: str, message: str) -> None:
    with pytest.raises(ManifestError, match=message.replace("[", r"\[")):
        parse_documents(text, "bad.yaml")


def test_load_paths_recursive_sorted_and_filtered(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "deep").mkdir()
    (tmp_path / "b" / "deep" / "z.yml").write_text("n: z\n")
    (tmp_path / "b" / "a.json").write_text(json.dumps({"n": "json"}))
    (tmp_path / "a.yaml").write_text("n: a1\n---\nn: a2\n")
    (tmp_path / "notes.txt").write_text("n: ignored\n")
    loaded = load_paths([tmp_path])
    assert [(Path(s).relative_to(tmp_path).as_posix(), o["n"]) for s, o in loaded] == [
        ("a.yaml", "a1"),
        ("a.yaml", "a2"),
        ("b/a.json", "json"),
        ("b/deep/z.yml", "z"),
    ]
    assert [o["n"] for _, o in load_paths([tmp_path / "notes.txt"])] == ["ignored"]


def test_load_paths_missing_or_broken(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="no such file"):
        load_paths([tmp_path / "absent.yaml"])
    (tmp_path / "broken.json").write_text('{"a": ')
    with pytest.raises(ManifestError, match=r"broken\.json:1:"):
        load_paths([tmp_path])


@pytest.mark.parametrize(
    ("api_version", "kind", "expected"),
    [
        ("trainer.kubeflow.org/v1alpha1", "TrainJob", TrainJob),
        ("trainer.kubeflow.org/v1alpha1", "TrainingRuntime", TrainingRuntime),
        ("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime", ClusterTrainingRuntime),
        ("trainer.kubeflow.org/v1alpha1", "Unknown", None),
        ("v1", "TrainJob", None),
    ],
)
def test_model_for(api_version: str, kind: str, expected: type[ApiModel] | None) -> None:
    assert model_for(api_version, kind) is expected


def test_models_registry_is_extensible(monkeypatch: pytest.MonkeyPatch) -> None:
    class Widget(ApiModel):
        api_version: str
        kind: str
        size: int

    monkeypatch.setitem(serde.MODELS, ("example.com", "Widget"), Widget)
    model = to_model({"apiVersion": "example.com/v1", "kind": "Widget", "size": 3})
    assert isinstance(model, Widget) and model.size == 3


@pytest.mark.parametrize(
    ("loc", "path"),
    [
        (("spec", "trainer", "env", 2, "name"), "spec.trainer.env[2].name"),
        (("spec", "runtimePatches", 0, "manager"), "spec.runtimePatches[0].manager"),
        (("spec", "limits", "function-after[_check(), str]"), "spec.limits"),
    ],
)
def test_field_path(loc: tuple[int | str, ...], path: str) -> None:
    assert field_path(loc) == path


def causes(obj: dict[str, Any]) -> list[tuple[str, C]]:
    with pytest.raises(Invalid) as info:
        to_model(obj)
    assert info.value.code == 422
    return [(c.path, c.type) for c in info.value.causes]


def test_unknown_trainer_field_is_rejected_with_its_path() -> None:
    with pytest.raises(Invalid) as info:
        to_model(TrainJobBuilder("j").trainer(numNode=3).dict())
    (cause,) = info.value.causes
    assert (cause.path, cause.type, cause.detail) == (
        "spec.trainer.numNode",
        C.UNKNOWN_FIELD,
        "field not declared in schema",
    )
    assert (info.value.kind, info.value.name) == ("TrainJob", "j")


def test_schema_errors_are_reported_all_at_once() -> None:
    obj = TrainJobBuilder().trainer(numNodes="abc", env=[{"name": "A"}, {"value": "x"}, {"name": 3}]).dict()
    obj["spec"]["runtimeRef"] = {}
    obj["spec"]["suspend"] = "maybe"
    obj["spec"]["trainer"]["resourcesPerNode"] = {"limits": {"cpu": "lots"}}
    assert sorted(causes(obj)) == [
        ("spec.runtimeRef.name", C.REQUIRED),
        ("spec.suspend", C.TYPE_INVALID),
        ("spec.trainer.env[1].name", C.REQUIRED),
        ("spec.trainer.env[2].name", C.TYPE_INVALID),
        ("spec.trainer.numNodes", C.TYPE_INVALID),
        ("spec.trainer.resourcesPerNode.limits.cpu", C.INVALID),
    ]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param({"kind": "TrainJob"}, [("apiVersion", C.REQUIRED)], id="no-api-version"),
        pytest.param({"apiVersion": "v1"}, [("kind", C.REQUIRED)], id="no-kind"),
        pytest.param(
            {"apiVersion": "example.com/v1", "kind": "Foo"}, [("kind", C.NOT_SUPPORTED)], id="unknown-kind"
        ),
        pytest.param(
            {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob"},
            [("spec", C.REQUIRED)],
            id="no-spec",
        ),
        pytest.param(
            {**RuntimeBuilder().dict(), "spec": {"mlPolicy": {"torch": {"numProcPerNode": "auto"}}}},
            [("spec.mlPolicy.torch.numProcPerNode", C.UNKNOWN_FIELD)],
            id="removed-v2.1-field",
        ),
    ],
)
def test_to_model_errors(obj: dict[str, Any], expected: list[tuple[str, C]]) -> None:
    assert causes(obj) == expected


FOO_BAR_RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: r
spec:
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          spec:
            template:
              spec:
                containers:
                - name: node
                  image: busybox
                  fooBar: {nested: [1, 2]}
"""


def test_unknown_fields_inside_pod_templates_survive_load_and_dump() -> None:
    (obj,) = parse_documents(FOO_BAR_RUNTIME, "r.yaml")
    dumped = dump_yaml([to_model(obj).to_dict()])
    (again,) = parse_documents(dumped, "dumped.yaml")
    container = again["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert container["containers"][0]["fooBar"] == {"nested": [1, 2]}
    assert again == obj


def test_dump_yaml_keeps_key_order_and_separates_documents() -> None:
    objs = [{"kind": "B", "apiVersion": "v1", "z": 1, "a": 2}, {"kind": "A", "script": "set -e\necho hi\n"}]
    text = dump_yaml(objs)
    assert text.startswith("---\nkind: B\napiVersion: v1\nz: 1\na: 2\n---\n")
    assert "script: |\n  set -e\n  echo hi\n" in text
    assert list(yaml.safe_load_all(text)) == objs
    assert not dump_yaml(objs[:1]).startswith("---")


def test_dump_json_single_object_or_list() -> None:
    one = {"kind": "TrainJob", "apiVersion": "trainer.kubeflow.org/v1alpha1"}
    assert json.loads(dump_json([one])) == one
    assert list(json.loads(dump_json([one, one]))) == ["apiVersion", "items", "kind", "metadata"]
    listed = json.loads(dump_json([one, one]))
    assert (listed["kind"], listed["items"]) == ("List", [one, one])
    assert parse_documents(dump_json([one, one]), "list.json") == [one, one]


def test_upstream_runtimes_round_trip() -> None:
    loaded = load_paths([UPSTREAM_RUNTIMES])
    assert len(loaded) >= 9
    for source, obj in loaded:
        assert to_model(obj).to_dict() == obj, source
