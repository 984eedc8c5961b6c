"""``gangplane controller --kubeconfig``: the TrainJob controller as a separate process against an API server,
with leader election, creating the JobSet of an applied TrainJob."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_cluster import RUNTIME, Cli, embedded_cluster, job

from gangplane.errors import NotFound
from gangplane.store.catalog import JOBSETS, LEASES

pytestmark = pytest.mark.slow


def _wait_for(check: object, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():  # type: ignore[operator]
                return True
        except NotFound:
            pass
        time.sleep(0.1)
    return False


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
    assert _wait_for(lambda: cli.store.get(LEASES, "default", "gangplane-trainjob-controller")), "no lease"
    lease = cli.store.get(LEASES, "default", "gangplane-trainjob-controller")
    assert lease["spec"]["holderIdentity"].endswith(f"_{proc.pid}")
    assert _wait_for(lambda: cli.store.get(JOBSETS, "default", "mnist")), "the controller made no JobSet"
    jobset = cli.store.get(JOBSETS, "default", "mnist")
    assert jobset["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
