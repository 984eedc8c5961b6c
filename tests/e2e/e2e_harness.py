"""End-to-end harness: a real embedded cluster (store with Trainer admission, controllers, schedulers and
node agents running real processes) in this process."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

import waiting
from gangplane.agent.nodes import ClusterConfig, NodeGroup
from gangplane.cluster.local import LocalCluster
from gangplane.store import catalog
from gangplane.store.base import Object
from gangplane.store.memory import MemoryStore

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli(env: Mapping[str, str]) -> Callable[..., str]:
    """``gangplane <args>`` in a subprocess with ``env``; asserts success and returns its stdout."""

    def gp(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "gangplane", *args], env=dict(env), capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    return gp


def two_nodes(cpu: str = "4") -> ClusterConfig:
    return ClusterConfig(
        node_groups=[
            NodeGroup(name="cpu", count=2, name_prefix="node-", capacity={"cpu": cpu, "memory": "8Gi"})
        ]
    )


class Cluster:
    def __init__(self, store: MemoryStore, logs: Path, local: LocalCluster) -> None:
        self.store, self.logs, self.local = store, logs, local

    def apply_file(self, path: Path) -> None:
        for doc in yaml.safe_load_all(path.read_text()):
            self.create(doc)

    def create(self, doc: Object) -> Object:
        rt = catalog.by_kind(doc["apiVersion"], doc["kind"])
        assert rt is not None
        return self.store.create(rt, doc)

    def pods(self, job: str) -> list[Object]:
        items = self.store.list(catalog.PODS).items
        return [
            p for p in items if p["metadata"].get("labels", {}).get("jobset.sigs.k8s.io/jobset-name") == job
        ]

    def trainjob(self, name: str) -> Object:
        return self.store.get(catalog.TRAINJOBS, "default", name)

    def condition(self, name: str, kind: str) -> dict[str, Any] | None:
        conditions = (self.trainjob(name).get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == kind and c["status"] == "True"), None)

    def finished(self, name: str) -> str | None:
        for kind in ("Complete", "Failed"):
            if self.condition(name, kind):
                return kind
        return None

    def diagnose(self, name: str) -> str:
        """What a failed wait should show: each pod's node, phase, container states and log tail."""
        lines = [f"trainjob {name}: {(self.trainjob(name).get('status') or {}).get('conditions')}"]
        for pod in self.pods(name):
            status = pod.get("status") or {}
            states = [c.get("state") for c in status.get("containerStatuses") or []]
            lines.append(
                f"  {pod['metadata']['name']} on {pod['spec'].get('nodeName')}: {status.get('phase')} {states}"
            )
            lines += [f"    | {line}" for line in self.log(pod).splitlines()[-15:]]
        return "\n".join(lines)

    def log(self, pod: Object, container: str = "node") -> str:
        path = self.logs / "default" / pod["metadata"]["name"] / f"{container}.log"
        return path.read_text() if path.exists() else ""


def wait_for(check: Callable[[], Any], timeout: float = 120.0, what: str = "condition") -> Any:
    """``waiting.wait_for`` with the end-to-end tests' default timeout, polling the control plane gently."""
    return waiting.wait_for(check, timeout, what, interval=0.2)
