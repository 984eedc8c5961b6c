"""Every verb through the in-process app over the memory store, with the Status bodies of every error."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient

from server.conftest import TABLE, TOKEN, cluster_queue, configmap, pod

CM = "/api/v1/namespaces/default/configmaps"
CQ = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"
PODS = "/api/v1/namespaces/default/pods"
MERGE = {"content-type": "application/merge-patch+json"}


def status_of(response: Any, code: int, reason: str) -> dict[str, Any]:
    assert response.status_code == code, response.text
    body = response.json()
    assert (body["kind"], body["status"], body["code"], body["reason"]) == ("Status", "Failure", code, reason)
    return body


@pytest.mark.parametrize(
    ("headers", "path"),
    [
        ({}, "/api/v1/namespaces"),
        ({"Authorization": "Bearer wrong"}, "/api/v1/namespaces"),
        ({"Authorization": f"Basic {TOKEN}"}, "/apis"),
        ({"Authorization": f"Bearer {TOKEN}x"}, "/openapi/v3"),
    ],
    ids=["no-token", "wrong-token", "wrong-scheme", "token-prefix"],
)
def test_requests_without_the_token_get_401(client: TestClient, headers: dict[str, str], path: str) -> None:
    response = client.get(path, headers={"Authorization": ""} | headers)
    status_of(response, 401, "Unauthorized")


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz", "/version"])
def test_health_and_version_are_public(client: TestClient, path: str) -> None:
    assert client.get(path, headers={"Authorization": ""}).status_code == 200


def test_create_get_list_update_delete_configmap(client: TestClient) -> None:
    created = client.post(CM, json=configmap("a", data={"k": "v"}))
    assert created.status_code == 201
    assert created.json()["metadata"]["labels"] == {"admitted-by": "test-hook"}
    got = client.get(f"{CM}/a").json()
    assert got["data"] == {"k": "v"} and got["kind"] == "ConfigMap" and got["apiVersion"] == "v1"
    got["data"] = {"k": "w"}
    assert client.put(f"{CM}/a", json=got).json()["data"] == {"k": "w"}
    listed = client.get(CM).json()
    assert listed["kind"] == "ConfigMapList" and [i["metadata"]["name"] for i in listed["items"]] == ["a"]
    assert client.delete(f"{CM}/a").status_code == 200
    status_of(client.get(f"{CM}/a"), 404, "NotFound")


def test_create_fills_namespace_from_url_and_rejects_a_mismatch(client: TestClient) -> None:
    obj = configmap("a")
    del obj["metadata"]["namespace"]
    assert client.post(CM, json=obj).json()["metadata"]["namespace"] == "default"
    body = status_of(client.post(CM, json=configmap("b", namespace="other")), 400, "BadRequest")
    assert "namespace" in body["message"]


def test_create_in_missing_namespace_is_404(client: TestClient) -> None:
    body = status_of(
        client.post("/api/v1/namespaces/nope/configmaps", json=configmap("a", "nope")), 404, "NotFound"
    )
    assert body["message"] == 'namespaces "nope" not found'


def test_create_twice_is_409_already_exists(client: TestClient) -> None:
    client.post(CM, json=configmap("a"))
    status_of(client.post(CM, json=configmap("a")), 409, "AlreadyExists")


def test_update_with_stale_resource_version_is_409_conflict(client: TestClient) -> None:
    first = client.post(CM, json=configmap("a")).json()
    client.put(f"{CM}/a", json=first | {"data": {"x": "1"}})
    status_of(client.put(f"{CM}/a", json=first | {"data": {"x": "2"}}), 409, "Conflict")


def test_update_name_must_match_url(client: TestClient) -> None:
    client.post(CM, json=configmap("a"))
    status_of(client.put(f"{CM}/a", json=configmap("b")), 400, "BadRequest")


def test_wrong_kind_in_body_is_400(client: TestClient) -> None:
    status_of(client.post(CM, json=pod("a")), 400, "BadRequest")


def test_malformed_json_is_400_and_protobuf_is_415(client: TestClient) -> None:
    status_of(
        client.post(CM, content=b"{nope", headers={"content-type": "application/json"}), 400, "BadRequest"
    )
    proto = {"content-type": "application/vnd.kubernetes.protobuf"}
    status_of(client.post(CM, content=b"k8s\x00", headers=proto), 415, "UnsupportedMediaType")


def test_admission_rejection_is_422_with_field_causes(client: TestClient) -> None:
    body = status_of(client.post(CQ, json=cluster_queue("bad", cohort="Upper")), 422, "Invalid")
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "must be a lowercase RFC 1123 label",
            "field": "spec.cohortName",
        }
    ]
    assert "spec.cohortName" in body["message"]


@pytest.mark.parametrize(
    ("content_type", "patch"),
    [
        ("application/merge-patch+json", {"data": {"b": "2"}}),
        ("application/json-patch+json", [{"op": "add", "path": "/data/b", "value": "2"}]),
        ("application/strategic-merge-patch+json", {"data": {"b": "2"}}),
    ],
    ids=["merge", "json", "strategic"],
)
def test_patch_types(client: TestClient, content_type: str, patch: Any) -> None:
    client.post(CM, json=configmap("a", data={"a": "1"}))
    response = client.patch(f"{CM}/a", content=json.dumps(patch), headers={"content-type": content_type})
    assert response.status_code == 200, response.text
    assert response.json()["data"] == {"a": "1", "b": "2"}


def test_patch_runs_admission(client: TestClient) -> None:
    client.post(CQ, json=cluster_queue("cq"))
    status_of(client.patch(f"{CQ}/cq", json={"spec": {"cohortName": "Bad"}}, headers=MERGE), 422, "Invalid")


def test_patch_with_unknown_content_type_is_415(client: TestClient) -> None:
    client.post(CM, json=configmap("a"))
    response = client.patch(f"{CM}/a", content="{}", headers={"content-type": "text/plain"})
    status_of(response, 415, "UnsupportedMediaType")


def test_strategic_merge_patch_merges_containers_by_name(client: TestClient) -> None:
    client.post(PODS, json=pod("p", containers=("a", "b")))
    patch = {"spec": {"containers": [{"name": "b", "image": "new"}]}}
    headers = {"content-type": "application/strategic-merge-patch+json"}
    containers = client.patch(f"{PODS}/p", json=patch, headers=headers).json()["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("a", "busybox"), ("b", "new")]


def test_server_side_apply_creates_then_conflicts_between_managers(client: TestClient) -> None:
    apply = {"content-type": "application/apply-patch+yaml"}
    body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s\ndata:\n  k: one\n"
    first = client.patch(f"{CM}/s?fieldManager=alice", content=body, headers=apply)
    assert first.status_code in (200, 201), first.text
    managers = [m["manager"] for m in first.json()["metadata"]["managedFields"]]
    assert managers == ["alice"]
    other = body.replace("one", "two")
    status_of(client.patch(f"{CM}/s?fieldManager=bob", content=other, headers=apply), 409, "Conflict")
    forced = client.patch(f"{CM}/s?fieldManager=bob&force=true", content=other, headers=apply)
    assert forced.json()["data"] == {"k": "two"}


def test_server_side_apply_is_admitted(client: TestClient) -> None:
    apply = {"content-type": "application/apply-patch+yaml"}
    body = json.dumps(cluster_queue("bad", cohort="Upper"))
    status_of(client.patch(f"{CQ}/bad?fieldManager=me", content=body, headers=apply), 422, "Invalid")


def test_list_with_limit_and_continue_pages_through_everything(client: TestClient) -> None:
    for name in ("a", "b", "c"):
        client.post(CM, json=configmap(name))
    first = client.get(f"{CM}?limit=2").json()
    assert [i["metadata"]["name"] for i in first["items"]] == ["a", "b"]
    assert first["metadata"]["remainingItemCount"] == 1
    token = first["metadata"]["continue"]
    second = client.get(CM, params={"limit": 2, "continue": token}).json()
    assert [i["metadata"]["name"] for i in second["items"]] == ["c"]
    assert "continue" not in second["metadata"]


def test_bad_limit_is_400(client: TestClient) -> None:
    status_of(client.get(f"{CM}?limit=x"), 400, "BadRequest")


def test_label_and_field_selectors(client: TestClient) -> None:
    client.post(CM, json=configmap("a", meta={"labels": {"team": "x"}}))
    client.post(CM, json=configmap("b", meta={"labels": {"team": "y"}}))
    names = lambda r: [i["metadata"]["name"] for i in r.json()["items"]]  # noqa: E731
    assert names(client.get(CM, params={"labelSelector": "team=x"})) == ["a"]
    assert names(client.get(CM, params={"labelSelector": "team in (x,y),team!=x"})) == ["b"]
    assert names(client.get(CM, params={"fieldSelector": "metadata.name=b"})) == ["b"]
    status_of(client.get(CM, params={"labelSelector": "team in (x"}), 422, "Invalid")


def test_event_field_selectors_as_kubectl_describe_sends_them(client: TestClient) -> None:
    events = "/api/v1/namespaces/default/events"
    for name, target in (("e1", "p1"), ("e2", "p2")):
        involved = {"kind": "Pod", "name": target, "namespace": "default"}
        client.post(events, json={"kind": "Event", "metadata": {"name": name}, "involvedObject": involved})
    selector = "involvedObject.name=p2,involvedObject.namespace=default,involvedObject.kind=Pod"
    items = client.get(events, params={"fieldSelector": selector}).json()["items"]
    assert [i["metadata"]["name"] for i in items] == ["e2"]


def test_list_across_namespaces(client: TestClient) -> None:
    client.post("/api/v1/namespaces", json={"kind": "Namespace", "metadata": {"name": "other"}})
    client.post(CM, json=configmap("a"))
    client.post("/api/v1/namespaces/other/configmaps", json=configmap("b", "other"))
    items = client.get("/api/v1/configmaps").json()["items"]
    assert sorted((i["metadata"]["namespace"], i["metadata"]["name"]) for i in items) == [
        ("default", "a"),
        ("other", "b"),
    ]


def test_cluster_scoped_objects_drop_a_namespace(client: TestClient) -> None:
    obj = cluster_queue("cq")
    obj["metadata"]["namespace"] = "default"
    created = client.post(CQ, json=obj).json()
    assert "namespace" not in created["metadata"]


def test_delete_collection_with_selector(client: TestClient) -> None:
    client.post(CM, json=configmap("a", meta={"labels": {"gone": "yes"}}))
    client.post(CM, json=configmap("b"))
    deleted = client.request("DELETE", CM, params={"labelSelector": "gone=yes"}).json()
    assert [i["metadata"]["name"] for i in deleted["items"]] == ["a"]
    assert [i["metadata"]["name"] for i in client.get(CM).json()["items"]] == ["b"]


def _owned(name: str, owner: dict[str, Any], block: bool = False) -> dict[str, Any]:
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"]}
    ref |= {"uid": owner["metadata"]["uid"], "blockOwnerDeletion": block}
    return configmap(name, meta={"ownerReferences": [ref]})


@pytest.mark.parametrize(
    ("how", "dependent_left"),
    [
        ({"params": {"propagationPolicy": "Background"}}, False),
        ({"json": {"kind": "DeleteOptions", "propagationPolicy": "Orphan"}}, True),
        ({"params": {"orphanDependents": "true"}}, True),
    ],
    ids=["background-query", "orphan-body", "orphan-legacy"],
)
def test_delete_propagation(client: TestClient, how: dict[str, Any], dependent_left: bool) -> None:
    owner = client.post(CM, json=configmap("owner")).json()
    client.post(CM, json=_owned("dep", owner))
    assert client.request("DELETE", f"{CM}/owner", **how).status_code == 200
    dep = client.get(f"{CM}/dep")
    assert (dep.status_code == 200) is dependent_left
    if dependent_left:
        assert "ownerReferences" not in dep.json()["metadata"]


def test_foreground_delete_keeps_owner_until_dependents_are_gone(client: TestClient) -> None:
    owner = client.post(CM, json=configmap("owner")).json()
    client.post(CM, json=_owned("dep", owner, block=True))
    client.request("DELETE", f"{CM}/owner", json={"propagationPolicy": "Foreground"})
    status_of(client.get(f"{CM}/dep"), 404, "NotFound")
    status_of(client.get(f"{CM}/owner"), 404, "NotFound")


def test_bad_propagation_policy_is_400(client: TestClient) -> None:
    client.post(CM, json=configmap("a"))
    status_of(
        client.request("DELETE", f"{CM}/a", params={"propagationPolicy": "Sideways"}), 400, "BadRequest"
    )


def test_dry_run_answers_without_storing(client: TestClient) -> None:
    preview = client.post(f"{CM}?dryRun=All", json=configmap("a"))
    assert preview.status_code == 201 and preview.json()["metadata"]["labels"] == {"admitted-by": "test-hook"}
    status_of(client.get(f"{CM}/a"), 404, "NotFound")
    status_of(client.post(f"{CM}?dryRun=Some", json=configmap("a")), 400, "BadRequest")
    client.post(CM, json=configmap("b"))
    client.request("DELETE", f"{CM}/b", json={"dryRun": ["All"]})
    assert client.get(f"{CM}/b").status_code == 200


def test_status_subresource(client: TestClient) -> None:
    client.post(PODS, json=pod("p"))
    path = f"{PODS}/p/status"
    patched = client.patch(
        path, json={"status": {"phase": "Running"}, "spec": {"nodeName": "n"}}, headers=MERGE
    )
    assert patched.json()["status"] == {"phase": "Running"}
    assert "nodeName" not in patched.json()["spec"]
    current = client.get(path).json()
    current["status"]["phase"] = "Succeeded"
    assert client.put(path, json=current).json()["status"]["phase"] == "Succeeded"
    # the main resource ignores status
    obj = client.get(f"{PODS}/p").json()
    obj["status"] = {"phase": "Failed"}
    assert client.put(f"{PODS}/p", json=obj).json()["status"]["phase"] == "Succeeded"


def test_status_of_a_kind_without_the_subresource_is_404(client: TestClient) -> None:
    client.post(CM, json=configmap("a"))
    status_of(client.get(f"{CM}/a/status"), 404, "NotFound")


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", f"{CM}/a"), ("DELETE", f"{PODS}/p/status"), ("PUT", CM), ("POST", "/api/v1")],
    ids=["post-item", "delete-status", "put-collection", "post-discovery"],
)
def test_method_not_allowed_is_405(client: TestClient, method: str, path: str) -> None:
    status_of(client.request(method, path, json={}), 405, "MethodNotAllowed")


@pytest.mark.parametrize(
    "path",
    [
        "/api/v2/pods",
        "/apis/nope.io/v1/things",
        f"{CM}/a/b/c",
        "/api/v1/widgets",
        "/nothing",
        "/apis/nope.io",
    ],
)
def test_unknown_paths_are_404_status(client: TestClient, path: str) -> None:
    status_of(client.get(path), 404, "NotFound")


def test_kueue_v1beta1_presents_the_v1beta2_objects(client: TestClient) -> None:
    old = cluster_queue("cq")
    old["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    assert client.post("/apis/kueue.x-k8s.io/v1beta1/clusterqueues", json=old).status_code == 201
    assert client.get(f"{CQ}/cq").json()["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    listed = client.get("/apis/kueue.x-k8s.io/v1beta1/clusterqueues").json()
    assert listed["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert listed["items"][0]["apiVersion"] == "kueue.x-k8s.io/v1beta1"


def test_table_output_for_kubectl_get(client: TestClient) -> None:
    client.post(PODS, json=pod("p") | {"spec": {"nodeName": "n1", "containers": [{"name": "main"}]}})
    table = client.get(PODS, headers={"accept": TABLE}).json()
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Node",
        "Age",
    ]
    assert table["rows"][0]["cells"] == ["p", "0/1", "Pending", 0, "n1", "0s"]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    one = client.get(f"{PODS}/p?includeObject=Object", headers={"accept": TABLE}).json()
    assert one["rows"][0]["object"]["kind"] == "Pod"


def test_table_for_trainjob_shows_last_true_condition(client: TestClient, clock: Any) -> None:
    path = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"
    client.post(path, json={"kind": "TrainJob", "apiVersion": "trainer.kubeflow.org/v1alpha1",
                            "metadata": {"name": "tj"}, "spec": {}})  # fmt: skip
    conditions = [{"type": "Created", "status": "True"}, {"type": "Complete", "status": "False"}]
    client.patch(f"{path}/tj/status", json={"status": {"conditions": conditions}}, headers=MERGE)
    clock.advance(200)
    row = client.get(path, headers={"accept": TABLE}).json()["rows"][0]
    assert row["cells"] == ["tj", "Created", "", "False", "3m20s"]


def test_a_namespace_is_active_as_on_a_cluster(client: TestClient) -> None:
    """kube-apiserver's namespace strategy sets ``status.phase: Active`` at create: ``kubectl get ns`` shows it."""
    created = client.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": "team"}})  # fmt: skip
    assert created.status_code == 201 and created.json()["status"] == {"phase": "Active"}
    table = client.get("/api/v1/namespaces/team", headers={"Accept": TABLE}).json()
    assert table["rows"][0]["cells"][:2] == ["team", "Active"]
    assert client.get("/api/v1/namespaces/default").json()["status"]["phase"] == "Active"
