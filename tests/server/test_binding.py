"""``pods/binding`` and ``bindings``: one write assigns a pod, with kube-apiserver's answers (201 Success,
409 when already bound or being deleted or the UID differs, 404 for a missing pod, 400/422 for a bad body)."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from gangplane.store import MemoryStore
from gangplane.store.base import EventType, ListOptions
from gangplane.store.binding import pod_binding
from gangplane.store.catalog import PODS
from server.conftest import pod

BASE = "/api/v1/namespaces/default"


def _bind(client: TestClient, name: str, node: str = "n1", **meta: Any) -> Any:
    body = pod_binding("default", name, node)
    body["metadata"].update(meta)
    return client.post(f"{BASE}/pods/{name}/binding", json=body)


def _failure(response: Any, code: int, reason: str) -> str:
    assert response.status_code == code, response.text
    body = response.json()
    assert (body["kind"], body["status"], body["reason"]) == ("Status", "Failure", reason)
    return str(body["message"])


def test_binding_sets_node_and_condition_in_one_write(client: TestClient, store: MemoryStore) -> None:
    created = client.post(f"{BASE}/pods", json=pod("p")).json()
    rv = created["metadata"]["resourceVersion"]
    watch = store.watch(PODS, ListOptions(namespace="default"), rv)
    response = _bind(client, "p", annotations={"note": "from-binding"})
    assert response.status_code == 201, response.text
    assert response.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    events = iter(watch)
    event = next(events)
    watch.close()
    assert event.type is EventType.MODIFIED
    bound = event.object
    assert bound["spec"]["nodeName"] == "n1"
    assert bound["metadata"]["annotations"]["note"] == "from-binding"
    [cond] = [c for c in bound["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert cond["status"] == "True"
    assert int(bound["metadata"]["resourceVersion"]) == int(rv) + 1  # one write
    assert client.get(f"{BASE}/pods/p").json()["spec"]["nodeName"] == "n1"


def test_binding_an_assigned_pod_is_409_and_changes_nothing(client: TestClient) -> None:
    client.post(f"{BASE}/pods", json=pod("p"))
    assert _bind(client, "p", "n1").status_code == 201
    message = _failure(_bind(client, "p", "n2"), 409, "Conflict")
    assert message == 'pod p is already assigned to node "n1"'
    assert client.get(f"{BASE}/pods/p").json()["spec"]["nodeName"] == "n1"


def test_binding_a_missing_pod_is_404(client: TestClient) -> None:
    _failure(_bind(client, "nope"), 404, "NotFound")


def test_binding_with_a_stale_uid_is_409(client: TestClient) -> None:
    client.post(f"{BASE}/pods", json=pod("p"))
    message = _failure(_bind(client, "p", uid="not-the-uid"), 409, "Conflict")
    assert "UID in precondition" in message
    assert not client.get(f"{BASE}/pods/p").json()["spec"].get("nodeName")


def test_binding_a_deleting_pod_is_409(client: TestClient) -> None:
    client.post(f"{BASE}/pods", json=pod("p", metadata={"name": "p", "finalizers": ["x/y"]}))
    client.delete(f"{BASE}/pods/p")
    assert "being deleted" in _failure(_bind(client, "p"), 409, "Conflict")


def test_bad_bindings_are_rejected(client: TestClient) -> None:
    client.post(f"{BASE}/pods", json=pod("p"))
    other = pod_binding("default", "q", "n1")
    assert "does not match" in _failure(client.post(f"{BASE}/pods/p/binding", json=other), 400, "BadRequest")
    no_node = pod_binding("default", "p", "")
    message = _failure(client.post(f"{BASE}/pods/p/binding", json=no_node), 422, "Invalid")
    assert "target.name" in message
    wrong_kind = pod_binding("default", "p", "n1")
    wrong_kind["target"]["kind"] = "Pod"
    assert "target.kind" in _failure(client.post(f"{BASE}/pods/p/binding", json=wrong_kind), 422, "Invalid")


def test_malformed_binding_metadata_is_400_not_a_crash(client: TestClient) -> None:
    """Found by the OpenAPI fuzz: a list where metadata or its annotations belong crashed both routes."""
    client.post(f"{BASE}/pods", json=pod("p"))
    for metadata in ([], {"name": "p", "annotations": []}, {"name": "p", "uid": 7}):
        body = {**pod_binding("default", "p", "n1"), "metadata": metadata}
        for path in (f"{BASE}/pods/p/binding", f"{BASE}/bindings"):
            _failure(client.post(path, json=body), 400, "BadRequest")
    assert client.get(f"{BASE}/pods/p").json()["spec"].get("nodeName") is None


def test_bindings_collection_binds_the_named_pod(client: TestClient) -> None:
    """What ``kubectl create -f binding.yaml`` posts."""
    client.post(f"{BASE}/pods", json=pod("p"))
    response = client.post(f"{BASE}/bindings", json=pod_binding("default", "p", "n3"))
    assert response.status_code == 201, response.text
    assert client.get(f"{BASE}/pods/p").json()["spec"]["nodeName"] == "n3"
    _failure(client.post(f"{BASE}/bindings", json=pod_binding("default", "p", "n3")), 409, "Conflict")


def test_discovery_lists_the_binding_subresource(client: TestClient) -> None:
    resources = {r["name"]: r for r in client.get("/api/v1").json()["resources"]}
    assert resources["pods/binding"]["verbs"] == ["create"] and resources["pods/binding"]["kind"] == "Binding"
    assert resources["bindings"]["verbs"] == ["create"]


def test_the_bound_pod_keeps_the_stored_containers_instead_of_a_copy(
    client: TestClient, store: MemoryStore
) -> None:
    """The binding copies only what it changes: the new version shares the rest with the previous one."""
    client.post(f"{BASE}/pods", json=pod("p")).raise_for_status()
    before = store.list_shared(PODS).items[0]
    assert _bind(client, "p").status_code == 201
    after = store.list_shared(PODS).items[0]
    assert after["spec"]["nodeName"] == "n1" and "nodeName" not in before["spec"]
    assert after["spec"]["containers"] is before["spec"]["containers"]
    assert (before.get("status") or {}).get("conditions") != after["status"]["conditions"]  # left as it was
