"""The real kubectl against the embedded API server: ``explain`` to any depth of a custom kind,
``auth can-i`` / ``auth whoami``, the typed commands (``create secret|configmap|namespace|job|priorityclass``,
``run``), which send protobuf bodies, ``top`` over a real process, and ``delete pod`` with and without
``--grace-period=0 --force`` (graceful deletion)."""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from cli_cluster import Cli, embedded_cluster

from gangplane.clock import rfc3339
from gangplane.store.catalog import (
    CONFIGMAPS,
    JOBS,
    LEASES,
    NAMESPACES,
    NODES,
    PODS,
    PRIORITY_CLASSES,
    SECRETS,
    SERVICE_ACCOUNTS,
)

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


def test_explain_reaches_nested_fields_of_built_in_kinds(cli: Cli) -> None:
    resources = kubectl(cli, "explain", "pod.spec.containers.resources")
    assert resources.returncode == 0, resources.stderr
    assert "limits\t<map[string]Quantity>" in resources.stdout
    job = kubectl(cli, "explain", "job.spec.template.spec.restartPolicy")
    assert job.returncode == 0 and "GROUP:      batch" in job.stdout, job.stderr


def test_auth_can_i_and_whoami_answer_for_the_admin(cli: Cli) -> None:
    for args in (["create", "trainjobs"], ["delete", "pods", "-n", "team-a"], ["get", "/healthz"]):
        answer = kubectl(cli, "auth", "can-i", *args)
        assert (answer.returncode, answer.stdout.strip()) == (0, "yes"), answer.stderr
    listed = kubectl(cli, "auth", "can-i", "--list")
    assert listed.returncode == 0 and "*.*" in listed.stdout, listed.stderr
    who = kubectl(cli, "auth", "whoami")
    assert who.returncode == 0 and "gangplane-admin" in who.stdout, who.stderr


def test_typed_create_and_run_send_protobuf_and_are_stored_as_json(cli: Cli) -> None:
    created = [
        kubectl(cli, "create", "secret", "generic", "hf-token", "--from-literal=HF_TOKEN=hf_abc123"),
        kubectl(cli, "create", "configmap", "cfg", "--from-literal=a=1", "--from-literal=b=two"),
        kubectl(cli, "create", "namespace", "team-z"),
        kubectl(cli, "run", "tiny", "--image=busybox", "--restart=Never", "--env=X=1", "--labels=app=tiny",
                "--", "sh", "-c", "echo hi"),
        kubectl(cli, "create", "job", "hello", "--image=busybox", "--", "echo", "hi"),
        kubectl(cli, "create", "priorityclass", "high", "--value=1000"),
        kubectl(cli, "create", "serviceaccount", "trainer"),
    ]  # fmt: skip
    assert [c.returncode for c in created] == [0] * 7, [c.stderr for c in created]
    assert cli.store.get(SERVICE_ACCOUNTS, "default", "trainer")["metadata"]["name"] == "trainer"
    job = cli.store.get(JOBS, "default", "hello")
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]
    assert cli.store.get(PRIORITY_CLASSES, "", "high")["value"] == 1000
    secret = cli.store.get(SECRETS, "default", "hf-token")
    assert base64.b64decode(secret["data"]["HF_TOKEN"]) == b"hf_abc123"
    assert secret["type"] == "Opaque"  # defaulted as core/v1 does
    assert cli.store.get(CONFIGMAPS, "default", "cfg")["data"] == {"a": "1", "b": "two"}
    assert cli.store.get(NAMESPACES, "", "team-z")["metadata"]["name"] == "team-z"
    pod = cli.store.get(PODS, "default", "tiny")
    container = pod["spec"]["containers"][0]
    assert (container["image"], container["args"], container["env"]) == (
        "busybox",
        ["sh", "-c", "echo hi"],
        [{"name": "X", "value": "1"}],
    )
    assert pod["metadata"]["labels"] == {"app": "tiny"} and pod["spec"]["restartPolicy"] == "Never"


def test_top_shows_what_the_pods_processes_use(cli: Cli) -> None:
    busy = subprocess.Popen(
        [sys.executable, "-c", "import time\nend = time.time() + 20\nwhile time.time() < end: pass"]
    )
    try:
        now = rfc3339(time.time())
        cli.store.create(NODES, {"metadata": {"name": "node-top"}})
        cli.store.update_status(
            NODES,
            {
                "metadata": {"name": "node-top"},
                "status": {
                    "allocatable": {"cpu": "2", "memory": "4Gi"},
                    "capacity": {"cpu": "2", "memory": "4Gi"},
                },
            },
        )
        meta = {"name": "busy", "namespace": "default", "labels": {"app": "busy"}}
        cli.store.create(
            PODS,
            {
                "metadata": meta,
                "spec": {"nodeName": "node-top", "containers": [{"name": "main", "image": "py"}]},
            },
        )
        status = {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "main",
                    "containerID": f"process://{busy.pid}",
                    "state": {"running": {"startedAt": now}},
                }
            ],
        }
        cli.store.update_status(PODS, {"metadata": meta, "status": status})  # fmt: skip
        pods = kubectl(cli, "top", "pods", "--containers", "-l", "app=busy")
        assert pods.returncode == 0, pods.stderr
        row = pods.stdout.splitlines()[1].split()
        assert (
            row[:2] == ["busy", "main"] and row[2].endswith("m") and row[3].endswith("Mi") and row[3] != "0Mi"
        )
        nodes = kubectl(cli, "top", "nodes")
        assert nodes.returncode == 0 and "node-top" in nodes.stdout, nodes.stderr
    finally:
        busy.kill()
        busy.wait()


def test_delete_pod_is_graceful_and_force_deletes_at_once(cli: Cli) -> None:
    """A pod on a node an agent serves (its Lease; no agent runs here, so nothing finishes the deletion)."""
    if not cli.store.exists(NAMESPACES, "", "kube-node-lease"):
        cli.store.create(NAMESPACES, {"metadata": {"name": "kube-node-lease"}})
    lease = {"metadata": {"name": "node-grace", "namespace": "kube-node-lease"}, "spec": {}}
    cli.store.create(LEASES, {**lease, "spec": {"holderIdentity": "node-grace"}})
    spec = {"nodeName": "node-grace", "containers": [{"name": "main", "image": "py"}]}
    for name in ("graceful", "shortened"):
        cli.store.create(PODS, {"metadata": {"name": name, "namespace": "default"}, "spec": spec})
    assert kubectl(cli, "delete", "pod", "graceful", "--wait=false").returncode == 0
    assert kubectl(cli, "delete", "pod", "shortened", "--grace-period=5", "--wait=false").returncode == 0
    marked = cli.store.get(PODS, "default", "graceful")["metadata"]
    assert marked["deletionTimestamp"] and marked["deletionGracePeriodSeconds"] == 30
    assert cli.store.get(PODS, "default", "shortened")["metadata"]["deletionGracePeriodSeconds"] == 5
    listed = kubectl(cli, "get", "pod", "graceful", "--no-headers")
    assert "Terminating" in listed.stdout, listed
    forced = kubectl(cli, "delete", "pod", "graceful", "shortened", "--grace-period=0", "--force")
    assert forced.returncode == 0 and 'pod "graceful" force deleted' in forced.stdout, forced
    assert not cli.store.exists(PODS, "default", "graceful")
    assert not cli.store.exists(PODS, "default", "shortened")
