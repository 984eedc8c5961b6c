"""``gangplane controller --kubeconfig``: the TrainJob controller as a separate process against an API server,
with leader election, creating the JobSet of an applied TrainJob."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_cluster import RUNTIME, Cli, embedded_cluster, job

from gangplane.clock import WallClock
from gangplane.controllers.trainjob import TrainJobReconciler
from gangplane.errors import NotFound
from gangplane.runtime.framework import Framework
from gangplane.runtime.plugins import default_registry as runtime_plugins
from gangplane.runtime.points import Handle
from gangplane.server.admission import TrainerAdmission
from gangplane.server.resources import default_registry
from gangplane.store.catalog import JOBSETS, LEASES, by_kind
from gangplane.store.memory import MemoryStore
from waiting import poll

pytestmark = pytest.mark.slow


def _found(get: Callable[[], object]) -> Callable[[], object]:
    """``get`` as a check that is false while the object is not there yet."""

    def check() -> object:
        try:
            return get()
        except NotFound:
            return None

    return check


def test_controller_process_reconciles_trainjobs_while_leading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GANGPLANE_HOME", str(tmp_path))
    with embedded_cluster(tmp_path) as cli:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gangplane", "controller", "--kubeconfig", str(tmp_path / "kubeconfig"),
             "--leader-elect"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        try:
            _run_against(cli, proc)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            output, _ = proc.communicate(timeout=20)
        assert proc.returncode == 0, output
        lease = cli.store.get(LEASES, "default", "gangplane-trainjob-controller")
        assert lease["spec"]["holderIdentity"] == ""  # released on a clean stop


def _run_against(cli: Cli, proc: subprocess.Popen[str]) -> None:
    cli.ok("apply", "-f", "-", stdin=RUNTIME + "---\n" + job("mnist"))
    assert poll(
        _found(lambda: cli.store.get(LEASES, "default", "gangplane-trainjob-controller")), 30.0, 0.1
    ), "no lease"
    lease = cli.store.get(LEASES, "default", "gangplane-trainjob-controller")
    assert lease["spec"]["holderIdentity"].endswith(f"_{proc.pid}")
    assert poll(_found(lambda: cli.store.get(JOBSETS, "default", "mnist")), 30.0, 0.1), (
        "the controller made no JobSet"
    )
    jobset = cli.store.get(JOBSETS, "default", "mnist")
    assert jobset["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
    assert _comparable(jobset) == _comparable(_in_process_jobset("mnist"))


def _in_process_jobset(name: str) -> dict[str, Any]:
    """What the embedded cluster's in-process TrainJob controller builds from the same manifests."""
    admission = TrainerAdmission(default_registry())
    store = MemoryStore(admission=admission)
    admission.bind(store)
    for doc in yaml.safe_load_all(RUNTIME + "---\n" + job(name)):
        rt = by_kind(doc["apiVersion"], doc["kind"])
        assert rt is not None
        if rt.namespaced:
            doc["metadata"].setdefault("namespace", "default")  # as kubectl apply does
        store.create(rt, doc)
    clock = WallClock()
    TrainJobReconciler(store, clock, Framework(runtime_plugins(), Handle(clock))).reconcile(("default", name))
    return store.get(JOBSETS, "default", name)


def _comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without what differs per store: identity, versions, times and field ownership."""
    meta = {k: v for k, v in obj["metadata"].items() if k in ("name", "namespace", "labels", "annotations")}
    owners = [{k: v for k, v in ref.items() if k != "uid"} for ref in obj["metadata"]["ownerReferences"]]
    return {"metadata": {**meta, "ownerReferences": owners}, "spec": obj["spec"]}
