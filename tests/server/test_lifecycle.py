"""The background control plane: up, status, down, restart keeping every object, and the CLI commands."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from typer.testing import CliRunner

from gangplane.cli.controlplane import register
from gangplane.cluster import launch
from gangplane.server import lifecycle

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _request(state_dir: Path, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
    config = yaml.safe_load((state_dir / "kubeconfig").read_text())
    url = config["clusters"][0]["cluster"]["server"] + path
    token = config["users"][0]["user"]["token"] if token is None else token
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    context = ssl.create_default_context(cafile=str(state_dir / "tls.crt"))
    with urllib.request.urlopen(req, timeout=10, context=context) as response:
        return json.loads(response.read())


@pytest.fixture
def state_dir(tmp_path: Path) -> Any:
    path = tmp_path / "home"
    yield path
    launch.stop(path)


def test_up_status_down_and_restart_keeps_objects(state_dir: Path) -> None:
    port = _free_port()
    started = launch.start_background(state_dir, port=port)
    assert started.healthy and started.url == f"https://127.0.0.1:{port}"
    assert (state_dir / "token").stat().st_mode & 0o777 == 0o600
    assert (state_dir / "kubeconfig").stat().st_mode & 0o777 == 0o600
    namespaces = _request(state_dir, "GET", "/api/v1/namespaces")
    assert {"default", "kube-node-lease"} <= {n["metadata"]["name"] for n in namespaces["items"]}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"}, "data": {"k": "v"}}
    _request(state_dir, "POST", "/api/v1/namespaces/default/configmaps", cm)
    token = (state_dir / "token").read_text()

    assert launch.start_background(state_dir, port=port).pid == started.pid  # already running
    assert launch.stop(state_dir) is True
    assert lifecycle.status(state_dir).state == "stopped" and not (state_dir / "server.pid").exists()
    assert launch.stop(state_dir) is False

    launch.start_background(state_dir, port=port)
    assert (state_dir / "token").read_text() == token
    kept = _request(state_dir, "GET", "/api/v1/namespaces/default/configmaps/kept")
    assert kept["data"] == {"k": "v"}


def test_wrong_token_is_401_on_the_real_server(state_dir: Path) -> None:
    launch.start_background(state_dir, port=_free_port())
    with pytest.raises(urllib.error.HTTPError) as err:
        _request(state_dir, "GET", "/api/v1/namespaces", token="wrong")
    assert err.value.code == 401
    assert json.loads(err.value.read())["reason"] == "Unauthorized"


def test_a_busy_port_is_refused_with_a_hint(state_dir: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(RuntimeError, match=r"already in use.*--port"):
            launch.start_background(state_dir, port=busy.getsockname()[1], timeout=10)
    assert not lifecycle.status(state_dir).running


def test_a_server_that_dies_at_start_reports_its_log(state_dir: Path) -> None:
    with pytest.raises(RuntimeError, match=r"did not become ready|exited (at once|while starting)"):
        launch.start_background(state_dir, port=_free_port(), module="gangplane.no_such_module", timeout=20)
    assert not lifecycle.status(state_dir).running


def test_one_server_per_state_dir_and_one_set_of_options(state_dir: Path) -> None:
    """The server holds an exclusive lock on its state directory: a second one exits at once, before it
    opens the store; ``up`` with other options than the running server's is refused."""
    started = launch.start_background(state_dir, port=_free_port(), module="gangplane.server")
    second = subprocess.run(
        [
            sys.executable,
            "-m",
            "gangplane.server",
            "--state-dir",
            str(state_dir),
            "--port",
            str(_free_port()),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert second.returncode != 0 and f"in use by pid {started.pid}" in second.stderr
    with pytest.raises(RuntimeError, match="gangplane down"):
        launch.start_background(state_dir, port=_free_port(), extra_args=["--config", "/elsewhere.yaml"])
    assert lifecycle.status(state_dir).healthy
    assert state_dir.stat().st_mode & 0o777 == 0o700
    for name in ("store.db", "store.db-wal", "lock", "server.log", "server.pid"):
        assert (state_dir / name).stat().st_mode & 0o777 == 0o600, name


def test_cli_up_status_down(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GANGPLANE_HOME", str(state_dir))
    app = typer.Typer()
    register(app)
    runner = CliRunner()
    assert runner.invoke(app, ["status"]).exit_code == 1
    up = runner.invoke(app, ["up", "--port", str(_free_port())])
    assert up.exit_code == 0, up.output
    assert f"export KUBECONFIG={state_dir.resolve() / 'kubeconfig'}" in up.output
    status = runner.invoke(app, ["status"])
    assert status.exit_code == 0 and "healthy" in status.output
    assert "stopped" in runner.invoke(app, ["down"]).output
    assert "stopped" in runner.invoke(app, ["status"]).output


def test_default_state_dir_honours_gangplane_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GANGPLANE_HOME", str(tmp_path / "x"))
    assert lifecycle.default_state_dir() == tmp_path / "x"
    monkeypatch.delenv("GANGPLANE_HOME")
    assert lifecycle.default_state_dir() == Path.home() / ".gangplane"
