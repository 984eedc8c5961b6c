"""TrainJobs placed by a real local Slurm through the embedded cluster (issue 8, end to end).

One in-process ``LocalCluster`` per test: a store with Trainer admission, the controllers, the node agents
running pods as real processes on Slurm's own nodes (``slurm_cluster_config(sinfo)``: n1..n4), and the Slurm
Bridge talking to the session's real Slurm (conftest.py). The runtime is examples/slurm/local-runtime.yaml.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from slurm_builders import LocalSlurm, wait_until

from gangplane.agent.nodes import node_specs
from gangplane.api.scheduling.slurm import SLURM_JOB_ID_LABEL, SLURM_NODE_NAME_LABEL
from gangplane.clock import WallClock
from gangplane.cluster.local import LocalCluster
from gangplane.cluster.process import cluster_config, slurm_cli
from gangplane.cluster.process import main as process_main
from gangplane.cluster.slurm import slurm_cluster_config
from gangplane.controllers.pending import WAITING_CONDITION
from gangplane.schedulers.slurm import CONDITION_TYPE, POD_GROUP_JOB_ANNOTATION
from gangplane.schedulers.slurm.model import Reason
from gangplane.server.admission import TrainerAdmission
from gangplane.server.resources import default_registry
from gangplane.store import catalog
from gangplane.store.base import Object
from gangplane.store.memory import MemoryStore

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "slurm" / "local-runtime.yaml"
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"
RANKS = (
    "import os; print('rank', os.environ['JOB_COMPLETION_INDEX'], os.environ['PET_NODE_RANK'], "
    "'of', os.environ['PET_NNODES'], flush=True)"
)


class PodHistory:
    """The last state the store reported for each pod (the DELETED event carries the final one)."""

    def __init__(self, store: MemoryStore) -> None:
        self.watch = store.watch(catalog.PODS, resource_version=store.list(catalog.PODS).resource_version)
        self.last: dict[str, Object] = {}
        self.thread = threading.Thread(target=self._follow, daemon=True)
        self.thread.start()

    def _follow(self) -> None:
        for event in self.watch:
            self.last[event.object["metadata"]["name"]] = event.object

    def close(self) -> None:
        self.watch.close()
        self.thread.join(5)


class Cluster:
    def __init__(self, store: MemoryStore, local: LocalCluster, logs: Path, slurm: LocalSlurm) -> None:
        self.store, self.local, self.logs, self.slurm = store, local, logs, slurm
        self.runtime = yaml.safe_load(EXAMPLE.read_text())

    def submit(self, name: str, nodes: int, code: str) -> Object:
        job = {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "runtimeRef": {"name": self.runtime["metadata"]["name"]},
                "trainer": {"numNodes": nodes, "command": [sys.executable, "-c", code]},
            },
        }
        return self.store.create(catalog.TRAINJOBS, job)

    def pods(self, job: str) -> list[Object]:
        items = self.store.list(catalog.PODS).items
        return sorted(
            (p for p in items if p["metadata"].get("labels", {}).get(JOBSET_LABEL) == job),
            key=lambda p: p["metadata"]["name"],
        )

    def bound(self, job: str, size: int) -> list[Object] | None:
        pods = self.pods(job)
        return pods if len(pods) == size and all(p["spec"].get("nodeName") for p in pods) else None

    def running(self, job: str, size: int) -> bool:
        pods = self.bound(job, size) or []
        return bool(pods) and all(p["status"].get("phase") == "Running" for p in pods)

    @staticmethod
    def disruption(pod: Object) -> tuple[str, str, str, str]:
        """(phase, and the DisruptionTarget condition's status, reason, message)."""
        status = pod.get("status") or {}
        found = [c for c in status.get("conditions") or () if c["type"] == "DisruptionTarget"]
        condition = found[0] if found else {}
        return (
            status.get("phase", ""),
            condition.get("status"),
            condition.get("reason"),
            condition.get("message"),
        )

    def pod_group(self, job: str) -> Object | None:
        groups = self.store.list(catalog.COSCHEDULING_PODGROUPS).items
        return next((g for g in groups if g["metadata"]["name"].startswith(job)), None)

    def group_condition(self, job: str) -> dict[str, Any]:
        group = self.pod_group(job) or {}
        conditions = (group.get("status") or {}).get("conditions") or ()
        return next((c for c in conditions if c["type"] == CONDITION_TYPE), {})

    def job_id(self, job: str) -> int | None:
        group = self.pod_group(job) or {"metadata": {}}
        value = (group["metadata"].get("annotations") or {}).get(POD_GROUP_JOB_ANNOTATION)
        return int(value) if value else None

    def trainjob_condition(self, job: str, kind: str) -> dict[str, Any] | None:
        status = self.store.get(catalog.TRAINJOBS, "default", job).get("status") or {}
        return next((c for c in status.get("conditions") or () if c["type"] == kind), None)

    def finished(self, job: str) -> str | None:
        for kind in ("Complete", "Failed"):
            found = self.trainjob_condition(job, kind)
            if found and found["status"] == "True":
                return kind
        return None

    def log(self, pod: Object) -> str:
        path = self.logs / "default" / pod["metadata"]["name"] / "node.log"
        return path.read_text() if path.exists() else ""

    def listed(self) -> list[int]:
        """Job ids plain ``squeue`` lists (pending, running, completing)."""
        return [int(i) for i in self.slurm.run("squeue", "-h", "-o", "%i").split()]


@pytest.fixture
def cluster(slurm: LocalSlurm, tmp_path: Path) -> Iterator[Cluster]:
    cli = slurm.cli()
    admission = TrainerAdmission(default_registry())
    store = MemoryStore(admission=admission)
    admission.bind(store)
    store.create(catalog.NAMESPACES, {"kind": "Namespace", "metadata": {"name": "default"}})
    config = slurm_cluster_config(cli.nodes())
    local = LocalCluster(store, WallClock(), config, tmp_path / "logs", scheduler_period=0.2, slurm=cli)
    local.start()
    try:
        found = Cluster(store, local, tmp_path / "logs", slurm)
        store.create(catalog.CLUSTER_TRAINING_RUNTIMES, found.runtime)
        yield found
    finally:
        local.stop()
        store.close()


def test_a_three_node_trainjob_is_placed_by_slurm_and_runs_with_correct_ranks(cluster: Cluster) -> None:
    cluster.submit("ranks", 3, RANKS)
    pods = wait_until(lambda: cluster.bound("ranks", 3), 30, "3 pods bound")
    job_id = cluster.job_id("ranks")
    assert job_id is not None
    allocated = cluster.slurm.run("squeue", "-h", "-t", "all", "-j", str(job_id), "-o", "%N").strip()
    hosts = cluster.slurm.run("scontrol", "show", "hostnames", allocated).split()
    assert isinstance(pods, list)
    assert sorted(p["spec"]["nodeName"] for p in pods) == sorted(hosts)  # Slurm's nodes, same names
    assert {p["metadata"]["labels"][SLURM_JOB_ID_LABEL] for p in pods} == {str(job_id)}
    assert wait_until(lambda: cluster.finished("ranks"), 30, "ranks to finish") == "Complete"
    logs = sorted(cluster.log(p).strip() for p in cluster.pods("ranks"))
    assert logs == ["rank 0 0 of 3", "rank 1 1 of 3", "rank 2 2 of 3"]
    wait_until(lambda: job_id not in cluster.listed(), 10, "the hold job released once all pods finished")
    # the PodGroup's phase followed the Slurm job through its pods (scheduler-plugins' controller rules)
    phase = lambda: ((cluster.pod_group("ranks") or {}).get("status") or {}).get("phase") == "Finished"  # noqa: E731
    wait_until(phase, 10, "the PodGroup to reach Finished")


def test_a_second_three_node_trainjob_waits_for_slurm_and_starts_after_the_first(cluster: Cluster) -> None:
    cluster.submit("first", 3, "import time; time.sleep(4)")
    wait_until(lambda: cluster.bound("first", 3), 30, "first bound")
    cluster.submit("second", 3, RANKS)
    wait_until(lambda: cluster.group_condition("second").get("reason") == Reason.JOB_PENDING, 30, "pending")
    second_job = cluster.job_id("second")
    assert second_job is not None and second_job in cluster.listed()  # submitted, Slurm holds it back
    assert len(cluster.pods("second")) == 3 and cluster.bound("second", 3) is None
    waiting = cluster.trainjob_condition("second", WAITING_CONDITION)
    assert waiting is not None and f"Slurm job {second_job} is pending" in waiting["message"]
    wait_until(lambda: cluster.bound("second", 3), 30, "second bound once Slurm freed the nodes")
    assert {p["status"].get("phase") for p in cluster.pods("first")} == {"Succeeded"}
    assert cluster.finished("first") == "Complete"
    assert wait_until(lambda: cluster.finished("second"), 30, "second to finish") == "Complete"


def test_a_trainjob_larger_than_the_partition_says_why_on_the_trainjob(cluster: Cluster) -> None:
    cluster.submit("huge", 5, RANKS)
    expected = "5 of 5 pods unschedulable: requested 5 nodes; partition slurm-bridge has 4"
    waiting = wait_until(  # while the Job still creates the pods, an earlier "3 of 5 pods ..." may show first
        lambda: (
            (found := cluster.trainjob_condition("huge", WAITING_CONDITION))
            and found["reason"] == "PodsUnschedulable"
            and found["message"] == expected
            and found
        ),
        30,
        f"the TrainJob to say why it waits: {expected!r}",
    )
    assert isinstance(waiting, dict) and waiting["status"] == "True"
    wait_until(
        lambda: cluster.group_condition("huge").get("reason") == Reason.UNSCHEDULABLE,
        30,
        "the PodGroup's condition (written by the bridge, which may lag the pods' condition)",
    )
    assert cluster.job_id("huge") is None  # nothing was submitted for it
    # a previous test's cancelled job may still show as COMPLETING for a moment: wait for the queue to drain
    wait_until(lambda: cluster.listed() == [], 30, "Slurm's queue to be empty")


def test_scancel_fails_the_pods_and_the_trainjob(cluster: Cluster) -> None:
    cluster.submit("victim", 3, "import time; time.sleep(60)")
    wait_until(lambda: cluster.running("victim", 3), 30, "victim running")
    names = [p["metadata"]["name"] for p in cluster.pods("victim")]
    job_id = cluster.job_id("victim")
    history = PodHistory(cluster.store)
    try:
        cluster.slurm.run("scancel", str(job_id))
        assert wait_until(lambda: cluster.finished("victim"), 10, "victim to fail") == "Failed"
        wait_until(lambda: not cluster.pods("victim"), 10, "failed pods released and gone")
    finally:
        history.close()
    ended = f"Slurm job {job_id} ended: CANCELLED; pod deleted"
    assert [Cluster.disruption(history.last[n]) for n in names] == [
        ("Failed", "True", "SlurmJobEnded", ended)
    ] * 3
    failed = cluster.trainjob_condition("victim", "Failed")
    assert failed is not None and failed["reason"] == "FailedJobs" and "victim-node-0" in failed["message"]
    (job,) = cluster.store.list(catalog.JOBS).items
    (job_failed,) = [c for c in job["status"]["conditions"] if c["type"] == "Failed"]
    assert job_failed["reason"] == "PodFailurePolicy" and "DisruptionTarget" in job_failed["message"]
    ended_group = (Reason.JOB_ENDED, f"Slurm job {job_id} ended: CANCELLED")

    def group_says() -> tuple[str, str]:
        group = cluster.group_condition("victim")
        return (group.get("reason", ""), group.get("message", ""))

    # the bridge's pass that deletes the pods writes the PodGroup's condition too; on a loaded machine the
    # pods can be gone before that write lands (or it lost a race and comes with the next pass)
    wait_until(lambda: group_says() == ended_group, 10, "the PodGroup to say the Slurm job ended")
    assert cluster.job_id("victim") is None and cluster.listed() == []  # no retry on a new Slurm job


def test_deleting_a_running_trainjob_cancels_its_slurm_job(cluster: Cluster) -> None:
    cluster.submit("doomed", 3, "import time; time.sleep(60)")
    wait_until(lambda: cluster.running("doomed", 3), 30, "doomed running")
    wait_until(lambda: not cluster.trainjob_condition("doomed", WAITING_CONDITION), 10, "status caught up")
    job_id = cluster.job_id("doomed")
    assert job_id in cluster.listed()
    uids = {p["metadata"]["uid"] for p in cluster.pods("doomed")}
    cluster.store.delete(catalog.TRAINJOBS, "default", "doomed")
    wait_until(lambda: job_id not in cluster.listed(), 15, "squeue no longer lists the job")
    state = cluster.slurm.run("squeue", "-h", "-t", "all", "-j", str(job_id), "-o", "%T").strip()
    assert state == "CANCELLED"
    alive = lambda: uids & {p["metadata"]["uid"] for p in cluster.store.list(catalog.PODS).items}  # noqa: E731
    wait_until(lambda: not alive(), 15, "the job's pods gone")


def test_the_cluster_process_takes_its_nodes_from_slurm(real_slurm: LocalSlurm, tmp_path: Path) -> None:
    config = cluster_config(None, slurm_cli(Path(real_slurm.slurm_conf)))
    specs = node_specs(config)
    assert [s.name for s in specs] == ["n1", "n2", "n3", "n4"]
    assert specs[0].labels[SLURM_NODE_NAME_LABEL] == "n1"
    garbage = tmp_path / "garbage.conf"
    garbage.write_text("this is not a slurm.conf\n")
    for conf in (tmp_path / "missing.conf", garbage):
        with pytest.raises(SystemExit) as exit_:
            process_main(["--state-dir", str(tmp_path), "--slurm-conf", str(conf)])
        assert exit_.value.code == 2


def test_pods_of_other_schedulers_stay_off_the_nodes_slurm_manages(cluster: Cluster) -> None:
    # slurm-bridge's managed-node taint (issue #16): a default-scheduler pod never lands on a Slurm node,
    # while the bridge's own pods (tolerating it) still run.
    plain = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"containers": [{"name": "web", "image": "python:3.12", "command": ["sleep", "1"]}]},
    }
    cluster.store.create(catalog.PODS, plain)

    def taint_message() -> str | None:
        status = cluster.store.get(catalog.PODS, "default", "web").get("status") or {}
        found = [c for c in status.get("conditions") or () if c["type"] == "PodScheduled"]
        message = found[0].get("message", "") if found else ""
        return (
            message
            if "untolerated taint {slinky.slurm.net/managed-node: slurm-bridge-scheduler}" in message
            else None
        )

    assert "4 node(s) had untolerated taint" in str(wait_until(taint_message, 30, "the taint message"))
    cluster.submit("ranks", 2, RANKS)
    assert wait_until(lambda: cluster.finished("ranks"), 60, "ranks to finish") == "Complete"
    assert not cluster.store.get(catalog.PODS, "default", "web")["spec"].get("nodeName")
