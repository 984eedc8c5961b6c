"""``/openapi/v2``: the Swagger 2.0 document in JSON and in gnostic's protobuf form (``server/openapi_v2``);
what kubectl reads from it is checked by ``test_kubectl.py`` with kubectl 1.27."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from gangplane.server import openapi_v2
from gangplane.server.protowire import fields

ASK_PROTOBUF = {"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}
TRAINJOB = "org.kubeflow.trainer.v1alpha1.TrainJob"
TRAINJOB_ITEM = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/{name}"


def _named(data: bytes, number: int) -> dict[str, bytes]:
    """The (name 1, value 2) entries of a repeated named field."""
    found = {}
    for entry in fields(data).get(number, []):
        assert isinstance(entry, bytes)
        parts = fields(entry)
        name, value = parts[1][0], parts.get(2, [b""])[0]
        assert isinstance(name, bytes) and isinstance(value, bytes)
        found[name.decode()] = value
    return found


def _one(data: bytes, number: int) -> bytes:
    [value] = fields(data)[number]
    assert isinstance(value, bytes)
    return value


def test_the_json_document_has_every_kind_and_the_field_validation_parameter(client: TestClient) -> None:
    response = client.get("/openapi/v2")
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    doc: dict[str, Any] = response.json()
    assert doc["swagger"] == "2.0"
    patch = doc["paths"][TRAINJOB_ITEM]["patch"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": "TrainJob"}  # fmt: skip
    assert patch["responses"]["200"]["schema"] == {"$ref": f"#/definitions/{TRAINJOB}"}
    spec = doc["definitions"][TRAINJOB]["properties"]["spec"]
    assert spec["properties"]["suspend"] == {"type": "boolean", "default": False}
    pod_spec = doc["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]
    assert pod_spec["containers"]["items"] == {"$ref": "#/definitions/io.k8s.api.core.v1.Container"}
    limits = doc["definitions"][TRAINJOB]["properties"]["spec"]["properties"]["trainer"]["properties"]
    quantity = limits["resourcesPerNode"]["properties"]["limits"]["additionalProperties"]
    assert (quantity["type"], quantity["format"]) == ("string", "int-or-string") and "anyOf" not in quantity


def test_the_protobuf_document_is_gnostics_wire_form(client: TestClient) -> None:
    response = client.get("/openapi/v2", headers=ASK_PROTOBUF)
    assert response.headers["content-type"] == openapi_v2.PROTOBUF
    doc = response.content
    assert _one(doc, 1) == b"2.0"
    definitions = _named(_one(doc, 9), 1)
    spec = _named(_one(definitions[TRAINJOB], 25), 1)["spec"]  # properties > spec
    suspend = _named(_one(spec, 25), 1)["suspend"]
    assert _one(_one(suspend, 22), 1) == b"boolean"  # type
    assert _one(_one(suspend, 5), 2) == b"false"  # default, as YAML
    extensions = _named(definitions[TRAINJOB], 31)
    gvk = _one(extensions["x-kubernetes-group-version-kind"], 2)
    assert b'"kind": "TrainJob"' in gvk
    patch = _one(_named(_one(doc, 8), 2)[TRAINJOB_ITEM], 8)
    names = []
    for item in fields(patch)[8]:  # parameters > parameter > non-body > query > name
        assert isinstance(item, bytes)
        parameter = _one(item, 1)
        if 2 in fields(parameter):
            names.append(_one(_one(_one(parameter, 2), 3), 4).decode())
    assert "fieldValidation" in names


def test_a_schema_encodes_every_keyword_it_has() -> None:
    schema = {"type": "object", "required": ["a"], "additionalProperties": False, "minProperties": 1,
              "properties": {"a": {"type": "integer", "minimum": 0, "enum": [1, 2]}}}  # fmt: skip
    encoded = fields(openapi_v2.encode_schema(schema))
    assert encoded[19] == [b"a"] and encoded[17 + 1] == [1]  # required, minProperties
    assert fields(_one(openapi_v2.encode_schema(schema), 21)) == {2: [0]}  # additionalProperties: false
    a = _named(_one(openapi_v2.encode_schema(schema), 25), 1)["a"]
    assert [fields(e)[2][0] for e in fields(a)[20]] == [b"1", b"2"]  # enum values as YAML
