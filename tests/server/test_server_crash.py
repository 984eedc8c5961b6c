"""SIGKILL of the control-plane process in the middle of a burst of HTTP writes loses no acknowledged write,
and resourceVersions keep rising after the restart."""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangplane.cluster import launch

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Api:
    def __init__(self, state_dir: Path) -> None:
        config = yaml.safe_load((state_dir / "kubeconfig").read_text())
        self.url = config["clusters"][0]["cluster"]["server"]
        self.token = config["users"][0]["user"]["token"]
        self.context = ssl.create_default_context(cafile=str(state_dir / "tls.crt"))

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(req, timeout=5, context=self.context) as response:
            return json.loads(response.read())


def _writer(api: Api, prefix: str, acked: dict[str, int], stop: threading.Event) -> None:
    i = 0
    while not stop.is_set():
        name = f"{prefix}-{i}"
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"i": str(i)}}
        try:
            created = api.call("POST", "/api/v1/namespaces/default/configmaps", body)
        except (urllib.error.URLError, OSError):
            return  # the server died under us: this write was never acknowledged
        acked[name] = int(created["metadata"]["resourceVersion"])
        i += 1


def test_sigkill_during_http_writes_loses_no_acknowledged_write(tmp_path: Path) -> None:
    state_dir, port = tmp_path / "home", _free_port()
    started = launch.start_background(state_dir, port=port)
    assert started.pid is not None
    try:
        api, stop = Api(state_dir), threading.Event()
        acked: list[dict[str, int]] = [{} for _ in range(4)]
        writers = [
            threading.Thread(target=_writer, args=(api, f"w{n}", acked[n], stop)) for n in range(len(acked))
        ]
        for writer in writers:
            writer.start()
        deadline = time.monotonic() + 20
        while sum(map(len, acked)) < 200 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(started.pid, signal.SIGKILL)
        stop.set()
        for writer in writers:
            writer.join(timeout=10)
        launch.stop(state_dir)

        launch.start_background(state_dir, port=port)
        listed = api.call("GET", "/api/v1/namespaces/default/configmaps")
        stored = {o["metadata"]["name"]: int(o["metadata"]["resourceVersion"]) for o in listed["items"]}
        every_ack = {name: rv for writes in acked for name, rv in writes.items()}
        assert len(every_ack) >= 200
        assert {name: stored.get(name) for name in every_ack} == every_ack
        after = api.call("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "after"}})
        assert int(after["metadata"]["resourceVersion"]) > max(stored.values())
    finally:
        launch.stop(state_dir)
