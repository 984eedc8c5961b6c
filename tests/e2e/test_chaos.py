"""Chaos: SIGKILL the whole control plane (API server, controllers, schedulers, node agents) at seeded random
points of TrainJob lifecycles, restart it each time, and check that no acknowledged object is lost, every
gang (coscheduling, 2 pods) still completes — none is left half-started — and no pod process outlives the
cluster. ``GANGPLANE_CHAOS_KILLS`` sets the number of kills (default 3 to keep ``make test`` short; the issue's
50 run in about five minutes: ``GANGPLANE_CHAOS_KILLS=50 pytest tests/e2e/test_chaos.py``)."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import ssl
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from gangplane.cluster import launch
from waiting import wait_for

pytestmark = pytest.mark.slow

KILLS = int(os.environ.get("GANGPLANE_CHAOS_KILLS", "3"))
MARKER = f"gangplane-chaos-{uuid.uuid4().hex[:8]}"
CLUSTER = """\
nodeGroups:
  - name: cpu
    count: 2
    namePrefix: node-
    capacity: {cpu: "4", memory: 8Gi}
"""
RUNTIME = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "gang"},
    "spec": {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "podGroupPolicy": {"coscheduling": {"scheduleTimeoutSeconds": 120}},
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "node",
                        "template": {
                            "metadata": {
                                "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
                            },
                            "spec": {
                                "template": {
                                    "spec": {
                                        "schedulerName": "scheduler-plugins-scheduler",
                                        "containers": [
                                            {
                                                "name": "node",
                                                "image": "python:3.11",
                                                "resources": {"requests": {"cpu": "2"}},
                                            }
                                        ],
                                    }
                                }
                            },
                        },
                    }
                ]
            }
        },
    },
}
TRAINJOBS = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Api:
    def __init__(self, home: Path) -> None:
        config = yaml.safe_load((home / "kubeconfig").read_text())
        self.url = config["clusters"][0]["cluster"]["server"]
        self.token = config["users"][0]["user"]["token"]
        self.context = ssl.create_default_context(cafile=str(home / "tls.crt"))

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=20, context=self.context) as response:
            return json.loads(response.read())


def trainjob(name: str, seconds: float) -> dict[str, Any]:
    command = ["python", "-c", f"import time; time.sleep({seconds:.2f})", MARKER]
    spec = {"runtimeRef": {"name": "gang"}, "trainer": {"numNodes": 2, "command": command}}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": spec,
    }


def _marked() -> set[int]:
    found = set()
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and MARKER in (proc.info["cmdline"] or ()):
            found.add(proc.pid)
    return found


def _finished(job: dict[str, Any]) -> str | None:
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition["type"] in ("Complete", "Failed") and condition["status"] == "True":
            return str(condition["type"])
    return None


def test_sigkill_at_random_points_loses_nothing_and_leaves_no_half_gang_or_process(tmp_path: Path) -> None:
    rng = random.Random(13)
    home, port = tmp_path / "home", _free_port()
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    args = ["--config", str(tmp_path / "cluster.yaml")]
    started = launch.start_background(home, port=port, extra_args=args, timeout=60)
    acked: list[str] = []
    try:
        api = Api(home)
        api.call("POST", "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes", RUNTIME)
        for i in range(KILLS):
            name = f"job-{i}"
            api.call("POST", TRAINJOBS, trainjob(name, rng.uniform(0.3, 1.5)))
            acked.append(name)
            time.sleep(rng.uniform(0.0, 2.5))  # somewhere in a lifecycle: creating, binding, running, done
            assert started.pid is not None
            os.kill(started.pid, signal.SIGKILL)
            started = launch.start_background(home, port=port, extra_args=args, timeout=60)
            stored = {j["metadata"]["name"] for j in api.call("GET", TRAINJOBS)["items"]}
            assert set(acked) <= stored, f"lost after kill {i}: {set(acked) - stored}"

        def all_finished() -> dict[str, str] | None:
            jobs = {j["metadata"]["name"]: _finished(j) for j in api.call("GET", TRAINJOBS)["items"]}
            return jobs if all(jobs.get(n) for n in acked) else None

        outcome = wait_for(all_finished, 120, "every TrainJob to finish", interval=0.25)
        assert {n: outcome[n] for n in acked} == dict.fromkeys(acked, "Complete")
    finally:
        launch.stop(home)
    wait_for(lambda: not _marked(), 30, "no pod process to outlive the cluster", interval=0.25)
