"""Every bad request of the hardening probe (issue #13), each with the status code and reason kube-apiserver
answers, and each checked to have stored nothing.

Upstream's answers: type errors are decode errors (400 ``BadRequest``, "cannot be handled as a ..."), value
errors ``ValidateObjectMeta``/``ValidatePod``... (422 ``Invalid``), bodies over 3 MiB 413, objects over
etcd's 1.5 MiB 413 (k8s.io/apiserver storage/etcd3 maps "request is too large" to 413).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient

from gangplane.store import MemoryStore
from gangplane.store.catalog import CONFIGMAPS

NS = "/api/v1/namespaces/default"
JSON = {"content-type": "application/json"}


def meta(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, **fields}


def obj(api_version: str, kind: str, name: str, **fields: Any) -> dict[str, Any]:
    m = fields.pop("metadata", {})
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, **m}, **fields}


def with_resources(resources: dict[str, Any]) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "resources": resources}
    return obj("v1", "Pod", "p", spec={"containers": [container]})


def nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value]
    return value


BAD_OWNER = {"ownerReferences": 5}
CREATES: list[tuple[str, str, Any, int, str]] = [
    # --- one bad field used to brick the control plane: now 400 and nothing stored
    (
        "service-owner-refs-5",
        f"{NS}/services",
        obj("v1", "Service", "s", metadata=BAD_OWNER),
        400,
        "BadRequest",
    ),
    (
        "namespace-owner-refs-5",
        "/api/v1/namespaces",
        obj("v1", "Namespace", "n", metadata=BAD_OWNER),
        400,
        "BadRequest",
    ),
    ("event-owner-refs-5", f"{NS}/events", obj("v1", "Event", "e", metadata=BAD_OWNER), 400, "BadRequest"),
    (
        "job-owner-refs-5",
        "/apis/batch/v1/namespaces/default/jobs",
        obj("batch/v1", "Job", "j", metadata=BAD_OWNER),
        400,
        "BadRequest",
    ),
    (
        "lease-owner-refs-5",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        obj("coordination.k8s.io/v1", "Lease", "l", metadata=BAD_OWNER),
        400,
        "BadRequest",
    ),
    (
        "owner-ref-not-object",
        f"{NS}/configmaps",
        obj("v1", "ConfigMap", "c", metadata={"ownerReferences": [5]}),
        400,
        "BadRequest",
    ),
    (
        "labels-value-number",
        f"{NS}/configmaps",
        obj("v1", "ConfigMap", "c", metadata={"labels": {"a": 5}}),
        400,
        "BadRequest",
    ),
    (
        "labels-list",
        f"{NS}/configmaps",
        obj("v1", "ConfigMap", "c", metadata={"labels": ["a"]}),
        400,
        "BadRequest",
    ),
    (
        "finalizers-5",
        f"{NS}/configmaps",
        obj("v1", "ConfigMap", "c", metadata={"finalizers": 5}),
        400,
        "BadRequest",
    ),
    (
        "finalizer-number",
        f"{NS}/configmaps",
        obj("v1", "ConfigMap", "c", metadata={"finalizers": [5]}),
        400,
        "BadRequest",
    ),
    (
        "annotations-string",
        f"{NS}/configmaps",
        obj("v1", "ConfigMap", "c", metadata={"annotations": "x"}),
        400,
        "BadRequest",
    ),
    (
        "metadata-string",
        f"{NS}/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": "c"},
        400,
        "BadRequest",
    ),
    (
        "metadata-number",
        f"{NS}/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": 5},
        400,
        "BadRequest",
    ),
    (
        "configmap-data-number",
        f"{NS}/configmaps",
        obj("v1", "ConfigMap", "c", data={"a": 1}),
        400,
        "BadRequest",
    ),
    (
        "secret-string-data-list",
        f"{NS}/secrets",
        obj("v1", "Secret", "s", stringData=["a"]),
        400,
        "BadRequest",
    ),
    (
        "secret-string-data-number",
        f"{NS}/secrets",
        obj("v1", "Secret", "s", stringData={"a": 1}),
        400,
        "BadRequest",
    ),
    (
        "secret-data-not-base64",
        f"{NS}/secrets",
        obj("v1", "Secret", "s", data={"a": "!!"}),
        400,
        "BadRequest",
    ),
    (
        "lease-duration-string",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        obj("coordination.k8s.io/v1", "Lease", "l", spec={"leaseDurationSeconds": "x"}),
        400,
        "BadRequest",
    ),
    (
        "service-port-string",
        f"{NS}/services",
        obj("v1", "Service", "s", spec={"ports": [{"port": "x"}]}),
        400,
        "BadRequest",
    ),
    (
        "nested-900",
        f"{NS}/pods",
        {**with_resources({}), "spec": {"x": nested(900), "containers": []}},
        400,
        "BadRequest",
    ),
    # --- values Kubernetes rejects: 422
    ("negative-cpu", f"{NS}/pods", with_resources({"requests": {"cpu": "-1"}}), 422, "Invalid"),
    ("gpu-2-pow-70", f"{NS}/pods", with_resources({"limits": {"nvidia.com/gpu": 2**70}}), 422, "Invalid"),
    ("fractional-gpu", f"{NS}/pods", with_resources({"limits": {"nvidia.com/gpu": "0.5"}}), 422, "Invalid"),
    (
        "request-over-limit",
        f"{NS}/pods",
        with_resources({"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}),
        422,
        "Invalid",
    ),
    ("quantity-garbage", f"{NS}/pods", with_resources({"requests": {"cpu": "lots"}}), 422, "Invalid"),
    (
        "job-negative-parallelism",
        "/apis/batch/v1/namespaces/default/jobs",
        obj("batch/v1", "Job", "j", spec={"parallelism": -1}),
        422,
        "Invalid",
    ),
    (
        "job-negative-cpu",
        "/apis/batch/v1/namespaces/default/jobs",
        obj(
            "batch/v1",
            "Job",
            "j",
            spec={"template": {"spec": with_resources({"requests": {"cpu": "-2"}})["spec"]}},
        ),
        422,
        "Invalid",
    ),
    (
        "lease-zero-duration",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        obj("coordination.k8s.io/v1", "Lease", "l", spec={"leaseDurationSeconds": 0}),
        422,
        "Invalid",
    ),
    (
        "service-port-0",
        f"{NS}/services",
        obj("v1", "Service", "s", spec={"ports": [{"port": 0}]}),
        422,
        "Invalid",
    ),
    (
        "label-key-two-slashes",
        f"{NS}/configmaps",
        obj("v1", "ConfigMap", "c", metadata={"labels": {"a/b/c": "x"}}),
        422,
        "Invalid",
    ),
    (
        "label-key-leading-dash",
        f"{NS}/configmaps",
        obj("v1", "ConfigMap", "c", metadata={"labels": {"-a": "x"}}),
        422,
        "Invalid",
    ),
    (
        "label-key-bad-prefix",
        f"{NS}/configmaps",
        obj("v1", "ConfigMap", "c", metadata={"labels": {"Example.com/a": "x"}}),
        422,
        "Invalid",
    ),
    (
        "label-value-64",
        f"{NS}/configmaps",
        obj("v1", "ConfigMap", "c", metadata={"labels": {"a": "x" * 64}}),
        422,
        "Invalid",
    ),
    (
        "label-value-space",
        f"{NS}/configmaps",
        obj("v1", "ConfigMap", "c", metadata={"labels": {"a": "b c"}}),
        422,
        "Invalid",
    ),
    ("name-a..b", f"{NS}/configmaps", obj("v1", "ConfigMap", "a..b"), 422, "Invalid"),
    ("name-upper", f"{NS}/configmaps", obj("v1", "ConfigMap", "Abc"), 422, "Invalid"),
    ("name-254", f"{NS}/configmaps", obj("v1", "ConfigMap", "a" * 254), 422, "Invalid"),
    (
        "generate-name-a..b",
        f"{NS}/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "a..b-"}},
        422,
        "Invalid",
    ),
    ("service-name-digit-first", f"{NS}/services", obj("v1", "Service", "1abc"), 422, "Invalid"),
    ("namespace-name-dot", "/api/v1/namespaces", obj("v1", "Namespace", "a.b"), 422, "Invalid"),
    (
        "annotations-over-256k",
        f"{NS}/configmaps",
        obj("v1", "ConfigMap", "c", metadata={"annotations": {"a": "x" * 262144}}),
        422,
        "Invalid",
    ),
    (
        "finalizer-two-slashes",
        f"{NS}/configmaps",
        obj("v1", "ConfigMap", "c", metadata={"finalizers": ["a/b/c"]}),
        422,
        "Invalid",
    ),
    (
        "owner-ref-no-uid",
        f"{NS}/configmaps",
        obj(
            "v1",
            "ConfigMap",
            "c",
            metadata={"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p"}]},
        ),
        422,
        "Invalid",
    ),
    (
        "two-controllers",
        f"{NS}/configmaps",
        obj(
            "v1",
            "ConfigMap",
            "c",
            metadata={
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": n, "uid": n, "controller": True} for n in "ab"
                ]
            },
        ),
        422,
        "Invalid",
    ),
    (
        "configmap-over-1mib",
        f"{NS}/configmaps",
        obj("v1", "ConfigMap", "c", data={"a": "x" * (1024 * 1024 + 1)}),
        422,
        "Invalid",
    ),
    (
        "trainingruntime-name-a..b",
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainingruntimes",
        obj("trainer.kubeflow.org/v1alpha1", "TrainingRuntime", "a..b", spec={}),
        422,
        "Invalid",
    ),
    # --- sizes
    (
        "object-over-1.5mib",
        "/apis/kueue.x-k8s.io/v1beta2/resourceflavors",
        obj(
            "kueue.x-k8s.io/v1beta2",
            "ResourceFlavor",
            "f",
            spec={"nodeLabels": {}, "x": "y" * (2 * 1024 * 1024)},
        ),
        413,
        "RequestEntityTooLarge",
    ),
    (
        "body-over-3mib",
        f"{NS}/configmaps",
        obj("v1", "ConfigMap", "c", data={"a": "x" * (3 * 1024 * 1024)}),
        413,
        "RequestEntityTooLarge",
    ),
]


def _check_status(response: Any, code: int, reason: str) -> None:
    assert response.status_code == code, response.text[:2000]
    body = response.json()
    assert (body["kind"], body["code"], body["reason"]) == ("Status", code, reason), body


@pytest.mark.parametrize(
    ("path", "body", "code", "reason"), [c[1:] for c in CREATES], ids=[c[0] for c in CREATES]
)
def test_bad_create_is_refused_and_stores_nothing(
    client: TestClient, store: MemoryStore, path: str, body: Any, code: int, reason: str
) -> None:
    before = client.get(path).json()["items"]
    _check_status(client.post(path, content=json.dumps(body), headers=JSON), code, reason)
    assert client.get(path).json()["items"] == before


@pytest.mark.parametrize(
    "raw",
    [
        b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","generation":NaN}}',
        b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"x":Infinity}',
        b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"x":-Infinity}',
        b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"x":'
        + b"[" * 900
        + b"]" * 900
        + b"}",
        b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"x":'
        + b"[" * 5000
        + b"]" * 5000
        + b"}",
    ],
    ids=["nan", "infinity", "minus-infinity", "nested-900", "nested-5000"],
)
def test_undecodable_json_is_400(client: TestClient, raw: bytes) -> None:
    _check_status(client.post(f"{NS}/configmaps", content=raw, headers=JSON), 400, "BadRequest")
    assert client.get(f"{NS}/configmaps").json()["items"] == []


def test_yaml_nan_in_apply_is_400_not_null(client: TestClient) -> None:
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\nx: .nan\n"
    headers = {"content-type": "application/apply-patch+yaml"}
    response = client.patch(f"{NS}/configmaps/c?fieldManager=t", content=body, headers=headers)
    _check_status(response, 400, "BadRequest")
    _check_status(client.get(f"{NS}/configmaps/c"), 404, "NotFound")


@pytest.mark.parametrize(
    "path", ["/openapi/v3/apis", "/openapi/v3/api", "/openapi/v3/apis/batch", "/openapi/v3/x"]
)
def test_unknown_openapi_paths_are_404(client: TestClient, path: str) -> None:
    _check_status(client.get(path), 404, "NotFound")


def _created(client: TestClient, name: str = "c") -> dict[str, Any]:
    response = client.post(f"{NS}/configmaps", json=obj("v1", "ConfigMap", name, data={"a": "b"}))
    assert response.status_code == 201, response.text
    return dict(response.json())


@pytest.mark.parametrize(
    ("content_type", "patch"),
    [
        ("application/merge-patch+json", {"metadata": {"labels": {"a": 5}}}),
        ("application/merge-patch+json", {"metadata": {"ownerReferences": 5}}),
        ("application/merge-patch+json", {"metadata": {"finalizers": "x"}}),
        ("application/json-patch+json", [{"op": "add", "path": "/metadata/labels", "value": {"a": ["b"]}}]),
        ("application/strategic-merge-patch+json", {"metadata": {"labels": {"a": {"b": "c"}}}}),
    ],
    ids=["merge-labels", "merge-owner-refs", "merge-finalizers", "json-patch-labels", "strategic-labels"],
)
def test_patches_that_break_types_are_400_and_change_nothing(
    client: TestClient, content_type: str, patch: Any
) -> None:
    before = _created(client)
    response = client.patch(
        f"{NS}/configmaps/c", content=json.dumps(patch), headers={"content-type": content_type}
    )
    _check_status(response, 400, "BadRequest")
    assert client.get(f"{NS}/configmaps/c").json() == before


def test_update_with_invalid_label_is_422(client: TestClient) -> None:
    before = _created(client)
    changed = {**before, "metadata": {**before["metadata"], "labels": {"a": "b c"}}}
    _check_status(client.put(f"{NS}/configmaps/c", json=changed), 422, "Invalid")
    assert client.get(f"{NS}/configmaps/c").json() == before


@pytest.mark.parametrize(
    "options",
    [
        {"preconditions": 5},
        {"preconditions": "x"},
        {"preconditions": {"uid": 5}},
        {"preconditions": {"resourceVersion": ["1"]}},
        {"propagationPolicy": 5},
        {"orphanDependents": "yes"},
        [1, 2],
    ],
    ids=["pre-number", "pre-string", "uid-number", "rv-list", "policy-number", "orphan-string", "body-list"],
)
def test_malformed_delete_options_are_400_and_delete_nothing(client: TestClient, options: Any) -> None:
    _created(client)
    response = client.request("DELETE", f"{NS}/configmaps/c", content=json.dumps(options), headers=JSON)
    _check_status(response, 400, "BadRequest")
    assert client.get(f"{NS}/configmaps/c").status_code == 200


def test_delete_preconditions_are_honoured(client: TestClient) -> None:
    created = _created(client)
    wrong = {"preconditions": {"uid": "not-the-uid"}}
    response = client.request("DELETE", f"{NS}/configmaps/c", content=json.dumps(wrong), headers=JSON)
    _check_status(response, 409, "Conflict")
    stale = {"preconditions": {"resourceVersion": "1"}}
    response = client.request("DELETE", f"{NS}/configmaps/c", content=json.dumps(stale), headers=JSON)
    _check_status(response, 409, "Conflict")
    right = {
        "preconditions": {
            "uid": created["metadata"]["uid"],
            "resourceVersion": created["metadata"]["resourceVersion"],
        }
    }
    response = client.request("DELETE", f"{NS}/configmaps/c", content=json.dumps(right), headers=JSON)
    assert response.status_code == 200, response.text
    _check_status(client.get(f"{NS}/configmaps/c"), 404, "NotFound")


def test_secret_string_data_is_stored_as_base64_data(client: TestClient, store: MemoryStore) -> None:
    secret = obj("v1", "Secret", "s", data={"a": "eA=="}, stringData={"b": "hello", "a": "wins"})
    response = client.post(f"{NS}/secrets", json=secret)
    assert response.status_code == 201, response.text
    stored = client.get(f"{NS}/secrets/s").json()
    assert stored["data"] == {"a": "d2lucw==", "b": "aGVsbG8="}
    assert "stringData" not in stored


def test_valid_objects_still_pass(client: TestClient) -> None:
    labels = {"example.com/a": "B_c.d-1", "x": ""}
    annotations = {"Example.com/Any": "anything at all", "a": "x" * 1000}
    cm = obj(
        "v1",
        "ConfigMap",
        "a.b-c",
        metadata={"labels": labels, "annotations": annotations, "finalizers": ["example.com/f"]},
    )
    assert client.post(f"{NS}/configmaps", json=cm).status_code == 201
    pod = with_resources(
        {"requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 2}, "limits": {"nvidia.com/gpu": "2"}}
    )
    assert client.post(f"{NS}/pods", json=pod).status_code == 201
    assert client.post(f"{NS}/configmaps", json={"metadata": {"generateName": "gen-"}}).status_code == 201
    assert store_has(client, "a.b-c")


def store_has(client: TestClient, name: str) -> bool:
    return client.get(f"{NS}/configmaps/{name}").status_code == 200


def test_store_api_refuses_what_http_refuses(store: MemoryStore) -> None:
    """Validation lives in the store's commit, so controllers writing directly are held to it too."""
    from gangplane.errors import BadRequest, Invalid

    with pytest.raises(BadRequest):
        store.create(
            CONFIGMAPS, obj("v1", "ConfigMap", "c", metadata={"namespace": "default", "ownerReferences": 5})
        )
    with pytest.raises(BadRequest):
        store.create(
            CONFIGMAPS, obj("v1", "ConfigMap", "c", metadata={"namespace": "default"}, x=float("nan"))
        )
    with pytest.raises(Invalid):
        store.create(CONFIGMAPS, obj("v1", "ConfigMap", "a..b", metadata={"namespace": "default"}))


@pytest.mark.parametrize(
    "patch",
    [
        {"$patch": "bogus"},
        {"data": {"$patch": "bogus"}},
        {"metadata": {"$retainKeys": 5}},
        {"metadata": {"$setElementOrder/finalizers": "x"}},
        {"metadata": {"$deleteFromPrimitiveList/finalizers": {"a": 1}}},
        [1],
        "x",
    ],
    ids=[
        "root-bogus",
        "nested-bogus",
        "retain-keys-number",
        "element-order-string",
        "primitive-list-map",
        "list",
        "string",
    ],
)
def test_malformed_strategic_merge_directives_are_400(client: TestClient, patch: Any) -> None:
    before = _created(client)
    headers = {"content-type": "application/strategic-merge-patch+json"}
    response = client.patch(f"{NS}/configmaps/c", content=json.dumps(patch), headers=headers)
    assert response.status_code in (400, 422), response.text
    assert response.json()["reason"] in ("BadRequest", "Invalid")
    if isinstance(patch, dict):
        _check_status(response, 400, "BadRequest")
    assert client.get(f"{NS}/configmaps/c").json() == before


def test_an_unexpected_error_is_one_500_status_and_one_log_line(
    client: TestClient, store: MemoryStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("x" * 10_000)

    monkeypatch.setattr(store, "get", broken)
    response = client.get(f"{NS}/configmaps/c")
    _check_status(response, 500, "InternalError")
    logged = [r for r in caplog.records if r.name == "gangplane.server.app"]
    assert len(logged) == 1 and logged[0].exc_info is None and len(logged[0].getMessage()) < 1000


def test_yaml_apply_keeps_timestamps_as_the_strings_written(client: TestClient) -> None:
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  day: 2024-01-01\n"
    headers = {"content-type": "application/apply-patch+yaml"}
    response = client.patch(f"{NS}/configmaps/c?fieldManager=t", content=body, headers=headers)
    assert response.status_code in (200, 201), response.text
    assert client.get(f"{NS}/configmaps/c").json()["data"] == {"day": "2024-01-01"}
