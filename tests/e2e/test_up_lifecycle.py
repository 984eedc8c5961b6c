"""Pod and Job lifecycle through the front door: `gangplane up`, driven with the official `kubernetes` Python
client. A crash-looping Job fails with BackoffLimitExceeded after the right number of restarts (with kubelet
events and `--previous` logs); volumes and secretKeyRef env reach the process; a `setsid` child dies with
its pod; the admin credentials stay out of pods; nodes, pods, Jobs and TrainJobs list and watch without a
deserialisation error."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from waiting import wait_for

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config, watch  # noqa: E402

from gangplane.agent import sandbox  # noqa: E402
from gangplane.clock import rfc3339  # noqa: E402

pytestmark = pytest.mark.slow
NS = "default"
MOUNT_POINTS = (
    "/etc/gp-e2e/settings",
    "/etc/gp-e2e",
    "/workspace/dataset",
    "/workspace",
    "/var/run/secrets/kubernetes.io/serviceaccount",
    "/var/run/secrets/kubernetes.io",
    "/var/run/secrets",
)
USERS_OWN = 'print("the user\'s own train.py")\n'
CLUSTER = "nodeGroups:\n  - {name: cpu, count: 2, namePrefix: node-, capacity: {cpu: '4', memory: 8Gi}}\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("up")
    env = {**os.environ, "GANGPLANE_HOME": str(root / "home")}
    (root / "cluster.yaml").write_text(CLUSTER)
    (root / "train.py").write_text(USERS_OWN)  # `gangplane up` runs here, the user's directory

    def gp(*args: str) -> None:
        done = subprocess.run([sys.executable, "-m", "gangplane", *args], env=env, capture_output=True,
                              text=True, timeout=120, cwd=root)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr

    # In namespace mode a missing mount point is created on the host (an empty directory): remove those
    # this module made, and only those.
    made = [d for d in MOUNT_POINTS if not Path(d).exists()]
    gp("up", "--config", str(root / "cluster.yaml"), "--port", str(_free_port()))
    try:
        yield root / "home"
    finally:
        gp("down")
        for directory in made:
            with contextlib.suppress(OSError):
                Path(directory).rmdir()


@pytest.fixture(scope="module")
def api(home: Path) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(home / "kubeconfig"))


def create_pod(api: client.ApiClient, name: str, containers: list[dict[str, Any]], **spec: Any) -> None:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"restartPolicy": "Never", "containers": containers, **spec}}  # fmt: skip
    client.CoreV1Api(api).create_namespaced_pod(NS, body)


def finished_pod(api: client.ApiClient, name: str) -> Any:
    core = client.CoreV1Api(api)
    return wait_for(lambda: (p := core.read_namespaced_pod(name, NS)).status.phase in ("Succeeded", "Failed") and p,
                    what=f"pod {name} to finish", timeout=60.0, interval=0.2)  # fmt: skip


def test_official_client_lists_and_watches_without_errors(api: client.ApiClient) -> None:
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    nodes = core.list_node().items
    assert len(nodes) == 2 and all(n.status.node_info.kubelet_version for n in nodes)
    stream = watch.Watch().stream(core.list_node, timeout_seconds=1)
    assert {e["object"].metadata.name for e in stream} == {"node-0", "node-1"}
    create_pod(api, "watched", [{"name": "main", "image": "python", "command": ["python", "-c", "pass"]}])
    added = next(e for e in watch.Watch().stream(core.list_namespaced_pod, NS, timeout_seconds=2)
                 if e["object"].metadata.name == "watched")  # fmt: skip
    assert added["object"].status.qos_class == "BestEffort" and added["object"].spec.restart_policy == "Never"
    batch.list_namespaced_job(NS)
    list(watch.Watch().stream(batch.list_namespaced_job, NS, timeout_seconds=1))
    custom, trainjobs = client.CustomObjectsApi(api), ("trainer.kubeflow.org", "v1alpha1", NS, "trainjobs")
    custom.list_namespaced_custom_object(*trainjobs)
    list(watch.Watch().stream(custom.list_namespaced_custom_object, *trainjobs, timeout_seconds=1))


def kubectl_describe(home: Path, name: str) -> str | None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return None
    env = {**os.environ, "KUBECONFIG": str(home / "kubeconfig")}
    done = subprocess.run(
        [kubectl, "describe", "pod", name], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_crash_loop_fails_the_job_with_backoff_limit_exceeded(api: client.ApiClient, home: Path) -> None:
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    crash = {
        "name": "main",
        "image": "python",
        "command": ["python", "-c", "print('boom'); raise SystemExit(3)"],
    }
    template = {"spec": {"restartPolicy": "OnFailure", "containers": [crash]}}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "crashy"},
           "spec": {"backoffLimit": 2, "template": template}}  # fmt: skip
    batch.create_namespaced_job(NS, job)

    def restarted() -> Any:
        pods = core.list_namespaced_pod(NS, label_selector="batch.kubernetes.io/job-name=crashy").items
        return next((p for p in pods if (p.status.container_statuses or [None])[0]
                     and p.status.container_statuses[0].restart_count >= 1), None)  # fmt: skip

    pod = wait_for(restarted, what="a restart", timeout=60.0, interval=0.2)
    last = pod.status.container_statuses[0].last_state.terminated
    assert (last.exit_code, last.reason) == (3, "Error") and last.started_at and last.finished_at
    name = pod.metadata.name
    assert core.read_namespaced_pod_log(name, NS, previous=True) == "boom\n"
    described = kubectl_describe(home, name)  # unmodified kubectl shows the last state and kubelet events
    if described is not None:
        assert "Last State:     Terminated" in described and "Exit Code:    3" in described, described
        assert "Started" in described.split("Events:")[-1], described

    def failed() -> Any:
        job = batch.read_namespaced_job("crashy", NS)
        return next((c for c in job.status.conditions or [] if c.type == "Failed"), None) and job

    job_now = wait_for(failed, timeout=90, what="the Job to fail", interval=0.2)
    reasons = {c.type: c.reason for c in job_now.status.conditions}
    assert reasons == {"FailureTarget": "BackoffLimitExceeded", "Failed": "BackoffLimitExceeded"}
    assert job_now.status.failed == 1  # the one pod, after restarts reached backoffLimit 2
    events = [e for e in core.list_namespaced_event(NS).items if e.involved_object.name == name]
    by_reason = {e.reason: e for e in events}
    assert by_reason["Started"].count >= 3 and by_reason["Started"].source.component == "kubelet"
    assert {"Created", "Started", "BackOff", "Killing"} <= by_reason.keys()


def test_volumes_and_secret_env_reach_the_process_and_admin_state_does_not(
    api: client.ApiClient, home: Path
) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map(NS, {"metadata": {"name": "settings"}, "data": {"mode": "fast"}})
    core.create_namespaced_secret(NS, {"metadata": {"name": "creds"}, "stringData": {"password": "hunter2"}})
    token = home / "token"
    code = ("import os, sys; print(open('/etc/gp-e2e/settings/mode').read()); print(os.environ['PASSWORD']); "
            "print(os.environ.get('GANGPLANE_HOME'), os.environ.get('KUBECONFIG')); print(os.getcwd()); "
            f"print(len(open({str(token)!r}).read()))")  # fmt: skip
    container = {"name": "main", "image": "python", "command": ["python", "-c", code],
                 "env": [{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}}],
                 "volumeMounts": [{"name": "settings", "mountPath": "/etc/gp-e2e/settings"}]}  # fmt: skip
    # In path-mapping mode the program finds the volume only through the mapped argument; read it via $1 there.
    if sandbox.mode() != sandbox.NAMESPACE:
        container["command"] = ["python", "-c", code.replace("'/etc/gp-e2e/settings/mode'", "sys.argv[1]"),
                                "/etc/gp-e2e/settings/mode"]  # fmt: skip
    create_pod(api, "reader", [container], volumes=[{"name": "settings", "configMap": {"name": "settings"}}])
    pod = finished_pod(api, "reader")
    out = core.read_namespaced_pod_log("reader", NS).splitlines()
    assert pod.status.phase == "Succeeded", out
    assert out[:3] == ["fast", "hunter2", "None None"]
    assert out[3] == str(home / "pods" / NS / f"reader_{pod.metadata.uid}")  # the pod's own sandbox
    if sandbox.mode() == sandbox.NAMESPACE:
        assert out[4] == "0"  # the admin token is covered inside the pod's mount namespace


# The shape of the Kubeflow SDK's CustomTrainer command (python-ecosystem.md §1.1): the function's source
# written by a `bash -c` heredoc to a relative file, then run.
SDK_COMMAND = """read -r -d '' SCRIPT << EOM
import os
print(os.path.abspath(__file__))
EOM
printf "%s" "$SCRIPT" > "train.py"
python train.py"""


def test_the_sdk_generated_script_lands_in_the_pod_sandbox(api: client.ApiClient, home: Path) -> None:
    create_pod(
        api, "sdk-script", [{"name": "main", "image": "python", "command": ["bash", "-c", SDK_COMMAND]}]
    )
    pod = finished_pod(api, "sdk-script")
    out = client.CoreV1Api(api).read_namespaced_pod_log("sdk-script", NS).splitlines()
    assert pod.status.phase == "Succeeded", out
    assert out == [str(home / "pods" / NS / f"sdk-script_{pod.metadata.uid}" / "train.py")]
    assert (home.parent / "train.py").read_text() == USERS_OWN  # the user's own file is untouched


def test_a_setsid_child_dies_with_its_pod(api: client.ApiClient, home: Path) -> None:
    pidfile = home.parent / "escaped.pid"
    code = ("import subprocess, sys, time; "
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], start_new_session=True); "
            f"open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep(600)")  # fmt: skip
    create_pod(api, "escaper", [{"name": "main", "image": "python", "command": ["python", "-c", code]}],
               terminationGracePeriodSeconds=1)  # fmt: skip
    pid = int(
        wait_for(
            lambda: pidfile.exists() and pidfile.read_text(),
            what="the escaped child",
            timeout=60.0,
            interval=0.2,
        )
    )
    client.CoreV1Api(api).delete_namespaced_pod("escaper", NS)

    def gone() -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
        except OSError:
            return True

    wait_for(gone, timeout=30, what="the setsid child to end", interval=0.2)


PVC_MANIFEST = """\
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: dataset
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
"""


def apply_manifest(home: Path, api: client.ApiClient, manifest: str) -> None:
    """`kubectl apply -f -` where kubectl is installed, else the same object through the client."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        client.CoreV1Api(api).create_namespaced_persistent_volume_claim(NS, yaml.safe_load(manifest))
        return
    env = {**os.environ, "KUBECONFIG": str(home / "kubeconfig")}
    done = subprocess.run([kubectl, "apply", "-f", "-"], input=manifest, env=env, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_a_claim_is_shared_by_an_initializer_and_a_trainer(api: client.ApiClient, home: Path) -> None:
    """An upstream PVC manifest binds to a volume provisioned in the default StorageClass; a pod mounting a
    missing claim waits Pending with the reason; the data outlives the pods and goes with the claim."""
    core = client.CoreV1Api(api)
    claim = [{"name": "data", "persistentVolumeClaim": {"claimName": "dataset"}}]
    mount = [{"name": "data", "mountPath": "/workspace/dataset"}]
    write = "import sys; open(sys.argv[1] + '/part-0', 'w').write('prepared')"
    read = "import sys; print(open(sys.argv[1] + '/part-0').read())"
    create_pod(api, "early", [{"name": "main", "image": "python", "command": ["python", "-c", "pass"],
                               "volumeMounts": mount}], volumes=claim)  # fmt: skip

    def unschedulable() -> Any:  # kube-scheduler's VolumeBinding: the pod is not given a node
        conditions = core.read_namespaced_pod("early", NS).status.conditions or []
        return next((c.message for c in conditions if c.type == "PodScheduled" and c.status == "False"), None)

    assert (
        wait_for(unschedulable, what="the missing claim", timeout=60.0, interval=0.2)
        == 'persistentvolumeclaim "dataset" not found'
    )
    assert not core.read_namespaced_pod("early", NS).spec.node_name
    apply_manifest(home, api, PVC_MANIFEST)
    bound = wait_for(lambda: (c := core.read_namespaced_persistent_volume_claim("dataset", NS)).status.phase == "Bound"
                     and c, what="the claim to bind", timeout=60.0, interval=0.2)  # fmt: skip
    assert bound.spec.storage_class_name == "standard" and bound.status.capacity == {"storage": "1Gi"}
    assert finished_pod(api, "early").status.phase == "Succeeded"  # requeued by the claim's binding
    core.delete_namespaced_pod("early", NS)
    volume = core.read_persistent_volume(bound.spec.volume_name)
    assert (
        volume.spec.claim_ref.uid == bound.metadata.uid
        and volume.spec.persistent_volume_reclaim_policy == "Delete"
    )
    for name, code in (("initializer", write), ("trainer", read)):
        create_pod(api, name, [{"name": "main", "image": "python", "volumeMounts": mount,
                                "command": ["python", "-c", code, "/workspace/dataset"]}], volumes=claim)  # fmt: skip
        assert finished_pod(api, name).status.phase == "Succeeded"
    assert core.read_namespaced_pod_log("trainer", NS) == "prepared\n"
    directory = Path(volume.spec.host_path.path)
    assert (directory / "part-0").read_text() == "prepared" and directory.parent == home / "claims"
    for name in ("initializer", "trainer"):
        core.delete_namespaced_pod(name, NS)
    core.delete_namespaced_persistent_volume_claim("dataset", NS)
    wait_for(
        lambda: not directory.exists(),
        what="reclaim policy Delete to remove the directory",
        timeout=60.0,
        interval=0.2,
    )
    assert not [v for v in core.list_persistent_volume().items if v.metadata.name == volume.metadata.name]


def test_pod_failure_policy_ignores_a_disruption(api: client.ApiClient, home: Path) -> None:
    """What the eviction API does (``DisruptionTarget``, then the delete) is ignored by the Job's
    ``podFailurePolicy``: the pod is replaced without counting towards ``backoffLimit: 0``."""
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    marker = home.parent / "evicted-once"
    code = (f"import os, time; m = {str(marker)!r}; done = os.path.exists(m); open(m, 'a').close(); "
            "time.sleep(0 if done else 120)")  # fmt: skip
    main = {"name": "main", "image": "python", "command": ["python", "-c", code]}
    policy = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    template = {"spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "containers": [main]}}
    spec = {"backoffLimit": 0, "podFailurePolicy": policy, "template": template}
    batch.create_namespaced_job(NS, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "evictable"},
                                     "spec": spec})  # fmt: skip
    selector = "batch.kubernetes.io/job-name=evictable"
    first = wait_for(lambda: marker.exists() and core.list_namespaced_pod(NS, label_selector=selector).items[0],
                     what="the first pod to run", timeout=60.0, interval=0.2)  # fmt: skip
    disrupted = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                 "message": "Eviction API: evicting", "lastTransitionTime": rfc3339(time.time())}  # fmt: skip
    core.patch_namespaced_pod_status(first.metadata.name, NS, {"status": {"conditions": [disrupted]}})
    core.delete_namespaced_pod(first.metadata.name, NS)

    def complete() -> Any:
        job = batch.read_namespaced_job("evictable", NS)
        return any(c.type == "Complete" for c in job.status.conditions or []) and job

    job = wait_for(
        complete, timeout=60, what="the Job to complete after the ignored disruption", interval=0.2
    )
    assert not job.status.failed and job.status.succeeded == 1


IN_CLUSTER_CLIENT = """
import json, sys
from kubernetes import client, config
config.load_incluster_config()
core = client.CoreV1Api()
print(json.dumps(sorted(p.metadata.name for p in core.list_namespaced_pod(sys.argv[1]).items)))
for attempt in (lambda: core.create_namespace({"metadata": {"name": "taken-over"}}),
                lambda: core.list_secret_for_all_namespaces(),
                lambda: core.list_namespaced_secret("kube-system")):
    try:
        attempt()
        print("allowed")
    except client.ApiException as err:
        print(err.status)
print(len(core.list_node().items))
print(len(open(sys.argv[2]).read()))  # the admin kubeconfig: covered in the pod's mount namespace
print(open(config.incluster_config.SERVICE_TOKEN_FILENAME).read())
"""


@pytest.mark.skipif(
    sandbox.mode() != sandbox.NAMESPACE, reason="the token path is visible only in namespace mode"
)
def test_a_pod_uses_the_api_through_its_service_account_only(api: client.ApiClient, home: Path) -> None:
    """`load_incluster_config()` works in a pod: its token lists pods in its namespace, is refused
    cluster-admin actions (403), and stops working once the pod is deleted (401)."""
    core = client.CoreV1Api(api)
    container = {
        "name": "main",
        "image": "python",
        "command": ["python", "-c", IN_CLUSTER_CLIENT, NS, str(home / "kubeconfig")],
    }
    create_pod(api, "in-cluster", [container])
    pod = finished_pod(api, "in-cluster")
    out = core.read_namespaced_pod_log("in-cluster", NS).splitlines()
    assert pod.status.phase == "Succeeded", out
    assert "in-cluster" in out[0] and out[1:4] == ["403", "403", "403"] and int(out[4]) == 2, out
    assert out[5] == "0"
    token = out[6]
    assert token and token not in (home / "token").read_text()
    published = core.read_namespaced_config_map("kube-root-ca.crt", NS).data["ca.crt"]
    assert published == (home / "tls.crt").read_text()  # what in-cluster clients can also trust
    assert core.read_namespaced_service_account("default", NS).metadata.uid
    asked = client.Configuration()
    asked.host, asked.ssl_ca_cert = api.configuration.host, api.configuration.ssl_ca_cert
    asked.api_key = {"authorization": f"Bearer {token}"}
    as_pod = client.CoreV1Api(client.ApiClient(asked))
    assert as_pod.list_namespaced_pod(NS).items  # still valid while the pod exists
    core.delete_namespaced_pod("in-cluster", NS)
    wait_for(lambda: not [p for p in core.list_namespaced_pod(NS).items if p.metadata.name == "in-cluster"],
             what="the pod to go", timeout=60.0, interval=0.2)  # fmt: skip
    with pytest.raises(client.ApiException) as revoked:
        as_pod.list_namespaced_pod(NS)
    assert revoked.value.status == 401
