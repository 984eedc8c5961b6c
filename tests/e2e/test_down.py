"""``gangplane down`` with a few hundred running pods leaves no process behind: the agents stop every pod's
process tree (SIGTERM; SIGKILL after the grace period for those that ignore it; processes that left their
group too) and say so in the server log before the server exits."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from e2e_harness import cli, free_port

from gangplane.agent import proctable
from gangplane.agent.leftovers import CLUSTER_ENV, cluster_id

pytestmark = pytest.mark.slow

PODS, STUBBORN = 200, 2  # STUBBORN pods ignore SIGTERM and need the SIGKILL after the grace period
CLUSTER = """\
nodeGroups:
  - name: fake
    count: 4
    namePrefix: node-
    capacity: {cpu: "1000", memory: 1000Gi, pods: "500"}
"""


def _pod(name: str, script: str) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: c
      image: busybox
      command: [sh, -c, {script!r}]
      resources: {{requests: {{cpu: 10m}}}}
"""


def _manifests() -> str:
    plain = [_pod(f"sleeper-{i}", "sleep 300; :") for i in range(PODS - STUBBORN - 1)]
    stubborn = [_pod(f"stubborn-{i}", "trap '' TERM; sleep 300; :") for i in range(STUBBORN)]
    escaped = [_pod("escaped", "setsid sleep 300 & sleep 300; :")]  # one process leaves the pod's group
    return "---\n".join([*plain, *stubborn, *escaped])


def _pod_processes(home: Path) -> list[int]:
    value = cluster_id(home)
    return proctable.carrying(CLUSTER_ENV, [value]).get(value, [])


def test_down_with_hundreds_of_running_pods_leaves_no_process(tmp_path: Path) -> None:
    home, port = tmp_path / "home", free_port()
    env = {**os.environ, "GANGPLANE_HOME": str(home)}
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "pods.yaml").write_text(_manifests())

    gp = cli(env)

    gp("up", "--config", str(tmp_path / "cluster.yaml"), "--port", str(port))
    try:
        gp("apply", "-f", str(tmp_path / "pods.yaml"))
        wanted = 2 * PODS + 1  # sh and its sleep in every pod, and the escaped sleep
        deadline = time.monotonic() + 120
        while len(_pod_processes(home)) < wanted:
            assert time.monotonic() < deadline, f"{len(_pod_processes(home))} of {wanted} pod processes run"
            time.sleep(0.5)
        gp("down")
        assert _pod_processes(home) == []
    finally:
        subprocess.run([sys.executable, "-m", "gangplane", "down"], env=env, timeout=120, check=False)
    log = (home / "server.log").read_text()
    assert f"stopped {PODS} container processes on 4 nodes" in log, log[-2000:]
    assert "previous control plane" not in log
