"""Unmodified kubectl against a real server (uvicorn over HTTPS on a free localhost port, in a thread).

Skipped, visibly, where kubectl is not installed.
"""

from __future__ import annotations

import queue
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from gangplane.server.admission import TrainerAdmission
from gangplane.server.lifecycle import make_server
from gangplane.server.resources import default_registry
from gangplane.store import MemoryStore
from gangplane.store.base import Object, Operation, ResourceType
from server.conftest import reject_bad_cohort

KUBECTL = shutil.which("kubectl")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        KUBECTL is None, reason="kubectl is not installed; the kubectl end-to-end tests need it"
    ),
]

QUEUES = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-cq, labels: {team: ml}}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: team-lq, namespace: default}
spec: {clusterQueue: team-cq}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec: {weight: 1}
"""

TRAINING = """
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
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: mnist, labels: {app: mnist}}
spec:
  runtimeRef: {name: torch-distributed}
  trainer: {numNodes: 2}
"""


@dataclass
class Cluster:
    state_dir: Path
    cache_dir: Path

    def run(
        self, *args: str, stdin: str | None = None, check: bool = True, kubectl: str | None = KUBECTL
    ) -> subprocess.CompletedProcess[str]:
        assert kubectl is not None
        argv = [kubectl, "--kubeconfig", str(self.state_dir / "kubeconfig"), "--cache-dir", str(self.cache_dir),
                "--request-timeout=10s", *args]  # fmt: skip
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=30)
        if check:
            assert done.returncode == 0, f"kubectl {' '.join(args)} failed:\n{done.stderr}"
        return done

    def apply(self, manifest: str, *extra: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run("apply", "-f", "-", *extra, stdin=manifest, check=check)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    state_dir = tmp_path_factory.mktemp("gangplane")
    trainer = TrainerAdmission(default_registry())

    def admission(rt: ResourceType, op: Operation, new: Object, old: Object | None) -> Object:
        return trainer(rt, op, reject_bad_cohort(rt, op, new, old), old)

    store = MemoryStore(admission=admission)
    trainer.bind(store)
    server = make_server(state_dir, store, port=_free_port())
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "the server did not start"
    yield Cluster(state_dir, tmp_path_factory.mktemp("kube-cache"))
    server.should_exit = True
    thread.join(10)
    store.close()


def test_kubeconfig_and_token_are_private(cluster: Cluster) -> None:
    for name in ("kubeconfig", "token", "tls.key"):
        assert (cluster.state_dir / name).stat().st_mode & 0o077 == 0, name


def test_apply_client_side_then_again_then_server_side(cluster: Cluster) -> None:
    first = cluster.apply(QUEUES + "---" + TRAINING).stdout
    assert "clusterqueue.kueue.x-k8s.io/team-cq created" in first
    assert "trainjob.trainer.kubeflow.org/mnist created" in first
    assert "queue.scheduling.volcano.sh/research created" in first
    assert "trainjob.trainer.kubeflow.org/mnist unchanged" in cluster.apply(TRAINING).stdout
    changed = TRAINING.replace(
        "runtimeRef: {name: torch-distributed}", "runtimeRef: {name: torch-distributed}\n  suspend: true"
    )
    assert "trainjob.trainer.kubeflow.org/mnist configured" in cluster.apply(changed).stdout
    ssa = cluster.apply(QUEUES + "---" + changed, "--server-side", "--force-conflicts").stdout
    assert "trainjob.trainer.kubeflow.org/mnist serverside-applied" in ssa
    job = yaml.safe_load(cluster.run("get", "trainjob", "mnist", "-o", "yaml").stdout)
    assert job["spec"]["suspend"] is True
    assert job["spec"]["managedBy"] == "trainer.kubeflow.org/trainjob-controller"  # defaulted by admission
    assert job["metadata"]["labels"] == {"app": "mnist", "admitted-by": "test-hook"}


def test_get_tables_selectors_and_yaml(cluster: Cluster) -> None:
    cluster.apply(QUEUES)
    table = cluster.run("get", "clusterqueues").stdout.splitlines()
    assert table[0].split()[:2] == ["NAME", "COHORT"] and table[1].split()[0] == "team-cq"
    assert (
        cluster.run("get", "cq", "-l", "team=ml", "-o", "name").stdout.strip()
        == "clusterqueue.kueue.x-k8s.io/team-cq"
    )
    assert "No resources found" in cluster.run("get", "cq", "-l", "team=other").stderr
    lq = yaml.safe_load(cluster.run("get", "localqueue", "team-lq", "-o", "yaml").stdout)
    # stopPolicy: the CRD's default, applied by the server as on a cluster
    assert lq["spec"] == {"clusterQueue": "team-cq", "stopPolicy": "None"}
    assert lq["metadata"]["namespace"] == "default"
    assert "No resources found" in cluster.run("get", "localqueues", "-n", "kube-system").stderr


def _pod(name: str, labels: str = "{}") -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, labels: {labels}}}
spec:
  containers: [{{name: main, image: busybox}}, {{name: side, image: busybox}}]
"""


def test_patch_merge_strategic_json_and_status(cluster: Cluster) -> None:
    cluster.apply(_pod("patched"))
    cluster.run("patch", "pod", "patched", "-p", '{"spec":{"containers":[{"name":"side","image":"alpine"}]}}')
    cluster.run("patch", "pod", "patched", "--type=merge", "-p", '{"metadata":{"labels":{"x":"1"}}}')
    cluster.run(
        "patch",
        "pod",
        "patched",
        "--type=json",
        "-p",
        '[{"op":"add","path":"/metadata/labels/y","value":"2"}]',
    )
    cluster.run(
        "patch",
        "pod",
        "patched",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"phase":"Running"}}',
    )
    pod = yaml.safe_load(cluster.run("get", "pod", "patched", "-o", "yaml").stdout)
    assert [(c["name"], c["image"]) for c in pod["spec"]["containers"]] == [
        ("main", "busybox"),
        ("side", "alpine"),
    ]
    assert pod["metadata"]["labels"]["x"] == "1" and pod["metadata"]["labels"]["y"] == "2"
    assert pod["status"]["phase"] == "Running"
    row = cluster.run("get", "pod", "patched", "--no-headers").stdout.split()
    assert row[:4] == ["patched", "0/2", "Running", "0"]


def test_describe(cluster: Cluster) -> None:
    cluster.apply(QUEUES + "---" + _pod("described"))
    cq = cluster.run("describe", "clusterqueue", "team-cq").stdout
    assert "Name:" in cq and "team-cq" in cq and "Nominal Quota:  8" in cq
    pod = cluster.run("describe", "pod", "described").stdout
    assert "described" in pod and "busybox" in pod


def test_delete_cascades_to_dependents(cluster: Cluster) -> None:
    cluster.apply(TRAINING)
    uid = cluster.run("get", "trainjob", "mnist", "-o", "jsonpath={.metadata.uid}").stdout
    dependent = f"""
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: mnist
  ownerReferences: [{{apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainJob, name: mnist, uid: {uid},
                     controller: true, blockOwnerDeletion: true}}]
spec: {{replicatedJobs: []}}
"""
    cluster.apply(dependent)
    assert "deleted" in cluster.run("delete", "trainjob", "mnist", "--wait=false").stdout
    deadline = time.monotonic() + 5
    while cluster.run("get", "jobset", "mnist", check=False).returncode == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "NotFound" in cluster.run("get", "jobset", "mnist", check=False).stderr
    cluster.apply(TRAINING)
    cluster.apply(
        dependent.replace(
            uid, cluster.run("get", "trainjob", "mnist", "-o", "jsonpath={.metadata.uid}").stdout
        )
    )
    cluster.run("delete", "trainjob", "mnist", "--cascade=orphan")
    assert cluster.run("get", "jobset", "mnist", "-o", "jsonpath={.metadata.ownerReferences}").stdout == ""
    cluster.run("delete", "jobset", "mnist")


def test_logs(cluster: Cluster) -> None:
    cluster.apply(_pod("logger"))
    log_dir = cluster.state_dir / "logs" / "default" / "logger"
    log_dir.mkdir(parents=True, exist_ok=True)
    (log_dir / "main.log").write_text("epoch 1\nepoch 2\nepoch 3\n")
    (log_dir / "side.log").write_text("sidecar\n")
    assert cluster.run("logs", "logger", "-c", "main").stdout == "epoch 1\nepoch 2\nepoch 3\n"
    assert cluster.run("logs", "logger", "-c", "main", "--tail=1").stdout == "epoch 3\n"
    assert cluster.run("logs", "pod/logger", "--container=side").stdout == "sidecar\n"
    cluster.run(
        "patch",
        "pod",
        "logger",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"phase":"Succeeded"}}',
    )
    assert cluster.run("logs", "-f", "logger", "-c", "main").stdout.endswith("epoch 3\n")


def test_watch(cluster: Cluster) -> None:
    assert KUBECTL is not None
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {k: v}\n"
    cluster.apply(cm % "watched-1")
    argv = [KUBECTL, "--kubeconfig", str(cluster.state_dir / "kubeconfig"), "--cache-dir", str(cluster.cache_dir),
            "get", "configmaps", "-w", "--request-timeout=20s"]  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True)  # type: ignore[union-attr]
        reader.start()
        try:
            assert _wait_for(lines, "watched-1"), "the initial list never arrived"
            cluster.apply(cm % "watched-2")
            assert _wait_for(lines, "watched-2"), "the watch event never arrived"
        finally:
            proc.terminate()
            proc.wait(5)


def _wait_for(lines: queue.Queue[str], text: str, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if text in lines.get(timeout=0.2):
                return True
        except queue.Empty:
            continue
    return False


@pytest.mark.parametrize("mode", [(), ("--server-side",)], ids=["client-side", "server-side"])
def test_invalid_object_is_422_naming_the_field(cluster: Cluster, mode: tuple[str, ...]) -> None:
    bad = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: bad-cq}\n"
    bad += "spec: {cohortName: NotALabel}\n"
    done = cluster.apply(bad, *mode, check=False)
    assert done.returncode != 0
    assert "spec.cohortName" in done.stderr and "is invalid" in done.stderr
    assert cluster.run("get", "cq", "bad-cq", check=False).returncode != 0


@pytest.mark.parametrize("mode", [(), ("--server-side",)], ids=["client-side", "server-side"])
def test_invalid_trainjob_is_422_naming_the_field(cluster: Cluster, mode: tuple[str, ...]) -> None:
    cluster.apply(TRAINING)
    bad = (
        TRAINING.split("---")[1]
        .replace("name: mnist", "name: bad-job")
        .replace("numNodes: 2", "numNodes: -1")
    )
    done = cluster.apply(bad, *mode, check=False)
    assert done.returncode != 0
    assert "spec.trainer.numNodes" in done.stderr and "is invalid" in done.stderr


def test_trainjob_without_its_runtime_is_forbidden(cluster: Cluster) -> None:
    orphan = (
        TRAINING.split("---")[1]
        .replace("name: mnist", "name: orphan")
        .replace("torch-distributed", "missing")
    )
    done = cluster.apply(orphan, check=False)
    assert done.returncode != 0
    assert "spec.runtimeRef" in done.stderr and "forbidden" in done.stderr


def test_explain_and_api_resources(cluster: Cluster) -> None:
    assert "TrainJob" in cluster.run("explain", "trainjobs").stdout
    resources = cluster.run("api-resources", "--api-group=kueue.x-k8s.io", "-o", "name").stdout.split()
    assert "clusterqueues.kueue.x-k8s.io" in resources


def _older_kubectl(version: str) -> str | None:
    """Google Cloud SDK installs ``kubectl.1.NN`` beside its ``kubectl``; None where it does not."""
    found = Path(KUBECTL).resolve().parent / f"kubectl.{version}" if KUBECTL else None
    return str(found) if found is not None and found.is_file() else None


def test_kubectl_that_reads_openapi_v2_explains_and_validates(cluster: Cluster) -> None:
    """kubectl 1.27 reads ``/openapi/v2`` (protobuf) for ``explain`` and for the ``--validate`` probe."""
    kubectl = _older_kubectl("1.27")
    if kubectl is None:
        pytest.skip("kubectl 1.27 is not installed beside kubectl")
    explained = cluster.run("explain", "trainjob.spec.runtimeRef", kubectl=kubectl).stdout
    assert "apiGroup" in explained and "kind" in explained
    assert "limits" in cluster.run("explain", "pod.spec.containers.resources", kubectl=kubectl).stdout
    bad = (
        TRAINING.split("---")[1]
        .replace("name: mnist", "name: strict")
        .replace("numNodes: 2", "numNodes: 2, bogus: 1")
    )
    done = cluster.run("apply", "--validate=strict", "-f", "-", stdin=bad, check=False, kubectl=kubectl)
    assert done.returncode != 0 and "spec.trainer.bogus" in done.stderr  # the server's verdict: it got there


def _with_unknown_field(name: str) -> str:
    job = TRAINING.split("---")[1].replace("name: mnist", f"name: {name}")
    return job.replace("numNodes: 2", "numNodes: 2, bogus: 1")


def test_unknown_fields_as_validate_asks(cluster: Cluster) -> None:
    """kubectl sends ``fieldValidation`` Strict (its default), Warn or Ignore (``--validate=false``)."""
    cluster.apply(TRAINING)
    strict = cluster.apply(_with_unknown_field("fv-strict"), check=False)
    assert strict.returncode != 0 and "(BadRequest)" in strict.stderr
    assert 'strict decoding error: unknown field "spec.trainer.bogus"' in strict.stderr
    warned = cluster.apply(_with_unknown_field("fv-warn"), "--validate=warn")
    assert 'Warning: unknown field "spec.trainer.bogus"' in warned.stderr
    cluster.apply(_with_unknown_field("fv-ignore"), "--validate=false")
    for name in ("fv-warn", "fv-ignore"):
        job = yaml.safe_load(cluster.run("get", "trainjob", name, "-o", "yaml").stdout)
        assert job["spec"]["trainer"] == {"numNodes": 2}


def test_explain_from_openapi_v2(cluster: Cluster) -> None:
    explained = cluster.run("explain", "clusterqueue.spec", "--output=plaintext-openapiv2").stdout
    assert "queueingStrategy" in explained and "resourceGroups" in explained


def test_server_side_dry_run_checks_without_storing(cluster: Cluster) -> None:
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dry, namespace: default}\ndata: {k: v}\n"
    for mode in ((), ("--server-side",)):
        out = cluster.apply(manifest, "--dry-run=server", *mode).stdout
        assert "configmap/dry" in out and "(server dry run)" in out
        assert cluster.run("get", "configmap", "dry", check=False).returncode != 0  # nothing stored
    bad = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name, namespace: default}\n"
    assert cluster.apply(bad, "--dry-run=server", check=False).returncode != 0  # still fully checked
    cluster.apply(manifest)
    cluster.run("delete", "configmap", "dry", "--dry-run=server")
    assert cluster.run("get", "configmap", "dry").returncode == 0  # still there
    cluster.run("delete", "configmap", "dry")


def test_admission_warnings_reach_kubectl(cluster: Cluster) -> None:
    """A TrainJob on a deprecated runtime is admitted with a warning, which kubectl prints."""
    runtime, job = TRAINING.split("---")
    runtime = runtime.replace(
        "metadata: {name: torch-distributed}",
        "metadata: {name: old-torch, labels: {trainer.kubeflow.org/support: deprecated}}",
    )
    cluster.apply(runtime)
    job = job.replace("name: torch-distributed", "name: old-torch").replace("name: mnist", "name: warned")
    done = cluster.apply(job)
    assert "Warning: ClusterTrainingRuntime 'old-torch' is deprecated" in done.stderr
    cluster.run("delete", "trainjob", "warned")
