"""A write is answered with the stored object's own JSON (``handlers._render_one``): the same object a read
returns, in the version it was asked for, or as a Table when the client asked for one."""

from __future__ import annotations

from starlette.testclient import TestClient

from .conftest import TABLE

NS = "/api/v1/namespaces/default"
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}


def test_a_create_answers_the_object_a_read_returns(client: TestClient) -> None:
    created = client.post(f"{NS}/pods", json=POD)
    assert created.status_code == 201, created.text
    assert created.headers["content-type"] == "application/json"
    assert created.json() == client.get(f"{NS}/pods/p").json()


def test_a_patch_answers_the_object_a_read_returns(client: TestClient) -> None:
    client.post(f"{NS}/pods", json=POD)
    headers = {"content-type": "application/merge-patch+json"}
    patched = client.patch(f"{NS}/pods/p", json={"metadata": {"labels": {"a": "b"}}}, headers=headers)
    assert patched.status_code == 200, patched.text
    assert patched.json() == client.get(f"{NS}/pods/p").json()
    assert patched.json()["metadata"]["labels"]["a"] == "b"


def test_a_kind_stored_in_another_version_is_answered_in_the_version_asked_for(client: TestClient) -> None:
    queue = {"metadata": {"name": "q"}, "spec": {"clusterQueue": "cq"}}
    for version in ("v1beta1", "v1beta2"):
        queue["metadata"]["name"] = f"q-{version}"
        path = f"/apis/kueue.x-k8s.io/{version}/namespaces/default/localqueues"
        created = client.post(path, json=queue)
        assert created.status_code == 201, created.text
        assert created.json()["apiVersion"] == f"kueue.x-k8s.io/{version}"


def test_a_create_asked_for_as_a_table_is_a_table(client: TestClient) -> None:
    created = client.post(f"{NS}/pods", json=POD, headers={"accept": TABLE})
    assert created.status_code == 201, created.text
    assert created.json()["kind"] == "Table"
    assert [row["cells"][0] for row in created.json()["rows"]] == ["p"]
