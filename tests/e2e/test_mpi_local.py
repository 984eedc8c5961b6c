"""MPI on one machine: an OpenMPI runtime's ``mpirun`` reaches its worker pods through gangplane's remote-shell
agent instead of SSH, so the ranks run inside the worker pods (their environment, their logs) and go with them.

The runtime is upstream's ``deepspeed-distributed`` with only its name and image changed (an image gangplane
maps to no environment, so these tests need OpenMPI but not DeepSpeed); the sshd command, readiness probe,
SSH mount and launcher dependency are upstream's."""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
import yaml
from e2e_harness import Cluster, two_nodes, wait_for

from crdschema import SHARED_DIR
from gangplane.agent import sandbox
from gangplane.agent.nodes import ClusterConfig
from gangplane.agent.rsh_server import can_set_hostname
from gangplane.agent.sandbox import MARKER_ENV
from gangplane.store import catalog

pytestmark = pytest.mark.slow

UPSTREAM = SHARED_DIR / "upstream" / "runtimes" / "deepspeed_distributed.yaml" if SHARED_DIR else None
SOURCE = Path(__file__).with_name("mpi_allreduce.c")


@pytest.fixture(scope="module")
def allreduce(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (shutil.which("mpirun") and shutil.which("mpicc")):
        pytest.skip("OpenMPI is not installed (docs/mpi.md: apt-get install openmpi-bin libopenmpi-dev)")
    binary = tmp_path_factory.mktemp("mpi") / "allreduce"
    subprocess.run(["mpicc", "-o", str(binary), str(SOURCE)], check=True, timeout=120)
    return binary


@pytest.fixture
def cluster(cluster_factory: Callable[[ClusterConfig], Cluster]) -> Cluster:
    return mpi_cluster(cluster_factory)


def mpi_cluster(cluster_factory: Callable[[ClusterConfig], Cluster]) -> Cluster:
    if UPSTREAM is None or not UPSTREAM.exists():
        pytest.skip("needs ../shared/upstream")
    runtime = yaml.safe_load(UPSTREAM.read_text())
    runtime["metadata"]["name"] = "mpi-local"
    for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        rjob["template"]["spec"]["template"]["spec"]["containers"][0]["image"] = "example.com/mpi:local"
    c = cluster_factory(two_nodes())
    c.create(runtime)
    return c


def trainjob(name: str, command: list[str]) -> dict:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"runtimeRef": {"name": "mpi-local"}, "trainer": {"numNodes": 2, "command": command}},
    }


def finish(cluster: Cluster, name: str) -> str:
    try:
        outcome: str = wait_for(lambda: cluster.finished(name), timeout=120, what=f"{name} to finish")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{cluster.diagnose(name)}") from None
    return outcome


def pod(cluster: Cluster, job: str, rjob: str) -> dict:
    found = [p for p in cluster.pods(job) if p["metadata"]["name"].startswith(f"{job}-{rjob}-")]
    return found[0] if found else {"metadata": {"name": "absent", "uid": ""}}


@pytest.fixture(params=[sandbox.NAMESPACE, sandbox.PATH_MAPPING])
def isolation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways pods see their volumes (docs/nodes.md): mounted in a namespace (root) or path-mapped."""
    if request.param == sandbox.NAMESPACE and sandbox.mode() != sandbox.NAMESPACE:
        pytest.skip("mount namespaces need root with unshare")
    monkeypatch.setattr(sandbox, "mode", lambda: request.param)
    return str(request.param)


def test_mpirun_ranks_run_in_their_pods_and_exchange_data(
    isolation: str, cluster_factory: Callable[[ClusterConfig], Cluster], allreduce: Path
) -> None:
    cluster = mpi_cluster(cluster_factory)
    cluster.create(trainjob("hello", ["mpirun", "-np", "2", str(allreduce)]))
    assert finish(cluster, "hello") == "Complete", cluster.diagnose("hello")
    launcher_log = cluster.log(pod(cluster, "hello", "launcher"))
    ranks = sorted(re.findall(r"rank \d of 2 in \S+ \(host \S+\): sum 1", launcher_log))
    assert [r.split(" (")[0] for r in ranks] == [
        "rank 0 of 2 in hello-launcher-0-0",
        "rank 1 of 2 in hello-node-0-0",
    ]
    if can_set_hostname():  # each rank sees its pod's host name, as in a pod on a cluster
        assert [r.split("(host ")[1].split(")")[0] for r in ranks] == ["hello-launcher-0-0", "hello-node-0-0"]
    worker_log = "".join(p.read_text() for p in cluster.logs.glob("default/hello-node-0-0-*/node.log"))
    assert "standing in for sshd" in worker_log
    assert "session 1: pid" in worker_log and "orted" in worker_log
    assert "session 1: exit 0" in worker_log


def _processes_of(uid: str) -> list[int]:
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(MARKER_ENV, "").startswith(f"{uid}/"):
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found


def _named(pids: list[int], name: str) -> bool:
    names = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            names.append(psutil.Process(pid).name())
    return name in names


def test_deleting_the_trainjob_ends_the_ranks_in_the_worker_pod(cluster: Cluster) -> None:
    if not shutil.which("mpirun"):
        pytest.skip("OpenMPI is not installed")
    cluster.create(trainjob("sleepy", ["mpirun", "-np", "2", "sleep", "600"]))
    wait_for(lambda: "session 1: pid" in cluster.log(pod(cluster, "sleepy", "node")), 120, "the remote rank")
    uid = pod(cluster, "sleepy", "node")["metadata"]["uid"]
    assert uid
    wait_for(lambda: _named(_processes_of(uid), "sleep"), 60, "the rank, a process of the worker pod")
    cluster.store.delete(catalog.TRAINJOBS, "default", "sleepy")
    wait_for(lambda: not _processes_of(uid), 60, "the worker pod's processes to end")
    wait_for(lambda: not cluster.pods("sleepy"), 60, "the pods to go")
