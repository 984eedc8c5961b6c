"""`kubectl get pvc,pv,storageclass` columns, as kubectl's printers show them."""

from __future__ import annotations

from starlette.testclient import TestClient

from .conftest import TABLE

CLAIMS = "/api/v1/namespaces/default/persistentvolumeclaims"


def test_volume_kinds_print_upstreams_columns(client: TestClient) -> None:
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce", "ReadWriteMany"],
                                                    "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip
    assert client.post(CLAIMS, json=claim).status_code == 201
    volume = {"metadata": {"name": "pv-1"}, "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadOnlyMany"],
              "claimRef": {"namespace": "default", "name": "data"}, "hostPath": {"path": "/d"}}}  # fmt: skip
    assert client.post("/api/v1/persistentvolumes", json=volume).status_code == 201
    cls = {"metadata": {"name": "fast"}, "provisioner": "example.com/p"}
    assert client.post("/apis/storage.k8s.io/v1/storageclasses", json=cls).status_code == 201

    def table(path: str) -> tuple[list[str], list[object]]:
        answer = client.get(path, headers={"accept": TABLE}).json()
        return [c["name"] for c in answer["columnDefinitions"]], answer["rows"][0]["cells"]

    names, cells = table(CLAIMS)
    assert names[:6] == ["Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass"]
    assert cells[:2] == ["data", "Pending"]
    names, cells = table("/api/v1/persistentvolumes")
    assert names[1:7] == ["Capacity", "Access Modes", "Reclaim Policy", "Status", "Claim", "StorageClass"]
    assert cells[1:6] == ["1Gi", "ROX", "Retain", "Pending", "default/data"]
    names, cells = table("/apis/storage.k8s.io/v1/storageclasses")
    assert cells[:5] == ["fast", "example.com/p", "Delete", "Immediate", "false"]
