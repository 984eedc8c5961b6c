"""``gangplane up --agents process``: the node agents run as an OS process of their own, talking to the API
server over HTTPS. A pod runs there with its logs (``kubectl logs`` reads the agent's files) and its
service-account token working; a SIGKILLed agent process is restarted by ``up`` and pods run again; ``down``
stops the agent process and every pod before the server exits, leaving no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from e2e_harness import cli, free_port
from kubernetes import client, config

from gangplane.agent import proctable
from gangplane.agent.daemon import MODULE
from gangplane.agent.leftovers import CLUSTER_ENV, cluster_id
from gangplane.server.lifecycle import status
from waiting import wait_for

pytestmark = pytest.mark.slow

CLUSTER = "nodeGroups:\n  - {name: cpu, count: 2, namePrefix: node-, capacity: {cpu: '4', memory: 8Gi}}\n"
# What a pod that uses the API does: the official client's in-cluster configuration, through its token.
USES_API = (
    "from kubernetes import client, config; config.load_incluster_config(); "
    "print('pods seen:', len(client.CoreV1Api().list_namespaced_pod('default').items))"
)


def _agent_process(home: Path) -> psutil.Process | None:
    server = status(home).pid
    if server is None:
        return None
    with_module = [p for p in psutil.Process(server).children() if MODULE in _cmdline(p)]
    return with_module[0] if with_module else None


def _cmdline(process: psutil.Process) -> list[str]:
    """A killed agent process is a zombie until the server reaps it: it has no command line any more."""
    try:
        return process.cmdline()
    except (psutil.ZombieProcess, psutil.NoSuchProcess):
        return []


def _phase(core: client.CoreV1Api, name: str) -> str:
    return str(core.read_namespaced_pod(name, "default").status.phase)


def _run_pod(core: client.CoreV1Api, name: str, command: list[str], policy: str = "Never") -> None:
    container = {"name": "c", "image": "busybox", "command": command}
    spec = {"restartPolicy": policy, "terminationGracePeriodSeconds": 1, "containers": [container]}
    core.create_namespaced_pod(
        "default", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
    )


def _restarts(core: client.CoreV1Api, name: str) -> int:
    statuses = core.read_namespaced_pod(name, "default").status.container_statuses or []
    return sum(int(s.restart_count or 0) for s in statuses if s.state.running is not None)


def test_agents_apart_run_pods_survive_a_kill_and_leave_nothing_after_down(tmp_path: Path) -> None:
    home, port = tmp_path / "home", free_port()
    env = {**os.environ, "GANGPLANE_HOME": str(home)}
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    gp = cli(env)
    gp("up", "--config", str(tmp_path / "cluster.yaml"), "--port", str(port), "--agents", "process")
    try:
        core = client.CoreV1Api(config.new_client_from_config(config_file=str(home / "kubeconfig")))
        first = wait_for(lambda: _agent_process(home), 90.0, "the agent process", interval=0.2)
        _run_pod(core, "sleeper", ["sh", "-c", "sleep 300; :"], policy="Always")
        _run_pod(core, "uses-api", ["python", "-c", USES_API])
        wait_for(
            lambda: _phase(core, "uses-api") in ("Succeeded", "Failed"),
            90.0,
            "uses-api to finish",
            interval=0.2,
        )
        log = core.read_namespaced_pod_log("uses-api", "default")  # the file the agent process wrote
        assert _phase(core, "uses-api") == "Succeeded" and "pods seen: 2" in log, log

        os.kill(first.pid, signal.SIGKILL)  # its sleeper is reaped; the new agent process runs it again
        wait_for(
            lambda: (p := _agent_process(home)) is not None and p.pid != first.pid,
            90.0,
            "a new agent process",
            interval=0.2,
        )
        wait_for(lambda: _restarts(core, "sleeper") >= 1, 90.0, "the sleeper to run again", interval=0.2)
        gp("down")
        value = cluster_id(home)
        assert proctable.carrying(CLUSTER_ENV, [value]).get(value, []) == []
    except BaseException:
        subprocess.run([sys.executable, "-m", "gangplane", "down"], env=env, timeout=120, check=False)
        raise
    log = (home / "server.log").read_text()
    assert "node-agent process exited" in log, log[-2000:]
    assert "stopped 1 container processes on 2 nodes" in log, log[-2000:]
