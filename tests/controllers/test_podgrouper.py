"""The embedded KAI pod-grouper: one PodGroup per KAI JobSet, owned by it, its pods stamped, and the TrainJob's
waiting reason reading the PodGroup status KAI writes."""

from __future__ import annotations

import random
from typing import Any

import pytest
from harness import Cluster, conditions

from builders import RuntimeBuilder, TrainJobBuilder
from gangplane.api import trainer as t
from gangplane.api.scheduling import kai
from gangplane.client.cache import LiveReads, StoreReader
from gangplane.client.controller import Manager
from gangplane.clock import WallClock
from gangplane.controllers.manager import build_controllers
from gangplane.controllers.pending import WAITING_CONDITION
from gangplane.controllers.podgrouper import (
    FIELD_MANAGER,
    PodGrouperReconciler,
    build_podgrouper_controller,
    desired_pod_group,
    leaf_of,
    pod_stamp,
)
from gangplane.runtime.core import new_objects
from gangplane.runtime.points import AppliedBy
from gangplane.store import catalog
from gangplane.store.memory import MemoryStore
from waiting import poll

QUEUE = {kai.QUEUE_LABEL: "team-a"}


def kai_runtime(name: str = "kai", scheduler: str = kai.SCHEDULER_NAME) -> dict[str, Any]:
    builder = RuntimeBuilder(name).ml_policy(numNodes=1, torch={})
    return builder.rjob("node", "node", ancestor="trainer", scheduler=scheduler).dict()


def kai_job(name: str = "train", nodes: int = 2, runtime: str = "kai", **labels: str) -> dict[str, Any]:
    job = TrainJobBuilder(name).runtime_ref(runtime).num_nodes(nodes)
    return job.set("metadata.labels", {**QUEUE, **labels}).dict()


def grouped_cluster() -> Cluster:
    cluster = Cluster()
    cluster.loops.append((PodGrouperReconciler(cluster.store, cluster.clock), catalog.JOBSETS))
    return cluster


def started(*jobs: dict[str, Any], runtime: dict[str, Any] | None = None) -> Cluster:
    cluster = grouped_cluster()
    cluster.create(catalog.CLUSTER_TRAINING_RUNTIMES, runtime or kai_runtime())
    for job in jobs:
        cluster.create(catalog.TRAINJOBS, job)
    cluster.settle()
    return cluster


def the_group(cluster: Cluster) -> dict[str, Any]:
    groups = cluster.items(catalog.KAI_PODGROUPS)
    assert len(groups) == 1, [g["metadata"]["name"] for g in groups]
    return groups[0]


# ---------------------------------------------------------------- the PodGroup


def test_a_kai_trainjobs_jobset_gets_exactly_one_pod_group_owned_by_it() -> None:
    cluster = started(kai_job("train", nodes=2, priorityClassName="build"))
    jobset = cluster.get(catalog.JOBSETS, "train")
    uid = jobset["metadata"]["uid"]
    group = the_group(cluster)
    assert group["metadata"]["name"] == f"pg-train-{uid}"
    assert group["metadata"]["ownerReferences"] == [
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "train", "uid": uid}
    ]
    assert group["spec"] == {
        "minSubGroup": 1,
        "queue": "team-a",
        "priorityClassName": "build",
        "subGroups": [
            {"name": "node", "minSubGroup": 1},
            {"name": "node-replica-0", "parent": "node", "minMember": 2},
        ],
    }
    assert group["metadata"]["labels"][kai.QUEUE_LABEL] == "team-a"
    applied = [(m["manager"], m["operation"]) for m in group["metadata"]["managedFields"]]
    assert applied == [(FIELD_MANAGER, "Apply")] and "status" not in group


def test_the_created_pod_group_is_the_one_the_runtime_plugin_renders() -> None:
    cluster = started(kai_job("train", nodes=3))
    reader = StoreReader(LiveReads(cluster.store))
    typed = t.TrainJob.model_validate(cluster.get(catalog.TRAINJOBS, "train"))
    runtime = t.ClusterTrainingRuntime.model_validate(kai_runtime())
    built = new_objects(cluster.trainjobs.framework, typed, runtime, reader)
    rendered = [d.object.to_dict() for d in built.objects if d.applied_by == AppliedBy.KAI_PODGROUPER]
    live = the_group(cluster)
    assert len(rendered) == 1
    assert rendered[0]["metadata"]["name"] == live["metadata"]["name"]
    assert rendered[0]["spec"] == live["spec"]
    assert rendered[0]["metadata"]["ownerReferences"] == live["metadata"]["ownerReferences"]


def test_default_priority_and_queue_follow_kais_fallbacks() -> None:
    job = TrainJobBuilder("plain").runtime_ref("kai").num_nodes(1).dict()
    group = the_group(started(job))
    assert group["spec"]["queue"] == kai.DEFAULT_QUEUE
    assert group["spec"]["priorityClassName"] == kai.DEFAULT_PRIORITY_CLASS
    assert group["spec"]["subGroups"][1]["minMember"] == 1


def test_reconciling_again_writes_nothing() -> None:
    cluster = started(kai_job())
    before = cluster.store.list(catalog.NAMESPACES).resource_version
    reconciler = PodGrouperReconciler(cluster.store, cluster.clock)
    reconciler.reconcile(("default", "train"))
    assert cluster.store.list(catalog.NAMESPACES).resource_version == before


def test_a_changed_pod_group_is_put_back() -> None:
    cluster = started(kai_job())
    group = the_group(cluster)
    cluster.store.update(catalog.KAI_PODGROUPS, {**group, "spec": {**group["spec"], "queue": "elsewhere"}})
    PodGrouperReconciler(cluster.store, cluster.clock).reconcile(("default", "train"))
    assert the_group(cluster)["spec"]["queue"] == "team-a"


def test_the_pods_name_their_group_and_leaf() -> None:
    cluster = started(kai_job("train", nodes=2))
    name = the_group(cluster)["metadata"]["name"]
    pods = cluster.items(catalog.PODS)
    assert len(pods) == 2
    for pod in pods:
        assert pod["metadata"]["annotations"][kai.POD_GROUP_ANNOTATION] == name
        assert pod["metadata"]["labels"][kai.SUBGROUP_LABEL] == "node-replica-0"


# ---------------------------------------------------------------- what is left alone


def test_a_jobset_of_another_scheduler_gets_no_pod_group() -> None:
    cluster = started(kai_job(), runtime=kai_runtime(scheduler="volcano"))
    assert cluster.items(catalog.JOBSETS) and cluster.items(catalog.PODS)
    assert cluster.items(catalog.KAI_PODGROUPS) == []
    assert all(kai.POD_GROUP_ANNOTATION not in (p["metadata"].get("annotations") or {})
               for p in cluster.items(catalog.PODS))  # fmt: skip


def test_skip_podgrouper_on_the_trainjob_leaves_the_workload_alone() -> None:
    job = kai_job()
    job["metadata"]["annotations"] = {kai.SKIP_PODGROUPER_KEY: "true"}
    cluster = started(job)
    assert cluster.items(catalog.PODS) and cluster.items(catalog.KAI_PODGROUPS) == []


def plain_jobset(**annotations: str) -> dict[str, Any]:
    pod = {"schedulerName": kai.SCHEDULER_NAME, "containers": [{"name": "c", "image": "busybox"}]}
    rjob = {"name": "w", "replicas": 2, "template": {"spec": {"parallelism": 3, "template": {"spec": pod}}}}
    meta: dict[str, Any] = {"name": "plain", "namespace": "default", "uid": "u-1", "labels": QUEUE}
    meta |= {"annotations": annotations} if annotations else {}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta,
            "spec": {"replicatedJobs": [rjob]}}  # fmt: skip


def test_a_plain_jobset_is_grouped_from_its_own_metadata() -> None:
    group = desired_pod_group(plain_jobset(), None, StoreReader(LiveReads(MemoryStore())))
    assert group is not None
    assert group["metadata"]["name"] == "pg-plain-u-1"
    assert group["spec"]["queue"] == "team-a" and group["spec"]["minSubGroup"] == 1
    assert group["spec"]["subGroups"] == [
        {"name": "w", "minSubGroup": 2},
        {"name": "w-replica-0", "parent": "w", "minMember": 3},
        {"name": "w-replica-1", "parent": "w", "minMember": 3},
    ]


def test_an_invalid_batch_min_member_gets_no_pod_group() -> None:
    reader = StoreReader(LiveReads(MemoryStore()))
    assert desired_pod_group(plain_jobset(**{kai.BATCH_MIN_MEMBER_ANNOTATION: "0"}), None, reader) is None
    store = MemoryStore()
    store.create(catalog.JOBSETS, plain_jobset(**{kai.BATCH_MIN_MEMBER_ANNOTATION: "x"}))
    PodGrouperReconciler(store, WallClock()).reconcile(("default", "plain"))
    assert store.list(catalog.KAI_PODGROUPS).items == []


def pod(scheduler: str = kai.SCHEDULER_NAME, **meta: Any) -> dict[str, Any]:
    labels = {"jobset.sigs.k8s.io/replicatedjob-name": "node", "jobset.sigs.k8s.io/job-index": "1"}
    return {"metadata": {"name": "p", "labels": labels, **meta}, "spec": {"schedulerName": scheduler}}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (pod(), {"metadata": {"annotations": {"pod-group-name": "pg"},
                              "labels": {kai.SUBGROUP_LABEL: "node-replica-1"}}}),
        (pod(annotations={"pod-group-name": "pg"}, labels={kai.SUBGROUP_LABEL: "node-replica-1"}), None),
        (pod(scheduler="default-scheduler"), None),
        (pod(annotations={kai.SKIP_PODGROUPER_KEY: "true"}), None),
        (pod(deletionTimestamp="2026-01-01T00:00:00Z"), None),
        ({"metadata": {"name": "p"}, "spec": {"schedulerName": kai.SCHEDULER_NAME}},
         {"metadata": {"annotations": {"pod-group-name": "pg"}}}),
    ],
    ids=["stamped", "already", "other-scheduler", "skipped", "deleting", "no-jobset-labels"],
)  # fmt: skip
def test_pod_stamp(obj: dict[str, Any], expected: dict[str, Any] | None) -> None:
    assert pod_stamp(obj, "pg") == expected


def test_leaf_of_needs_both_jobset_labels() -> None:
    assert leaf_of(pod()) == "node-replica-1"
    assert leaf_of({"metadata": {"labels": {"jobset.sigs.k8s.io/replicatedjob-name": "node"}}}) is None


# ---------------------------------------------------------------- lifecycle and waiting reason


def test_deleting_the_jobset_garbage_collects_its_pod_group() -> None:
    cluster = started(kai_job())
    old = the_group(cluster)["metadata"]["name"]
    jobset = cluster.get(catalog.JOBSETS, "train")
    cluster.store.delete(catalog.JOBSETS, "default", "train")
    assert all(g["metadata"]["name"] != old for g in cluster.items(catalog.KAI_PODGROUPS))
    cluster.settle()  # the TrainJob controller recreates the JobSet; the pod-grouper groups the new one
    renewed = cluster.get(catalog.JOBSETS, "train")
    assert renewed["metadata"]["uid"] != jobset["metadata"]["uid"]
    assert the_group(cluster)["metadata"]["name"] == f"pg-train-{renewed['metadata']['uid']}"


def test_deleting_the_trainjob_leaves_no_pod_group() -> None:
    cluster = started(kai_job())
    cluster.store.delete(catalog.TRAINJOBS, "default", "train")
    cluster.settle()
    assert cluster.items(catalog.JOBSETS) == [] and cluster.items(catalog.KAI_PODGROUPS) == []


def unschedulable(group: dict[str, Any]) -> dict[str, Any]:
    """The status KAI's scheduler writes for a gang it cannot place."""
    reason = {"reason": "OverLimit", "message": "queue team-a would exceed its GPU limit"}
    condition = {"type": kai.SCHEDULING_CONDITION_UNSCHEDULABLE_ON_NODE_POOL, "status": "True",
                 "nodePool": "default", "reasons": [reason]}  # fmt: skip
    return {**group, "status": {"schedulingConditions": [condition]}}


def test_the_trainjob_waits_gang_unschedulable_on_kais_scheduling_condition() -> None:
    cluster = started(kai_job())
    group = the_group(cluster)
    cluster.store.update_status(catalog.KAI_PODGROUPS, unschedulable(group))
    cluster.trainjobs.reconcile(("default", "train"))
    job = cluster.get(catalog.TRAINJOBS, "train")
    assert conditions(job)[WAITING_CONDITION] == ("True", "GangUnschedulable")
    waiting = next(c for c in job["status"]["conditions"] if c["type"] == WAITING_CONDITION)
    assert waiting["message"] == (
        f"kai PodGroup {group['metadata']['name']}: node pool default: "
        "OverLimit: queue team-a would exceed its GPU limit"
    )


def test_without_the_pod_grouper_kais_condition_is_not_seen() -> None:
    cluster = Cluster()  # no pod-grouper: pods name no PodGroup, so none is read
    cluster.create(catalog.CLUSTER_TRAINING_RUNTIMES, kai_runtime())
    cluster.create(catalog.TRAINJOBS, kai_job())
    cluster.settle()
    assert cluster.items(catalog.KAI_PODGROUPS) == []
    assert conditions(cluster.get(catalog.TRAINJOBS, "train"))[WAITING_CONDITION][1] != "GangUnschedulable"


# ---------------------------------------------------------------- wiring


def test_the_controller_groups_jobsets_and_their_pods_on_a_manager() -> None:
    store = MemoryStore(clock=WallClock(), rng=random.Random(3))
    manager = Manager(store, WallClock())
    build_controllers(manager)
    assert build_podgrouper_controller(manager).name == "kai-podgrouper"
    manager.start()
    try:
        store.create(catalog.CLUSTER_TRAINING_RUNTIMES, kai_runtime())
        store.create(catalog.TRAINJOBS, kai_job("train", nodes=2))

        def stamped() -> bool:
            pods = store.list(catalog.PODS).items
            notes = [(p["metadata"].get("annotations") or {}).get(kai.POD_GROUP_ANNOTATION) for p in pods]
            return len(pods) == 2 and all(n and n.startswith("pg-train-") for n in notes)

        assert poll(stamped, 10.0)
        assert len(store.list(catalog.KAI_PODGROUPS).items) == 1
    finally:
        manager.stop()
