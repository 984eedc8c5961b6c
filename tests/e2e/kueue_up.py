"""`gangplane up` for the Kueue end-to-end tests: one 4-cpu node, a ClusterQueue of 2 cpu with its LocalQueue
``default/lq``, 2-cpu TrainJobs that sleep (one runs at a time), and a view of what a user sees."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gangplane.client.kube import KubeStore
from gangplane.controllers.pending import WAITING_CONDITION
from gangplane.errors import NotFound
from gangplane.store import catalog
from waiting import wait_for

CLUSTER = """\
nodeGroups:
  - {name: cpu, count: 1, namePrefix: node-, capacity: {cpu: "4", memory: 8Gi}}
"""
QUEUES = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: sleeper}
spec:
  mlPolicy: {numNodes: 1}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
            spec:
              template:
                spec:
                  containers: [{name: node, image: local}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: [cpu]
      flavors: [{name: default, resources: [{name: cpu, nominalQuota: 2}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: default}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: first-in-line}
value: 10
"""


def trainjob(name: str, *, priority: str | None = None) -> dict[str, Any]:
    """A 2-cpu TrainJob that sleeps: the ClusterQueue fits one at a time."""
    labels = {"kueue.x-k8s.io/queue-name": "lq"}
    if priority:
        labels["kueue.x-k8s.io/priority-class"] = priority
    trainer = {"numNodes": 1, "command": [sys.executable, "-c", "import time; time.sleep(120)"],
               "resourcesPerNode": {"requests": {"cpu": "2"}}}  # fmt: skip
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"runtimeRef": {"name": "sleeper"}, "trainer": trainer}}  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait(check: Callable[[], Any], timeout: float, what: str, show: Callable[[], Any] = lambda: "") -> Any:
    """``wait_for`` that, on failure, adds what ``show`` says at that moment."""
    try:
        return wait_for(check, timeout, what, interval=0.1)
    except AssertionError as err:
        raise AssertionError(f"{err}\n{show()}") from None


class View:
    def __init__(self, api: KubeStore) -> None:
        self.api = api

    def running(self, job: str) -> bool:
        return self.api.get(catalog.TRAINJOBS, "default", job)["spec"].get("suspend") is False

    def waiting(self, job: str) -> str:
        conditions = (self.api.get(catalog.TRAINJOBS, "default", job).get("status") or {}).get(
            "conditions"
        ) or []
        return next((c["message"] for c in conditions if c["type"] == WAITING_CONDITION), "")

    def queue(self) -> tuple[Any, ...]:
        cq = self.api.get(catalog.CLUSTER_QUEUES, "", "cq").get("status") or {}
        lq = self.api.get(catalog.LOCAL_QUEUES, "default", "lq").get("status") or {}
        cpu = (cq.get("flavorsReservation") or [{"resources": [{}]}])[0]["resources"][0].get("total")
        return cq.get("pendingWorkloads"), cq.get("admittedWorkloads"), cpu, lq.get("pendingWorkloads")

    def workloads(self) -> list[str]:
        items = self.api.list(catalog.WORKLOADS).items
        return sorted(
            w["metadata"]["ownerReferences"][0]["name"] for w in items if w["metadata"].get("ownerReferences")
        )

    def terminating(self) -> list[str]:
        return [w["metadata"]["name"] for w in self.api.list(catalog.WORKLOADS).items
                if w["metadata"].get("deletionTimestamp")]  # fmt: skip

    def state(self) -> str:
        jobs = {j: (self.running(j), self.waiting(j)) for j in self._jobs()}
        return f"queue={self.queue()} workloads={self.workloads()} jobs={jobs}"

    def _jobs(self) -> list[str]:
        return [j["metadata"]["name"] for j in self.api.list(catalog.TRAINJOBS).items]

    def gone(self, job: str) -> bool:
        try:
            self.api.get(catalog.TRAINJOBS, "default", job)
        except NotFound:
            return True
        return False


Gangplane = Callable[..., None]


@contextmanager
def up(tmp_path: Path) -> Iterator[tuple[Gangplane, list[str], Path]]:
    """A cluster brought up with the queues applied: (run a gangplane command, the ``up`` command, its home);
    brought down at the end whatever happens."""
    home = tmp_path / "home"
    env = {**os.environ, "GANGPLANE_HOME": str(home)}
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "queues.yaml").write_text(QUEUES)
    command = ["up", "--config", str(tmp_path / "cluster.yaml"), "--port", str(free_port())]

    def gp(*args: str) -> None:
        done = subprocess.run([sys.executable, "-m", "gangplane", *args], env=env, capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr

    gp(*command)
    try:
        gp("apply", "-f", str(tmp_path / "queues.yaml"))
        yield gp, command, home
    finally:
        subprocess.run([sys.executable, "-m", "gangplane", "down"], env=env, timeout=60, check=False)
