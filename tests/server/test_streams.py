"""Watch streams and pod logs through the in-process app (bounded by timeoutSeconds / pod completion)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.testclient import TestClient

from gangplane.server.app import create_app
from gangplane.server.lifecycle import ensure_default_namespace
from gangplane.server.resources import default_registry
from gangplane.server.streams import watch_lines
from gangplane.store import MemoryStore, ResourceType, WatchEvent
from server.conftest import TABLE, configmap, pod

CM = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
CONFIGMAP_TYPE = ResourceType("", "v1", "ConfigMap", "configmaps", has_status=False)


def events(response: Any) -> list[tuple[str, str]]:
    assert response.status_code == 200, response.text
    lines = [json.loads(line) for line in response.text.splitlines() if line]
    return [(e["type"], e["object"].get("metadata", {}).get("name", "")) for e in lines]


def test_watch_from_a_list_version_streams_changes_in_order(client: TestClient) -> None:
    client.post(CM, json=configmap("old"))
    rv = client.get(CM).json()["metadata"]["resourceVersion"]
    client.post(CM, json=configmap("a"))
    client.patch(
        f"{CM}/a", json={"data": {"x": "1"}}, headers={"content-type": "application/merge-patch+json"}
    )
    client.delete(f"{CM}/a")
    response = client.get(CM, params={"watch": "1", "resourceVersion": rv, "timeoutSeconds": "1"})
    assert events(response) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


def test_watch_without_version_starts_with_current_objects_and_filters_labels(client: TestClient) -> None:
    client.post(CM, json=configmap("a", meta={"labels": {"x": "1"}}))
    client.post(CM, json=configmap("b"))
    response = client.get(CM, params={"watch": "true", "labelSelector": "x=1", "timeoutSeconds": "1"})
    assert events(response) == [("ADDED", "a")]


def test_watch_bookmarks_only_when_asked(client: TestClient) -> None:
    client.post(CM, json=configmap("a"))
    asked = events(
        client.get(CM, params={"watch": "1", "allowWatchBookmarks": "true", "timeoutSeconds": "1"})
    )
    assert ("ADDED", "a") in asked and any(t == "BOOKMARK" for t, _ in asked)
    plain = events(client.get(CM, params={"watch": "1", "timeoutSeconds": "1"}))
    assert all(t != "BOOKMARK" for t, _ in plain)


def test_watch_as_table_for_kubectl_get_w(client: TestClient) -> None:
    client.post(CM, json=configmap("a", data={"k": "v"}))
    response = client.get(CM, params={"watch": "1", "timeoutSeconds": "1"}, headers={"accept": TABLE})
    event = json.loads(response.text.splitlines()[0])
    assert event["type"] == "ADDED" and event["object"]["kind"] == "Table"
    assert event["object"]["rows"][0]["cells"][:2] == ["a", 1]


def test_watch_from_a_compacted_version_is_410(tmp_path: Path) -> None:
    store = MemoryStore(history_size=2)
    ensure_default_namespace(store)
    rt = default_registry().find("", "v1", "configmaps")
    assert rt is not None
    for i in range(5):
        store.create(rt.storage, configmap(f"c{i}"))
    with TestClient(
        create_app(store, token="t", logs_dir=tmp_path), headers={"Authorization": "Bearer t"}
    ) as c:
        response = c.get(CM, params={"watch": "1", "resourceVersion": "1", "timeoutSeconds": "1"})
    assert response.status_code == 410 and response.json()["reason"] == "Expired"


def test_watch_with_bad_resource_version_is_rejected(client: TestClient) -> None:
    response = client.get(CM, params={"watch": "1", "resourceVersion": "abc", "timeoutSeconds": "1"})
    assert response.status_code == 422


# --- pod logs ---------------------------------------------------------------------------------------------


def write_log(logs_dir: Path, pod_name: str, container: str, text: str) -> Path:
    path = logs_dir / "default" / pod_name / f"{container}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_logs_whole_and_tailed(client: TestClient, logs_dir: Path) -> None:
    client.post(PODS, json=pod("p"))
    write_log(logs_dir, "p", "main", "one\ntwo\nthree\n")
    assert client.get(f"{PODS}/p/log").text == "one\ntwo\nthree\n"
    assert client.get(f"{PODS}/p/log?tailLines=2").text == "two\nthree\n"
    assert client.get(f"{PODS}/p/log?tailLines=0").text == ""


def test_logs_of_a_container_not_started_yet_are_empty(client: TestClient) -> None:
    client.post(PODS, json=pod("p"))
    response = client.get(f"{PODS}/p/log")
    assert response.status_code == 200 and response.text == ""


def test_logs_need_a_container_name_when_there_are_several(client: TestClient, logs_dir: Path) -> None:
    client.post(PODS, json=pod("p", containers=("a", "b")))
    write_log(logs_dir, "p", "b", "from b\n")
    response = client.get(f"{PODS}/p/log")
    assert response.status_code == 400 and "choose one of: [a b]" in response.json()["message"]
    assert client.get(f"{PODS}/p/log?container=b").text == "from b\n"
    assert client.get(f"{PODS}/p/log?container=../../etc").status_code == 400


def test_logs_of_a_missing_pod_are_404(client: TestClient) -> None:
    assert client.get(f"{PODS}/nope/log").json()["reason"] == "NotFound"


def test_logs_never_follow_a_symlink_out_of_the_logs_dir(
    client: TestClient, logs_dir: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    client.post(PODS, json=pod("p"))
    (logs_dir / "default" / "p").mkdir(parents=True)
    (logs_dir / "default" / "p" / "main.log").symlink_to(secret)
    response = client.get(f"{PODS}/p/log")
    assert response.status_code == 400 and "do not read" not in response.text


def test_follow_streams_appended_bytes_until_the_pod_is_gone(
    client: TestClient, store: MemoryStore, logs_dir: Path
) -> None:
    client.post(PODS, json=pod("p"))
    path = write_log(logs_dir, "p", "main", "start\n")
    rt = default_registry().find("", "v1", "pods")
    assert rt is not None

    def later() -> None:
        time.sleep(0.4)
        with path.open("a") as f:
            f.write("more\n")
        time.sleep(0.4)
        store.delete(rt.storage, "default", "p")

    writer = threading.Thread(target=later)
    writer.start()
    response = client.get(f"{PODS}/p/log", params={"follow": "true"})
    writer.join()
    assert response.text == "start\nmore\n"


def test_follow_ends_when_the_pod_has_finished(client: TestClient, logs_dir: Path) -> None:
    client.post(PODS, json=pod("p"))
    client.patch(f"{PODS}/p/status", json={"status": {"phase": "Succeeded"}},
                 headers={"content-type": "application/merge-patch+json"})  # fmt: skip
    write_log(logs_dir, "p", "main", "done\n")
    assert client.get(f"{PODS}/p/log?follow=true&tailLines=5").text == "done\n"


@pytest.mark.parametrize("header", [{}, {"Authorization": "Bearer nope"}])
def test_logs_need_the_token(client: TestClient, header: dict[str, str]) -> None:
    assert client.get(f"{PODS}/p/log", headers={"Authorization": ""} | header).status_code == 401


def test_events_queued_together_leave_in_one_chunk_and_the_stream_ends_with_the_watch() -> None:
    store = MemoryStore()
    for name in ("a", "b", "c"):
        store.create(CONFIGMAP_TYPE, {**configmap(name), "metadata": {"name": name, "namespace": "default"}})
    watch = store.watch(CONFIGMAP_TYPE)  # three ADDED events queued before anyone reads
    rendered: list[str] = []

    def render(event: WatchEvent) -> dict[str, Any] | None:
        name = event.object["metadata"]["name"]
        rendered.append(name)
        return None if name == "b" else {"type": event.type.value, "name": name}  # b is not selected

    async def chunks() -> list[bytes]:
        got = []
        async for chunk in watch_lines(watch, render, anyio.CapacityLimiter(1)):
            got.append(chunk)
            watch.close()  # the next hop finds the watch closed: the stream ends
        return got

    assert anyio.run(chunks) == [b'{"type":"ADDED","name":"a"}\n{"type":"ADDED","name":"c"}\n']
    assert rendered == ["a", "b", "c"]
    store.close()


def test_a_store_watch_tells_how_many_events_wait() -> None:
    store = MemoryStore()
    watch = store.watch(CONFIGMAP_TYPE)
    assert watch.ready() == 0
    store.create(CONFIGMAP_TYPE, {**configmap("a"), "metadata": {"name": "a", "namespace": "default"}})
    assert watch.ready() == 1
    assert next(iter(watch)).object["metadata"]["name"] == "a" and watch.ready() == 0
    watch.close()
    store.close()
