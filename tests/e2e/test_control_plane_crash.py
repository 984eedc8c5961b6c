"""SIGKILL of the whole control plane (API server, controllers, schedulers, agents) while a gang runs: after a
restart every object is still there and no process of the old run survives beside the new one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest
from e2e_harness import cli, free_port

from gangplane.server import lifecycle
from waiting import wait_for

pytestmark = pytest.mark.slow

MARKER = f"gangplane-e2e-crash-marker-{uuid.uuid4().hex[:8]}"  # unique: strays of other runs never count
CLUSTER = """\
nodeGroups:
  - name: cpu
    count: 2
    namePrefix: node-
    capacity: {cpu: "4", memory: 8Gi}
"""
MANIFESTS = f"""\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {{name: sleeper}}
spec:
  mlPolicy: {{numNodes: 1, torch: {{}}}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels: {{trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec:
              template:
                spec:
                  containers:
                    - {{name: node, image: python:3.11}}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: survivor, namespace: default}}
spec:
  runtimeRef: {{name: sleeper}}
  trainer:
    numNodes: 2
    command: [python, -c, "import time; time.sleep(300)", {MARKER}]
"""


def _marked() -> set[int]:
    found = set()
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and MARKER in (proc.info["cmdline"] or ()):
            found.add(proc.pid)
    return found


def _pair() -> set[int] | None:
    """The two nodes' marked processes, once exactly two run."""
    found = _marked()
    return found if len(found) == 2 else None


def test_restart_after_sigkill_keeps_objects_and_leaves_no_stray_process(tmp_path: Path) -> None:
    home, port = tmp_path / "home", free_port()
    env = {**os.environ, "GANGPLANE_HOME": str(home)}
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "job.yaml").write_text(MANIFESTS)

    gp = cli(env)

    gp("up", "--config", str(tmp_path / "cluster.yaml"), "--port", str(port))
    try:
        gp("apply", "-f", str(tmp_path / "job.yaml"))
        old = wait_for(_pair, 60, "both nodes' processes", interval=0.2)
        pid = lifecycle.status(home).pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)  # no shutdown path runs: the pods' processes are orphaned
        time.sleep(0.5)
        assert _marked() == old  # still running, unsupervised

        gp("up", "--config", str(tmp_path / "cluster.yaml"), "--port", str(port))
        wait_for(lambda: not (_marked() & old), 30, "the old run's processes to be stopped", interval=0.2)
        assert "survivor" in gp("get", "trainjobs")
        new = wait_for(_pair, 60, "the gang to run again", interval=0.2)
        assert not new & old
    finally:
        subprocess.run([sys.executable, "-m", "gangplane", "down"], env=env, timeout=60, check=False)
    wait_for(lambda: not _marked(), 30, "gangplane down to stop every process", interval=0.2)
