"""``pods/log?previous=true``: the log of the container's last terminated instance (kept by the node agent
as ``<container>.previous.log`` on restart); 400 as kube-apiserver answers when there is none."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from server.conftest import pod

PODS = "/api/v1/namespaces/default/pods"


def test_previous_log_of_a_restarted_container(client: TestClient, logs_dir: Path) -> None:
    client.post(PODS, json=pod("p"))
    folder = logs_dir / "default" / "p"
    folder.mkdir(parents=True)
    (folder / "main.log").write_text("second run\n")
    (folder / "main.previous.log").write_text("first run\ncrashed\n")
    assert client.get(f"{PODS}/p/log").text == "second run\n"
    assert client.get(f"{PODS}/p/log?previous=true").text == "first run\ncrashed\n"
    assert client.get(f"{PODS}/p/log?previous=true&tailLines=1").text == "crashed\n"


def test_previous_log_without_a_restart_is_400(client: TestClient) -> None:
    client.post(PODS, json=pod("p"))
    response = client.get(f"{PODS}/p/log?previous=true")
    assert response.status_code == 400
    assert response.json()["message"] == 'previous terminated container "main" in pod "p" not found'
