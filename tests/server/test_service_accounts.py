"""Pods' service-account tokens at the API server: authenticated while their pod (and ServiceAccount)
exist, confined to the service-account policy (403 with kube-apiserver's message), and the reviews that
`kubectl auth can-i` / `whoami` read answer for that identity."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from gangplane.api import serviceaccount_token as sat
from gangplane.clock import ManualClock
from gangplane.server import authz
from gangplane.server.app import create_app
from gangplane.store import MemoryStore
from gangplane.store.catalog import NAMESPACES, PODS, SERVICE_ACCOUNTS

from .conftest import TOKEN


def _pod(store: MemoryStore, name: str, namespace: str = "default") -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "main", "image": "python"}]}}  # fmt: skip
    return store.create(PODS, body)


def _token(pod: dict[str, Any], account: str = "default", sa_uid: str = "") -> dict[str, str]:
    meta = pod["metadata"]
    bound = sat.Binding(meta["namespace"], account, meta["name"], meta["uid"], sa_uid)
    return {"Authorization": f"Bearer {sat.issue(sat.signing_key(TOKEN), bound, 0, 'j')}"}


@pytest.fixture
def anonymous(store: MemoryStore, logs_dir: Path, clock: ManualClock) -> TestClient:
    return TestClient(create_app(store, token=TOKEN, logs_dir=logs_dir, clock=clock))


def test_the_token_works_in_its_namespace_and_reads_cluster_scoped_objects(
    store: MemoryStore, anonymous: TestClient
) -> None:
    auth = _token(_pod(store, "trainer"))
    assert anonymous.get("/api/v1/namespaces/default/pods", headers=auth).status_code == 200
    made = anonymous.post("/api/v1/namespaces/default/configmaps", headers=auth,
                          json={"metadata": {"name": "out"}, "data": {"k": "v"}})  # fmt: skip
    assert made.status_code == 201
    for path in ("/api/v1/nodes", "/api/v1/namespaces/default", "/api", "/apis", "/version"):
        assert anonymous.get(path, headers=auth).status_code == 200, path


@pytest.mark.parametrize(
    ("method", "path", "message"),
    [
        ("GET", "/api/v1/pods", 'cannot list resource "pods" in API group "" at the cluster scope'),
        ("GET", "/api/v1/namespaces/kube-system/secrets", 'cannot list resource "secrets" in API group "" '
                                                           'in the namespace "kube-system"'),
        ("POST", "/api/v1/namespaces", 'cannot create resource "namespaces"'),
        ("DELETE", "/api/v1/namespaces/default", 'namespaces "default" is forbidden'),
        ("DELETE", "/apis/scheduling.k8s.io/v1/priorityclasses/high", 'cannot delete resource "priorityclasses"'),
        ("GET", "/metrics", 'cannot get path "/metrics"'),
    ],
)  # fmt: skip
def test_cluster_admin_actions_are_forbidden(
    store: MemoryStore, anonymous: TestClient, method: str, path: str, message: str
) -> None:
    auth = _token(_pod(store, "trainer"))
    answer = anonymous.request(method, path, headers=auth, json={"metadata": {"name": "x"}})
    assert answer.status_code == 403 and answer.json()["reason"] == "Forbidden"
    assert message in answer.json()["message"]
    assert 'User "system:serviceaccount:default:default"' in answer.json()["message"]


def test_deleting_the_pod_or_the_service_account_revokes_the_token(
    store: MemoryStore, anonymous: TestClient
) -> None:
    account = store.create(SERVICE_ACCOUNTS, {"metadata": {"name": "runner", "namespace": "default"}})
    pod = _pod(store, "trainer")
    by_pod, by_account = _token(pod), _token(pod, "runner", account["metadata"]["uid"])
    assert anonymous.get("/api/v1/namespaces/default/pods", headers=by_account).status_code == 200
    store.delete(SERVICE_ACCOUNTS, "default", "runner")
    assert anonymous.get("/api/v1/namespaces/default/pods", headers=by_account).status_code == 401
    assert anonymous.get("/api/v1/namespaces/default/pods", headers=by_pod).status_code == 200
    store.delete(PODS, "default", "trainer")
    _pod(store, "trainer")  # the same name again: another uid, so the old token stays revoked
    assert anonymous.get("/api/v1/namespaces/default/pods", headers=by_pod).status_code == 401


def test_a_token_signed_with_another_key_is_unauthorized(store: MemoryStore, anonymous: TestClient) -> None:
    meta = _pod(store, "trainer")["metadata"]
    bound = sat.Binding("default", "default", "trainer", meta["uid"])
    forged = sat.issue(sat.signing_key("not-the-admin-token"), bound, 0, "j")
    answer = anonymous.get("/api/v1/namespaces/default/pods", headers={"Authorization": f"Bearer {forged}"})
    assert answer.status_code == 401


def test_reviews_answer_for_the_service_account(store: MemoryStore, anonymous: TestClient) -> None:
    store.create(NAMESPACES, {"metadata": {"name": "other"}})
    auth = _token(_pod(store, "trainer"))
    whoami = anonymous.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", headers=auth, json={})
    assert whoami.json()["status"]["userInfo"]["username"] == "system:serviceaccount:default:default"

    def can(**attributes: str) -> bool:
        review = {"kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": attributes}}
        path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
        return bool(anonymous.post(path, headers=auth, json=review).json()["status"]["allowed"])

    assert can(verb="create", resource="pods", namespace="default")
    assert can(verb="list", resource="nodes") and not can(verb="delete", resource="nodes", name="n")
    assert not can(verb="get", resource="secrets", namespace="other")
    rules = anonymous.post("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", headers=auth,
                           json={"spec": {"namespace": "other"}}).json()["status"]  # fmt: skip
    assert {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]} not in rules["resourceRules"]
    assert any(
        "nodes" in r["resources"] and r["verbs"] == ["get", "list", "watch"] for r in rules["resourceRules"]
    )


# staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo_test.go, TestGetAPIRequestInfo (the cases
# for paths gangplane serves; the deprecated /watch/ prefix is not served).
@pytest.mark.parametrize(
    ("method", "path", "verb", "group", "namespace", "resource", "subresource", "name"),
    [
        ("GET", "/api/v1/namespaces", "list", "", "", "namespaces", "", ""),
        ("GET", "/api/v1/namespaces/other", "get", "", "other", "namespaces", "", "other"),
        ("GET", "/api/v1/namespaces/other/pods", "list", "", "other", "pods", "", ""),
        ("GET", "/api/v1/namespaces/other/pods/foo", "get", "", "other", "pods", "", "foo"),
        ("HEAD", "/api/v1/namespaces/other/pods/foo", "head", "", "other", "pods", "", "foo"),
        ("GET", "/api/v1/pods", "list", "", "", "pods", "", ""),
        ("POST", "/api/v1/namespaces/other/pods", "create", "", "other", "pods", "", ""),
        ("PUT", "/api/v1/namespaces/other/pods/foo", "update", "", "other", "pods", "", "foo"),
        ("PATCH", "/api/v1/namespaces/other/pods/foo", "patch", "", "other", "pods", "", "foo"),
        ("DELETE", "/api/v1/namespaces/other/pods/foo", "delete", "", "other", "pods", "", "foo"),
        ("DELETE", "/api/v1/namespaces/other/pods", "deletecollection", "", "other", "pods", "", ""),
        ("GET", "/api/v1/namespaces/other/pods/foo/status", "get", "", "other", "pods", "status", "foo"),
        ("PUT", "/api/v1/namespaces/other/finalize", "update", "", "other", "namespaces", "finalize", "other"),
        ("GET", "/apis/extensions/v1beta1/namespaces/other/extensions", "list", "extensions", "other",
         "extensions", "", ""),
        ("GET", "/apis/extensions/v1beta1/extensions", "list", "extensions", "", "extensions", "", ""),
    ],
)  # fmt: skip
def test_request_attributes_as_kube_apiserver_resolves_them(
    method: str, path: str, verb: str, group: str, namespace: str, resource: str, subresource: str, name: str
) -> None:
    attrs = authz.request_attributes(method, path)
    got = (attrs.verb, attrs.group, attrs.namespace, attrs.resource, attrs.subresource, attrs.name)
    assert got == (verb, group, namespace, resource, subresource, name)


def test_watch_is_its_own_verb_and_short_paths_are_non_resource() -> None:
    assert authz.request_attributes("GET", "/api/v1/namespaces/a/pods", "watch=true").verb == "watch"
    assert authz.request_attributes("GET", "/apis/batch").is_resource is False


def test_a_token_for_another_audience_is_unauthorized(store: MemoryStore, anonymous: TestClient) -> None:
    meta = _pod(store, "trainer")["metadata"]
    bound = sat.Binding("default", "default", "trainer", meta["uid"])
    vault = sat.issue(sat.signing_key(TOKEN), bound, 0, "j", audience="vault")
    answer = anonymous.get("/api/v1/namespaces/default/pods", headers={"Authorization": f"Bearer {vault}"})
    assert answer.status_code == 401


def _field(number: int, payload: bytes) -> bytes:
    return bytes([number << 3 | 2, len(payload)]) + payload


def test_kubectls_protobuf_access_review_is_answered_for_its_attributes(
    store: MemoryStore, anonymous: TestClient
) -> None:
    """`kubectl auth can-i` sends protobuf; its attributes decide (cluster-scoped kinds named with kubectl's
    current namespace are judged as cluster-scoped)."""
    auth = {**_token(_pod(store, "trainer")), "content-type": "application/vnd.kubernetes.protobuf"}

    def can(verb: str, resource: str, namespace: str) -> bool:
        attributes = _field(1, namespace.encode()) + _field(2, verb.encode()) + _field(5, resource.encode())
        type_meta = _field(1, b"authorization.k8s.io/v1") + _field(2, b"SelfSubjectAccessReview")
        body = b"k8s\x00" + _field(1, type_meta) + _field(2, _field(2, _field(1, attributes)))
        path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
        answer = anonymous.post(path, headers=auth, content=body).json()
        assert answer["spec"]["resourceAttributes"]["verb"] == verb
        return bool(answer["status"]["allowed"])

    assert can("list", "pods", "default") and not can("list", "pods", "kube-system")
    assert can("get", "nodes", "default") and not can("delete", "nodes", "default")
