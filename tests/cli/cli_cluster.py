"""An embedded API server for CLI tests: uvicorn over HTTPS on a free localhost port, in a thread, over a
``MemoryStore`` with Trainer's admission, its state (kubeconfig, token, logs) in a temporary directory."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from gangplane.cli.main import app
from gangplane.server.admission import TrainerAdmission
from gangplane.server.lifecycle import make_server
from gangplane.server.resources import default_registry
from gangplane.store import MemoryStore
from serving import serving

RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: torch-distributed}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
          spec: {template: {spec: {containers: [{name: node, image: pytorch/pytorch}]}}}
"""
JOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: %(name)s, labels: {app: %(name)s}}
spec:
  runtimeRef: {name: torch-distributed}
  trainer: {numNodes: %(nodes)s}
"""


def job(name: str, nodes: int = 2) -> str:
    return JOB % {"name": name, "nodes": nodes}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cli:
    state_dir: Path
    store: MemoryStore  # the server's store, for arranging what controllers and agents would write

    def run(self, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
        result = CliRunner().invoke(app, list(args), input=stdin)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result.exit_code, result.stdout, result.stderr

    def ok(self, *args: str, stdin: str | None = None) -> str:
        code, out, err = self.run(*args, stdin=stdin)
        assert code == 0, f"gangplane {' '.join(args)} exited {code}:\n{err}"
        return out


@contextmanager
def embedded_cluster(state_dir: Path) -> Iterator[Cli]:
    trainer = TrainerAdmission(default_registry())
    store = MemoryStore(admission=trainer)
    trainer.bind(store)
    try:
        with serving(make_server(state_dir, store, port=free_port())):
            yield Cli(state_dir, store)
    finally:
        store.close()
