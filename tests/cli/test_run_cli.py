"""``gangplane run``: the follow loop over an in-process store, the command against a real embedded API server
with the controller's and agents' writes played by the test, and (slow, once ``gangplane up`` runs
controllers and agents) a real TrainJob end to end."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_cluster import RUNTIME, Cli, embedded_cluster, free_port, job

from gangplane.cli.run import TIMED_OUT, follow_trainjob
from gangplane.cli.runview import PlainView
from gangplane.errors import NotFound
from gangplane.store import MemoryStore
from gangplane.store.base import Store
from gangplane.store.catalog import PODS, TRAINJOBS
from waiting import poll


def _pod(name: str, trainjob: str, phase: str, node: str = "n1") -> tuple[dict[str, Any], dict[str, Any]]:
    labels = {"jobset.sigs.k8s.io/jobset-name": trainjob}
    meta = {"name": name, "namespace": "default", "labels": labels}
    spec = {"containers": [{"name": "node", "image": "python"}], "nodeName": node}
    return {"metadata": meta, "spec": spec}, {"metadata": meta, "status": {"phase": phase}}


def play_controller(store: Store, name: str, outcome: str, pods: int = 2) -> threading.Thread:
    """What the controllers and agents would write: pods that run, then the TrainJob's terminal condition."""

    def created() -> bool:
        try:
            return bool(store.get(TRAINJOBS, "default", name))
        except NotFound:
            return False

    def play() -> None:
        poll(created, 10, 0.05)
        time.sleep(0.2)  # the follower sees the TrainJob waiting for its pods first
        for index in range(pods):
            spec, status = _pod(f"{name}-node-0-{index}", name, "Running")
            store.create(PODS, spec)
            store.update_status(PODS, status)
        time.sleep(0.3)
        for index in range(pods):
            store.update_status(PODS, _pod(f"{name}-node-0-{index}", name, "Succeeded")[1])
        if outcome:
            condition = {
                "type": outcome,
                "status": "True",
                "reason": "JobSet" + outcome,
                "message": f"it {outcome}",
            }
            store.update_status(TRAINJOBS, {"metadata": {"name": name, "namespace": "default"},
                                            "status": {"conditions": [condition]}})  # fmt: skip

    thread = threading.Thread(target=play, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(("outcome", "code"), [("Complete", 0), ("Failed", 1)])
def test_follow_ends_with_the_trainjobs_outcome_and_streams_logs(outcome: str, code: int) -> None:
    store = MemoryStore()
    store.create(
        TRAINJOBS,
        {"metadata": {"name": "mnist", "namespace": "default"}, "spec": {"trainer": {"numNodes": 2}}},
    )
    played = play_controller(store, "mnist", outcome)
    printed: list[str] = []

    def logs(namespace: str, pod: str, container: str) -> Iterator[bytes]:
        yield f"hello from {pod}\nbye".encode()

    assert follow_trainjob(store, "default", "mnist", PlainView(printed.append), logs=logs, poll=0.05) == code
    played.join()
    assert (
        printed[0]
        == "trainjob/mnist Pending: no pods yet: waiting for the controller to create the JobSet's pods"
    )
    assert "trainjob/mnist 2/2 pods bound" in printed
    assert {"[mnist-node-0-0] hello from mnist-node-0-0", "[mnist-node-0-1] bye"} <= set(printed)
    assert f"trainjob/mnist {outcome}: it {outcome}" in printed
    store.close()


def test_follow_times_out() -> None:
    store = MemoryStore()
    store.create(TRAINJOBS, {"metadata": {"name": "stuck", "namespace": "default"}, "spec": {}})
    started = time.monotonic()
    assert (
        follow_trainjob(store, "default", "stuck", PlainView(lambda _: None), poll=0.05, timeout=0.2)
        == TIMED_OUT
    )
    assert time.monotonic() - started < 2
    store.close()


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cli]:
    monkeypatch.setenv("GANGPLANE_HOME", str(tmp_path))
    with embedded_cluster(tmp_path) as cluster:
        yield cluster


@pytest.mark.parametrize(("outcome", "code"), [("Complete", 0), ("Failed", 1)])
def test_run_applies_follows_and_exits_with_the_outcome(
    cli: Cli, tmp_path: Path, outcome: str, code: int
) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(RUNTIME + "---\n" + job("mnist"))
    for index in range(2):
        log = tmp_path / "logs" / "default" / f"mnist-node-0-{index}" / "node.log"
        log.parent.mkdir(parents=True)
        log.write_text(f"rank {index} says hi\n")
    played = play_controller(cli.store, "mnist", outcome)
    exit_code, out, err = cli.run("run", "-f", str(manifest), "--no-live")
    played.join()
    lines = out.splitlines()
    assert exit_code == code, err
    assert lines[:2] == [
        "clustertrainingruntime.trainer.kubeflow.org/torch-distributed created",
        "trainjob.trainer.kubeflow.org/mnist created",
    ]
    assert "trainjob/mnist 2/2 pods bound" in lines
    assert "[mnist-node-0-1] rank 1 says hi" in lines
    assert f"trainjob/mnist {outcome}: it {outcome}" in lines


def test_run_with_the_live_view(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(RUNTIME + "---\n" + job("shown"))
    played = play_controller(cli.store, "shown", "Complete")
    code, out, err = cli.run("run", "-f", str(tmp_path / "job.yaml"), "--no-logs")
    played.join()
    assert code == 0, err
    assert "trainjob/shown  Complete" in out and "why: it Complete" in out and "shown-node-0-1" in out


def test_run_times_out_with_exit_2(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(RUNTIME + "---\n" + job("slow"))
    code, out, err = cli.run("run", "-f", str(tmp_path / "job.yaml"), "--no-live", "--timeout", "0.5")
    assert code == 2 and "timed out after 0.5s waiting for trainjob/slow" in err
    assert "trainjob/slow Pending: no pods yet" in out


def test_run_needs_exactly_one_trainjob(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "rt.yaml").write_text(RUNTIME)
    code, _, err = cli.run("run", "-f", str(tmp_path / "rt.yaml"), "--no-live")
    assert code == 1 and "exactly one TrainJob" in err


TINY_JOB = f"""\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {{name: tiny-python}}
spec:
  mlPolicy: {{numNodes: 2}}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata: {{labels: {{trainer.kubeflow.org/trainjob-ancestor-step: trainer}}}}
          spec:
            template:
              spec:
                containers:
                - name: node
                  image: python
                  command: ["{sys.executable}", "-c", "import socket; print('hello from', socket.gethostname())"]
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: tiny}}
spec:
  runtimeRef: {{name: tiny-python}}
"""


@pytest.mark.slow
def test_run_a_tiny_trainjob_on_the_embedded_cluster(tmp_path: Path) -> None:
    env = {**os.environ, "GANGPLANE_HOME": str(tmp_path / "home")}
    gangplane = [sys.executable, "-m", "gangplane"]
    subprocess.run([*gangplane, "up", "--port", str(free_port())], env=env, check=True, timeout=60)
    try:
        (tmp_path / "tiny.yaml").write_text(TINY_JOB)
        done = subprocess.run(
            [*gangplane, "run", "-f", str(tmp_path / "tiny.yaml"), "--no-live", "--timeout", "120"],
            env=env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "trainjob/tiny Complete" in done.stdout and "hello from" in done.stdout
    finally:
        subprocess.run([*gangplane, "down"], env=env, timeout=60)
