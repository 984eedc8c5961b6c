"""Through `gangplane up`: deleting an admitted and a pending TrainJob frees the quota and the queue position at
once (no Workload left Terminating behind Kueue's finalizer), and the freed state holds after `down` / `up`."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gangplane.client.kube import KubeStore
from gangplane.controllers.pending import WAITING_CONDITION
from gangplane.errors import NotFound
from gangplane.store import catalog

pytestmark = pytest.mark.slow
KUBECTL = shutil.which("kubectl")

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


def _trainjob(name: str, *, priority: str | None = None) -> dict[str, Any]:
    """A 2-cpu TrainJob that sleeps: the ClusterQueue fits one at a time."""
    labels = {"kueue.x-k8s.io/queue-name": "lq"}
    if priority:
        labels["kueue.x-k8s.io/priority-class"] = priority
    trainer = {"numNodes": 1, "command": [sys.executable, "-c", "import time; time.sleep(120)"],
               "resourcesPerNode": {"requests": {"cpu": "2"}}}  # fmt: skip
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"runtimeRef": {"name": "sleeper"}, "trainer": trainer}}  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(check: Callable[[], Any], timeout: float, what: str, show: Callable[[], Any] = lambda: "") -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{show()}"
        time.sleep(0.1)
    return value


class _View:
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


def test_deleting_admitted_and_pending_trainjobs_frees_quota_and_position(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "GANGPLANE_HOME": str(home)}
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "queues.yaml").write_text(QUEUES)
    up = ["up", "--config", str(tmp_path / "cluster.yaml"), "--port", str(_free_port())]

    def gp(*args: str) -> None:
        done = subprocess.run([sys.executable, "-m", "gangplane", *args], env=env, capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr

    gp(*up)
    try:
        gp("apply", "-f", str(tmp_path / "queues.yaml"))
        api = KubeStore.from_kubeconfig(home / "kubeconfig")
        view = _View(api)
        api.create(catalog.TRAINJOBS, _trainjob("admitted"))
        _wait(lambda: view.running("admitted"), 30, "the first job to be admitted", view.state)
        api.create(catalog.TRAINJOBS, _trainjob("pending", priority="first-in-line"))
        api.create(catalog.TRAINJOBS, _trainjob("third"))
        _wait(lambda: view.queue() == (2, 1, "2", 2), 20, "cq/lq status: 2 pending, 1 admitted", view.state)
        _wait(lambda: "(1 workload ahead)" in view.waiting("third"), 20, "third behind pending", view.state)

        api.delete(catalog.TRAINJOBS, "default", "pending")
        _wait(
            lambda: "(0 workloads ahead)" in view.waiting("third"), 10, "third's position freed", view.state
        )
        _wait(lambda: view.queue() == (1, 1, "2", 1), 10, "one pending left", view.state)
        assert "pending" not in view.workloads() and not view.terminating(), view.state()

        api.delete(catalog.TRAINJOBS, "default", "admitted")
        _wait(lambda: view.running("third"), 20, "third admitted on the freed quota", view.state)
        _wait(lambda: view.queue() == (0, 1, "2", 0), 10, "third the only admitted workload", view.state)
        assert view.workloads() == ["third"] and not view.terminating(), view.state()
        api.close()

        gp("down")
        gp(*up)
        api = KubeStore.from_kubeconfig(home / "kubeconfig")
        view = _View(api)
        api.create(catalog.TRAINJOBS, _trainjob("fourth"))
        # 2 cpu in use, not 6: the fourth waits for exactly the third's quota, first in line
        _wait(
            lambda: "(0 workloads ahead)" in view.waiting("fourth"), 30, "fourth queued after up", view.state
        )
        assert "insufficient unused quota for cpu in flavor default, 2 more needed" in view.waiting("fourth")
        assert view.running("third") and view.queue() == (1, 1, "2", 1), view.state()
        assert view.workloads() == ["fourth", "third"] and view.gone("pending") and view.gone("admitted")
        api.close()
        if KUBECTL:  # what a user sees: the counts in upstream's printer columns
            command = [
                KUBECTL,
                "--kubeconfig",
                str(home / "kubeconfig"),
                "get",
                "clusterqueues,localqueues",
                "-A",
            ]
            shown = subprocess.run(command, capture_output=True, text=True, timeout=60).stdout
            rows = {cells[0] if "/" in cells[0] else cells[1]: cells for cells in map(str.split, shown.splitlines())
                    if len(cells) > 2}  # fmt: skip
            # NAME, PENDING WORKLOADS, ADMITTED WORKLOADS, AGE (COHORT is empty)
            assert rows["clusterqueue.kueue.x-k8s.io/cq"][1:3] == ["1", "1"], shown
            # NAMESPACE, NAME, CLUSTERQUEUE, PENDING WORKLOADS, ADMITTED WORKLOADS, AGE
            assert rows["localqueue.kueue.x-k8s.io/lq"][2:5] == ["cq", "1", "1"], shown
    finally:
        subprocess.run([sys.executable, "-m", "gangplane", "down"], env=env, timeout=60, check=False)
