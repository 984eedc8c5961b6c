"""Through the front door: `gangplane up`, an upstream runtime unchanged, a TrainJob followed by `gangplane run`,
and its logs through both `gangplane logs` and unmodified kubectl."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from crdschema import SHARED_DIR

pytestmark = pytest.mark.slow

UPSTREAM_TORCH = SHARED_DIR / "upstream" / "runtimes" / "torch_distributed.yaml" if SHARED_DIR else None
CLUSTER = """\
nodeGroups:
  - name: cpu
    count: 3
    namePrefix: node-
    capacity: {cpu: "4", memory: 8Gi}
"""
TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: ranks, namespace: default}
spec:
  runtimeRef: {name: torch-distributed}
  trainer:
    numNodes: 3
    command: [python, -c, "import os; print('node', os.environ['PET_NODE_RANK'], 'of', os.environ['PET_NNODES'])"]
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.skipif(UPSTREAM_TORCH is None or not UPSTREAM_TORCH.exists(), reason="needs ../shared/upstream")
def test_upstream_runtime_runs_via_gangplane_up_with_logs_everywhere(tmp_path: Path) -> None:
    assert UPSTREAM_TORCH is not None
    env = {**os.environ, "GANGPLANE_HOME": str(tmp_path / "home")}
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "job.yaml").write_text(TRAINJOB)

    def gp(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "gangplane", *args], env=env, capture_output=True, text=True, timeout=180
        )
        assert not check or done.returncode == 0, done.stdout + done.stderr
        return done

    gp("up", "--config", str(tmp_path / "cluster.yaml"), "--port", str(_free_port()))
    try:
        gp("apply", "-f", str(UPSTREAM_TORCH))
        ran = gp("run", "-f", str(tmp_path / "job.yaml"), "--no-live", "--timeout", "150")
        assert "trainjob/ranks Complete" in ran.stdout
        logs = gp("logs", "trainjob/ranks").stdout
        assert sorted(line.split("] ")[-1] for line in logs.splitlines() if "node " in line) == [
            "node 0 of 3",
            "node 1 of 3",
            "node 2 of 3",
        ]
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            pytest.skip("kubectl is not installed: the kubectl half of this test needs it")
        kube_env = {**env, "KUBECONFIG": str(tmp_path / "home" / "kubeconfig")}
        pods = subprocess.run(
            [kubectl, "get", "pods", "-l", "jobset.sigs.k8s.io/jobset-name=ranks", "-o", "name"],
            env=kube_env, capture_output=True, text=True, timeout=60, check=True,
        ).stdout.split()  # fmt: skip
        assert len(pods) == 3
        outputs = [
            subprocess.run(
                [kubectl, "logs", pod], env=kube_env, capture_output=True, text=True, timeout=60, check=True
            ).stdout
            for pod in pods
        ]
        assert sorted(o.strip() for o in outputs) == ["node 0 of 3", "node 1 of 3", "node 2 of 3"]
    finally:
        gp("down", check=False)
