"""The real kubectl against the embedded API server: ``explain`` to any depth of a custom kind, and
``auth can-i`` / ``auth whoami`` (kubectl sends those reviews as protobuf)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator

import pytest
from cli_cluster import Cli, embedded_cluster

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    with embedded_cluster(tmp_path_factory.mktemp("gangplane-home")) as cluster:
        yield cluster


def kubectl(cli: Cli, *args: str) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    argv = [KUBECTL, "--kubeconfig", str(cli.state_dir / "kubeconfig"), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_explain_reaches_nested_fields_of_custom_kinds(cli: Cli) -> None:
    trainer = kubectl(cli, "explain", "trainjob.spec.trainer")
    assert trainer.returncode == 0, trainer.stderr
    assert "KIND:       TrainJob" in trainer.stdout and "numNodes\t<integer>" in trainer.stdout
    deep = kubectl(cli, "explain", "clusterqueue.spec.resourceGroups.flavors.resources")
    assert deep.returncode == 0, deep.stderr
    assert "nominalQuota" in deep.stdout and "-required-" in deep.stdout
    runtime = kubectl(cli, "explain", "clustertrainingruntime.spec.template.spec.replicatedJobs")
    assert runtime.returncode == 0 and "replicas" in runtime.stdout


def test_auth_can_i_and_whoami_answer_for_the_admin(cli: Cli) -> None:
    for args in (["create", "trainjobs"], ["delete", "pods", "-n", "team-a"], ["get", "/healthz"]):
        answer = kubectl(cli, "auth", "can-i", *args)
        assert (answer.returncode, answer.stdout.strip()) == (0, "yes"), answer.stderr
    listed = kubectl(cli, "auth", "can-i", "--list")
    assert listed.returncode == 0 and "*.*" in listed.stdout, listed.stderr
    who = kubectl(cli, "auth", "whoami")
    assert who.returncode == 0 and "gangplane-admin" in who.stdout, who.stderr
