"""A large list is sent as it is encoded (``streams.list_chunks``), in the same bytes as one body would be;
a small one keeps its single body with a Content-Length."""

from __future__ import annotations

import json

from starlette.testclient import TestClient

from gangplane.store import MemoryStore
from gangplane.store.catalog import CONFIGMAPS

CM = "/api/v1/namespaces/default/configmaps"


def _configmaps(store: MemoryStore, count: int) -> None:
    for i in range(count):
        data = {"text": "é" * 400, "n": str(i)}  # ~1 KB each: the list spans several chunks
        store.create(CONFIGMAPS, {"metadata": {"name": f"cm-{i:04d}", "namespace": "default"}, "data": data})


def test_a_large_list_is_streamed_in_the_bytes_of_one_body(client: TestClient, store: MemoryStore) -> None:
    count = 200  # past STREAMED_ITEMS, and three 64 KiB chunks
    _configmaps(store, count)
    response = client.get(CM)
    assert response.status_code == 200
    assert "content-length" not in response.headers  # chunked: never encoded whole
    body = response.json()
    assert [i["metadata"]["name"] for i in body["items"]] == [f"cm-{i:04d}" for i in range(count)]
    assert body["kind"] == "ConfigMapList" and body["metadata"]["resourceVersion"]
    assert response.content == json.dumps(body, separators=(",", ":")).encode()


def test_a_small_list_is_one_body(client: TestClient, store: MemoryStore) -> None:
    _configmaps(store, 3)
    response = client.get(CM)
    assert int(response.headers["content-length"]) == len(response.content)
    assert len(response.json()["items"]) == 3
