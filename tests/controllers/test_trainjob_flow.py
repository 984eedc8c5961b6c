"""End to end through the reconcilers on one MemoryStore: TrainJob -> JobSet -> Jobs -> Pods and back."""

from __future__ import annotations

import pytest
from harness import Cluster, conditions, torch_runtime

from builders import RuntimeBuilder, TrainJobBuilder
from gangplane.store import catalog


def _start(cluster: Cluster, job: TrainJobBuilder, **runtime_job: object) -> None:
    cluster.create(catalog.CLUSTER_TRAINING_RUNTIMES, torch_runtime(**runtime_job))
    cluster.create(catalog.TRAINJOBS, job.dict())
    cluster.settle()


def test_trainjob_becomes_jobset_jobs_and_ranked_pods() -> None:
    cluster = Cluster()
    _start(cluster, TrainJobBuilder("mnist").num_nodes(2))
    jobset = cluster.get(catalog.JOBSETS, "mnist")
    assert jobset["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
    [job] = cluster.items(catalog.JOBS)
    assert job["metadata"]["name"] == "mnist-node-0"
    assert job["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "node"
    assert job["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "0"
    assert job["metadata"]["ownerReferences"][0] == {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "name": "mnist",
        "uid": jobset["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    pods = sorted(cluster.items(catalog.PODS), key=lambda p: p["metadata"]["name"])
    assert [p["spec"]["hostname"] for p in pods] == ["mnist-node-0-0", "mnist-node-0-1"]
    assert all(p["metadata"]["name"].startswith(p["spec"]["hostname"] + "-") for p in pods)
    assert all(p["spec"]["subdomain"] == "mnist" for p in pods)
    assert [p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in pods] == [
        "0",
        "1",
    ]
    env = {e["name"]: e for e in pods[0]["spec"]["containers"][0]["env"]}
    assert env["PET_NNODES"]["value"] == "2"
    assert env["PET_MASTER_ADDR"]["value"] == "mnist-node-0-0.mnist"
    assert "job-completion-index" in env["PET_NODE_RANK"]["valueFrom"]["fieldRef"]["fieldPath"]
    assert cluster.get(catalog.SERVICES, "mnist")["spec"]["clusterIP"] == "None"
    assert cluster.get(catalog.CONFIGMAPS, "mnist-runtime-snapshot")["data"]["runtime"]
    trainjob = cluster.get(catalog.TRAINJOBS, "mnist")
    assert trainjob["status"]["jobsStatus"] == [
        {"name": "node", "ready": 0, "succeeded": 0, "failed": 0, "active": 1, "suspended": 0}
    ]
    waiting = trainjob["status"]["conditions"]
    assert [(c["type"], c["status"], c["reason"]) for c in waiting] == [
        ("gangplane.dev/Waiting", "True", "AwaitingScheduler")
    ]


@pytest.mark.parametrize("admitted", [False, True], ids=["bare-store", "with-admission"])
def test_pods_succeeding_complete_the_trainjob(admitted: bool) -> None:
    cluster = Cluster(admitted=admitted)
    _start(cluster, TrainJobBuilder("mnist").num_nodes(2))
    cluster.finish_pods("Succeeded")
    cluster.settle()
    job = cluster.get(catalog.JOBS, "mnist-node-0")
    assert conditions(job)["Complete"] == ("True", "CompletionsReached")
    assert job["status"]["completedIndexes"] == "0,1"  # a pair, as upstream writes it
    assert conditions(cluster.get(catalog.JOBSETS, "mnist"))["Completed"] == ("True", "AllJobsCompleted")
    trainjob = cluster.get(catalog.TRAINJOBS, "mnist")
    assert conditions(trainjob) == {"Complete": ("True", "AllJobsCompleted")}
    assert trainjob["status"]["jobsStatus"][0]["succeeded"] == 1


def test_failed_pod_without_restarts_fails_the_trainjob() -> None:
    cluster = Cluster()
    _start(cluster, TrainJobBuilder("mnist").num_nodes(2), backoffLimit=0)
    first = sorted(cluster.items(catalog.PODS), key=lambda p: p["metadata"]["name"])[0]
    cluster.set_pod_phase(first, "Failed", exit_code=1)
    cluster.settle()
    assert conditions(cluster.get(catalog.JOBS, "mnist-node-0"))["Failed"] == ("True", "BackoffLimitExceeded")
    trainjob = cluster.get(catalog.TRAINJOBS, "mnist")
    assert conditions(trainjob)["Failed"] == ("True", "FailedJobs")
    assert "first failed job: mnist-node-0" in trainjob["status"]["conditions"][0]["message"]
    active = [p for p in cluster.items(catalog.PODS) if p.get("status", {}).get("phase") != "Failed"]
    assert active == []  # the failed Job deleted its other pod


def test_suspended_trainjob_creates_no_pods_and_resume_creates_all() -> None:
    cluster = Cluster()
    _start(cluster, TrainJobBuilder("mnist").num_nodes(3).suspend())
    assert cluster.get(catalog.JOBSETS, "mnist")["spec"]["suspend"] is True
    assert cluster.get(catalog.JOBS, "mnist-node-0")["spec"]["suspend"] is True
    assert cluster.items(catalog.PODS) == []
    assert conditions(cluster.get(catalog.TRAINJOBS, "mnist"))["Suspended"] == ("True", "Suspended")
    trainjob = cluster.get(catalog.TRAINJOBS, "mnist")
    cluster.store.update(catalog.TRAINJOBS, {**trainjob, "spec": {**trainjob["spec"], "suspend": False}})
    cluster.settle()
    assert len(cluster.items(catalog.PODS)) == 3
    assert conditions(cluster.get(catalog.TRAINJOBS, "mnist"))["Suspended"] == ("False", "Resumed")
    assert conditions(cluster.get(catalog.JOBSETS, "mnist"))["Suspended"] == ("False", "ResumeJobs")
    assert conditions(cluster.get(catalog.JOBS, "mnist-node-0"))["Suspended"] == ("False", "JobResumed")


def test_deleting_the_trainjob_collects_everything() -> None:
    cluster = Cluster()
    _start(cluster, TrainJobBuilder("mnist").num_nodes(2))
    cluster.store.delete(catalog.TRAINJOBS, "default", "mnist")
    cluster.settle()  # the pods' job-tracking finalizers go when the Job controller sees its Job gone
    for rt in (catalog.JOBSETS, catalog.JOBS, catalog.PODS, catalog.SERVICES, catalog.CONFIGMAPS):
        assert cluster.items(rt) == [], rt.kind


def test_deadline_fails_the_trainjob_and_deletes_the_jobset() -> None:
    cluster = Cluster()
    _start(cluster, TrainJobBuilder("mnist").num_nodes(1).deadline(60))
    result = cluster.trainjobs.reconcile(("default", "mnist"))
    assert result.requeue_after == 60
    cluster.clock.advance(61)
    cluster.settle()
    assert conditions(cluster.get(catalog.TRAINJOBS, "mnist"))["Failed"] == ("True", "DeadlineExceeded")
    assert cluster.items(catalog.JOBSETS) == []
    assert cluster.items(catalog.PODS) == []


def test_missing_runtime_fails_with_a_clear_message() -> None:
    cluster = Cluster()
    cluster.create(catalog.TRAINJOBS, TrainJobBuilder("mnist").runtime_ref("gone").dict())
    cluster.settle()
    trainjob = cluster.get(catalog.TRAINJOBS, "mnist")
    assert conditions(trainjob)["Failed"] == ("True", "TrainingRuntimeNotFound")
    assert '"gone"' in trainjob["status"]["conditions"][0]["message"]


def test_runtime_edits_do_not_reach_an_existing_trainjob() -> None:
    cluster = Cluster()
    _start(cluster, TrainJobBuilder("mnist").num_nodes(1).suspend())
    runtime = cluster.get(catalog.CLUSTER_TRAINING_RUNTIMES, "torch-distributed", namespace="")
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    node["template"]["spec"]["template"]["spec"]["containers"][0]["image"] = "changed"
    cluster.store.update(catalog.CLUSTER_TRAINING_RUNTIMES, runtime)
    cluster.settle()
    jobset = cluster.get(catalog.JOBSETS, "mnist")
    container = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "busybox"


def test_unmanaged_trainjob_is_left_alone() -> None:
    cluster = Cluster()
    _start(cluster, TrainJobBuilder("mnist").managed_by("kueue.x-k8s.io/multikueue"))
    assert cluster.items(catalog.JOBSETS) == []
    assert "status" not in cluster.get(catalog.TRAINJOBS, "mnist")


def test_depends_on_creates_the_trainer_only_after_the_initializer_completes() -> None:
    cluster = Cluster()
    runtime = (
        RuntimeBuilder("torch-distributed")
        .ml_policy(numNodes=1, torch={})
        .rjob("dataset-initializer", "dataset-initializer", ancestor="dataset-initializer")
        .trainer_job(dependsOn=[{"name": "dataset-initializer", "status": "Complete"}])
    )
    cluster.create(catalog.CLUSTER_TRAINING_RUNTIMES, runtime.dict())
    cluster.create(catalog.TRAINJOBS, TrainJobBuilder("llm").num_nodes(2).dict())
    cluster.settle()
    assert [j["metadata"]["name"] for j in cluster.items(catalog.JOBS)] == ["llm-dataset-initializer-0"]
    assert len(cluster.items(catalog.PODS)) == 1
    cluster.finish_pods("Succeeded")
    cluster.settle()
    assert sorted(j["metadata"]["name"] for j in cluster.items(catalog.JOBS)) == [
        "llm-dataset-initializer-0",
        "llm-node-0",
    ]
    assert len(cluster.items(catalog.PODS, "jobset.sigs.k8s.io/replicatedjob-name=node")) == 2
    assert "Complete" not in conditions(cluster.get(catalog.TRAINJOBS, "llm"))
    cluster.finish_pods("Succeeded")
    cluster.settle()
    assert conditions(cluster.get(catalog.TRAINJOBS, "llm"))["Complete"] == ("True", "AllJobsCompleted")


def test_failure_policy_restarts_the_jobset_then_gives_up() -> None:
    cluster = Cluster()
    runtime = (
        RuntimeBuilder("torch-distributed")
        .ml_policy(numNodes=1, torch={})
        .trainer_job(job={"backoffLimit": 0})
        .jobset(failurePolicy={"maxRestarts": 1})
    )
    cluster.create(catalog.CLUSTER_TRAINING_RUNTIMES, runtime.dict())
    cluster.create(catalog.TRAINJOBS, TrainJobBuilder("mnist").num_nodes(2).dict())
    cluster.settle()
    first_uid = cluster.get(catalog.JOBS, "mnist-node-0")["metadata"]["uid"]
    cluster.finish_pods("Failed")
    cluster.settle()
    job = cluster.get(catalog.JOBS, "mnist-node-0")
    assert job["metadata"]["uid"] != first_uid
    assert job["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "1"
    assert cluster.get(catalog.JOBSETS, "mnist")["status"]["restarts"] == 1
    assert len(cluster.items(catalog.PODS)) == 2
    assert "Failed" not in conditions(cluster.get(catalog.TRAINJOBS, "mnist"))
    cluster.finish_pods("Failed")
    cluster.settle()
    assert conditions(cluster.get(catalog.TRAINJOBS, "mnist"))["Failed"] == ("True", "ReachedMaxRestarts")
