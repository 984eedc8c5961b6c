"""The embedded KAI scheduler derives PodGroups with the runtime plugin's grouper rule (``kai_grouper``)."""

from __future__ import annotations

from typing import Any

from kaiworld import World, node

from gangplane.api.scheduling import kai
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.resources import ResourceIndex
from gangplane.schedulers.kai import model

LABELS = {
    "jobset.sigs.k8s.io/jobset-name": "train",
    "jobset.sigs.k8s.io/replicatedjob-name": "node",
    "jobset.sigs.k8s.io/job-index": "0",
}


def _jobset(labels: dict[str, str], annotations: dict[str, str]) -> dict[str, Any]:
    meta = {"name": "train", "namespace": "ns", "uid": "js", "labels": labels, "annotations": annotations}
    rjob = {"name": "node", "replicas": 1, "template": {"spec": {"parallelism": 2}}}
    return {"metadata": meta, "spec": {"replicatedJobs": [rjob]}}


def test_invalid_batch_min_member_fails_the_grouping_with_a_reason() -> None:
    w = World(nodes=[node("n0")])
    w.add_queue("q", 0)
    w.jobsets.append(_jobset({kai.QUEUE_LABEL: "q"}, {kai.BATCH_MIN_MEMBER_ANNOTATION: "all"}))
    for i in range(2):
        w.add_pod(f"train-node-0-{i}", 1, "2026-01-01T00:00:01Z", labels=LABELS)
    result = w.cycle()
    assert result.bindings == []
    [reason] = result.pending
    assert reason.reason == "PodGrouperFailed" and set(reason.pod_keys) == {
        "ns/train-node-0-0",
        "ns/train-node-0-1",
    }
    assert "batch-min-member must be a base-10 integer >= 1" in reason.message


def test_derived_group_takes_queue_priority_preemptibility_and_topology_like_the_runtime_plugin() -> None:
    labels = {kai.PROJECT_LABEL: "research", kai.PREEMPTIBILITY_LABEL: "preemptible"}
    notes = {kai.TOPOLOGY_ANNOTATION: "t", kai.TOPOLOGY_REQUIRED_PLACEMENT_ANNOTATION: "rack"}
    pod = PodInfo(
        "ns/p", "ns", "p", "u", ResourceIndex.covering().pod_vector({}), priority_class_name="build"
    )
    pg = model.jobset_pod_group(_jobset(labels, notes), pod, lambda name: False)
    assert pg is not None
    spec = pg["spec"]
    assert (spec["queue"], spec["priorityClassName"], spec["preemptibility"]) == (
        "research",
        "build",
        "preemptible",
    )
    assert spec["topologyConstraint"] == {"topology": "t", "requiredTopologyLevel": "rack"}
    job = model.job_of(pg, {}, derived=True)
    assert job.preemptible and job.priority == kai.PRIORITY_CLASSES["build"]


def test_unknown_priority_class_falls_back_to_train() -> None:
    pod = PodInfo("ns/p", "ns", "p", "u", ResourceIndex.covering().pod_vector({}), priority_class_name="nope")
    pg = model.default_pod_group(pod, lambda name: False)
    assert pg["spec"]["priorityClassName"] == kai.DEFAULT_PRIORITY_CLASS
