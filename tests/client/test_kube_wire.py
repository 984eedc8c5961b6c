"""The pure Kubernetes REST mapping of ``KubeStore``: paths, query parameters, bodies and Status errors."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from gangplane.client import kubeapi
from gangplane.client.kube import KubeStore
from gangplane.errors import (
    AlreadyExists,
    CauseType,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    Unauthorized,
)
from gangplane.store.base import EventType, ListOptions
from gangplane.store.catalog import CLUSTER_QUEUES, NODES, PODS, TRAINJOBS


@pytest.mark.parametrize(
    ("rt", "namespace", "name", "sub", "path"),
    [
        (PODS, "default", "p", "", "/api/v1/namespaces/default/pods/p"),
        (PODS, "default", "p", "log", "/api/v1/namespaces/default/pods/p/log"),
        (NODES, "", "n1", "status", "/api/v1/nodes/n1/status"),
        (
            TRAINJOBS,
            "team",
            "mnist",
            "",
            "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/mnist",
        ),
        (CLUSTER_QUEUES, "", "cq", "", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq"),
    ],
)
def test_object_paths(rt: Any, namespace: str, name: str, sub: str, path: str) -> None:
    assert kubeapi.object_path(rt, namespace, name, sub) == path


def test_collection_paths_across_namespaces_and_for_cluster_types() -> None:
    assert kubeapi.collection_path(PODS, None) == "/api/v1/pods"
    assert kubeapi.collection_path(PODS, "ns") == "/api/v1/namespaces/ns/pods"
    assert kubeapi.collection_path(NODES, "ignored") == "/api/v1/nodes"


def test_list_and_watch_parameters() -> None:
    options = ListOptions("ns", "app=x", "spec.nodeName=n1", limit=5, continue_token="abc")
    assert kubeapi.list_params(options) == {
        "labelSelector": "app=x", "fieldSelector": "spec.nodeName=n1", "limit": "5", "continue": "abc"
    }  # fmt: skip
    assert kubeapi.list_params(ListOptions()) == {}
    assert kubeapi.watch_params(options, "42", True, 0.1) == {
        "labelSelector": "app=x", "fieldSelector": "spec.nodeName=n1", "watch": "true",
        "resourceVersion": "42", "allowWatchBookmarks": "true", "timeoutSeconds": "1",
    }  # fmt: skip
    assert kubeapi.watch_params(ListOptions(), "", False, 2.5) == {"watch": "true", "timeoutSeconds": "3"}


def test_patch_types_and_bodies() -> None:
    assert kubeapi.patch_media_type("merge") == kubeapi.MERGE_PATCH
    assert kubeapi.patch_media_type("application/apply-patch+json") == kubeapi.APPLY_PATCH
    with pytest.raises(Invalid):
        kubeapi.patch_media_type("application/x-unknown")
    assert kubeapi.patch_body({"a": 1}) == b'{"a":1}'
    assert kubeapi.patch_body("a: 1\n") == b"a: 1\n"


def test_writes_need_a_namespace_for_namespaced_types() -> None:
    with pytest.raises(Invalid) as info:
        kubeapi.namespace_for(PODS, {"metadata": {"name": "p"}})
    assert info.value.causes[0].path == "metadata.namespace"
    assert kubeapi.namespace_for(NODES, {"metadata": {"name": "n", "namespace": "x"}}) == ""


def test_list_items_get_their_type() -> None:
    body = {"metadata": {"resourceVersion": "9", "continue": "c", "remainingItemCount": 3},
            "items": [{"metadata": {"name": "a"}}]}  # fmt: skip
    listed = kubeapi.object_list(PODS, body)
    assert listed.items == [{"metadata": {"name": "a"}, "apiVersion": "v1", "kind": "Pod"}]
    assert (listed.resource_version, listed.continue_token, listed.remaining) == ("9", "c", 3)


def _status(code: int, reason: str, **details: Any) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": f"it is {reason}",
            "reason": reason, "code": code, "details": details}  # fmt: skip


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (404, "NotFound", NotFound),
        (409, "AlreadyExists", AlreadyExists),
        (409, "Conflict", Conflict),
        (410, "Expired", Gone),
        (410, "Gone", Gone),
        (401, "Unauthorized", Unauthorized),
        (403, "Forbidden", Forbidden),
        (422, "Invalid", Invalid),
    ],
)
def test_status_bodies_become_gangplane_errors(code: int, reason: str, expected: type) -> None:
    error = kubeapi.error_from_status(code, _status(code, reason, name="x", kind="pods"))
    assert type(error) is expected and error.code == code and error.message == f"it is {reason}"


def test_invalid_keeps_every_field_cause() -> None:
    causes = [{"reason": "FieldValueInvalid", "message": "must be >= 1", "field": "spec.trainer.numNodes"},
              {"reason": "SomethingNew", "message": "odd", "field": "spec.x"}]  # fmt: skip
    error = kubeapi.error_from_status(422, _status(422, "Invalid", kind="TrainJob", name="j", causes=causes))
    assert isinstance(error, Invalid) and (error.kind, error.name) == ("TrainJob", "j")
    assert [(c.path, c.type, c.detail) for c in error.causes] == [
        ("spec.trainer.numNodes", CauseType.INVALID, "must be >= 1"),
        ("spec.x", CauseType.INVALID, "odd"),
    ]


def test_other_errors_keep_the_servers_code_and_reason() -> None:
    error = kubeapi.error_from_status(400, _status(400, "BadRequest"))
    assert isinstance(error, kubeapi.ServerError) and (error.code, error.reason) == (400, "BadRequest")
    plain = kubeapi.error_from_status(503, "upstream unavailable")
    assert (plain.code, plain.reason, plain.message) == (503, "InternalError", "upstream unavailable")


def test_watch_lines() -> None:
    event = kubeapi.watch_event(
        PODS, b'{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"7"}}}'
    )
    assert (event.type, event.resource_version, event.object["kind"]) == (EventType.ADDED, 7, "Pod")
    with pytest.raises(Gone):
        kubeapi.watch_event(PODS, json.dumps({"type": "ERROR", "object": _status(410, "Expired")}))


def _mock_store(handler: Any) -> KubeStore:
    return KubeStore(httpx2.Client(transport=httpx2.MockTransport(handler), base_url="http://api"))


def test_an_error_inside_a_watch_stream_is_raised_from_the_iterator() -> None:
    """Real API servers report a too-old resourceVersion as an ERROR event in a 200 stream."""
    lines = [{"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "5"}}},
             {"type": "ERROR", "object": _status(410, "Expired")}]  # fmt: skip
    body = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, content=body)

    store = _mock_store(handler)
    events = iter(store.watch(PODS, ListOptions(namespace="ns"), "4"))
    assert next(events).object["metadata"]["name"] == "a"
    with pytest.raises(Gone):
        next(events)
    assert seen[0].url.path == "/api/v1/namespaces/ns/pods"
    assert dict(seen[0].url.params) == {"watch": "true", "resourceVersion": "4"}
    store.close()


def test_list_all_follows_continue_tokens() -> None:
    pages = {"": ("a", "t1"), "t1": ("b", "t2"), "t2": ("c", "")}

    def handler(request: httpx2.Request) -> httpx2.Response:
        assert request.url.params["limit"] == "1"
        name, token = pages[request.url.params.get("continue", "")]
        meta = {"resourceVersion": "3", **({"continue": token} if token else {})}
        return httpx2.Response(200, json={"metadata": meta, "items": [{"metadata": {"name": name}}]})

    listed = _mock_store(handler).list_all(PODS, page=1)
    assert [o["metadata"]["name"] for o in listed.items] == ["a", "b", "c"] and listed.resource_version == "3"
