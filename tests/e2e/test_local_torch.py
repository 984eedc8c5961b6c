"""The main job, for real: a TrainJob becomes a gang of local processes running torchrun, with correct ranks,
logs and a Complete TrainJob; failures, deletion and suspend/resume behave as on a cluster."""

from __future__ import annotations

import copy
import sys

import psutil
import pytest
import yaml
from e2e_harness import REPO, Cluster, two_nodes, wait_for

from gangplane.store import catalog

pytestmark = pytest.mark.slow

RUNTIME = REPO / "examples" / "demo" / "runtime.yaml"


def trainjob(name: str, command: list[str], *, cpu: str = "1", suspend: bool | None = None) -> dict:
    job = yaml.safe_load((REPO / "examples" / "demo" / "trainjob.yaml").read_text())
    job = copy.deepcopy(job)
    job["metadata"]["name"] = name
    job["spec"]["trainer"]["command"] = command
    job["spec"]["trainer"]["resourcesPerNode"]["requests"]["cpu"] = cpu
    if suspend is not None:
        job["spec"]["suspend"] = suspend
    return job


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


@pytest.fixture
def cluster(cluster_factory) -> Cluster:  # type: ignore[no-untyped-def]
    c = cluster_factory(two_nodes())
    c.apply_file(RUNTIME)
    return c


def test_torchrun_gang_runs_to_complete_with_correct_ranks(cluster: Cluster) -> None:
    pytest.importorskip("torch")
    cluster.create(trainjob("ddp", ["torchrun", "-m", "gangplane.demo.tiny_ddp", "--steps", "10"]))
    try:
        outcome = wait_for(lambda: cluster.finished("ddp"), timeout=240, what="ddp to finish")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{cluster.diagnose('ddp')}") from None
    assert outcome == "Complete", cluster.diagnose("ddp")
    pods = sorted(cluster.pods("ddp"), key=lambda p: p["metadata"]["name"])
    assert {p["spec"]["nodeName"] for p in pods} == {"node-0", "node-1"}
    bound_at = {
        next(c["lastTransitionTime"] for c in p["status"]["conditions"] if c["type"] == "PodScheduled")
        for p in pods
    }
    assert len(bound_at) == 1  # the whole gang was bound in one scheduling pass
    logs = "".join(cluster.log(p) for p in pods)
    assert "rank 0 of world size 2 on node 0" in logs
    assert "rank 1 of world size 2 on node 1" in logs
    assert logs.count("weights identical across 2 ranks: True") == 2


def strict_runtime() -> dict:
    """The demo runtime with no retries: a failed pod fails its Job, and so the JobSet and the TrainJob."""
    runtime = yaml.safe_load(RUNTIME.read_text())
    runtime["metadata"]["name"] = "no-retries"
    job = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    job["backoffLimit"] = 0
    job["template"]["spec"]["restartPolicy"] = "Never"
    return runtime


def test_a_failing_node_fails_the_trainjob(cluster: Cluster) -> None:
    cluster.create(strict_runtime())
    code = "import os, sys; sys.exit(3 if os.environ['JOB_COMPLETION_INDEX'] == '1' else 0)"
    job = trainjob("fails", python(code))
    job["spec"]["runtimeRef"]["name"] = "no-retries"
    cluster.create(job)
    assert wait_for(lambda: cluster.finished("fails"), what="fails to finish") == "Failed"
    failed = cluster.condition("fails", "Failed")
    assert failed is not None and failed["message"]


def _marked(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if any(marker in part for part in proc.info["cmdline"] or ()):
            found.append(proc)
    return found


def test_deleting_a_running_trainjob_leaves_no_process(cluster: Cluster) -> None:
    marker = "gangplane-e2e-delete-marker"
    code = f"import subprocess, time; subprocess.Popen(['sleep', '300', '{marker}']); time.sleep(300)"
    cluster.create(trainjob("sleeper", python(code)))
    wait_for(lambda: len(_marked(marker)) == 2, what="both nodes' children to start")
    cluster.store.delete(catalog.TRAINJOBS, "default", "sleeper")
    wait_for(lambda: not cluster.pods("sleeper"), timeout=60, what="pods to go")
    wait_for(lambda: not _marked(marker), timeout=10, what="processes to go")


def test_suspended_trainjob_starts_nothing_and_resumes_as_a_whole(cluster: Cluster) -> None:
    cluster.create(trainjob("later", python("print('ran')"), suspend=True))
    wait_for(lambda: cluster.condition("later", "Suspended"), what="Suspended condition")
    assert cluster.pods("later") == []
    job = cluster.trainjob("later")
    job["spec"]["suspend"] = False
    cluster.store.update(catalog.TRAINJOBS, job)
    assert wait_for(lambda: cluster.finished("later"), what="later to finish") == "Complete"
    assert len(cluster.pods("later")) == 2


def test_a_job_that_needs_the_whole_cluster_waits_as_a_gang(cluster: Cluster) -> None:
    code = "import time; time.sleep(3)"
    cluster.create(trainjob("first", python(code), cpu="2"))
    wait_for(lambda: all(p["spec"].get("nodeName") for p in cluster.pods("first")) and cluster.pods("first"))
    cluster.create(trainjob("whole", python("print('whole')"), cpu="4"))
    waiting = wait_for(lambda: len(cluster.pods("whole")) == 2 and cluster.pods("whole"), what="whole's pods")
    assert not any(p["spec"].get("nodeName") for p in waiting)  # no member starts while the gang can't
    assert wait_for(lambda: cluster.finished("first"), what="first") == "Complete"
    assert wait_for(lambda: cluster.finished("whole"), what="whole") == "Complete"
