"""PodGroup formulas (upstream coscheduling/volcano Build): minMember = Σ Count, minResources = Σ requests × Count."""

from __future__ import annotations

import pytest
from factories import build, container, objects_by_kind, rjob, runtime, trainjob

COSCHED = {"coscheduling": {"scheduleTimeoutSeconds": 120}}
VOLCANO = {"volcano": {}}


def initializer(name: str) -> dict:
    return rjob(name, name, container(name, {"cpu": "1", "memory": "2Gi"}))


def test_worked_example_from_reference_counts_initializers_running_alongside(torch_node: dict) -> None:
    rt = runtime(
        initializer("dataset-initializer"),
        initializer("model-initializer"),
        torch_node,
        ml_policy={"numNodes": 1, "torch": {}},
        pod_group_policy=COSCHED,
    )
    pg = objects_by_kind(build(trainjob(trainer={"numNodes": 4}), rt))["PodGroup"]
    assert pg["spec"] == {
        "minMember": 6,
        "minResources": {"cpu": "34", "memory": "132Gi", "nvidia.com/gpu": "4"},
        "scheduleTimeoutSeconds": 120,
    }


@pytest.mark.parametrize(
    ("policy_nodes", "trainer_nodes", "expected"),
    [(2, None, 2), (2, 5, 5), (None, None, 1), (3, 0, 0)],
    ids=["mlPolicy-numNodes", "trainer-overrides", "default-one", "zero-accepted"],
)
def test_trainer_count(
    torch_node: dict, policy_nodes: int | None, trainer_nodes: int | None, expected: int
) -> None:
    policy = {"torch": {}} | ({"numNodes": policy_nodes} if policy_nodes is not None else {})
    rt = runtime(torch_node, ml_policy=policy, pod_group_policy=COSCHED)
    trainer = {"numNodes": trainer_nodes} if trainer_nodes is not None else {}
    objs = objects_by_kind(build(trainjob(trainer=trainer), rt))
    assert objs["PodGroup"]["spec"]["minMember"] == expected
    node = objs["JobSet"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert (node["parallelism"], node["completions"]) == (expected, expected)


def test_limits_only_gpus_are_not_counted() -> None:
    node = rjob("node", "trainer", container("node", {"cpu": "2"}, {"nvidia.com/gpu": 8}))
    rt = runtime(node, ml_policy={"numNodes": 2, "torch": {}}, pod_group_policy=COSCHED)
    pg = objects_by_kind(build(trainjob(), rt))["PodGroup"]
    assert pg["spec"]["minResources"] == {"cpu": "4"}


def test_resources_per_node_merge_per_resource_key(torch_node: dict) -> None:
    rt = runtime(torch_node, ml_policy={"numNodes": 2, "torch": {}}, pod_group_policy=COSCHED)
    job = trainjob(trainer={"resourcesPerNode": {"requests": {"nvidia.com/gpu": 2, "cpu": "500m"}}})
    pg = objects_by_kind(build(job, rt))["PodGroup"]
    assert pg["spec"]["minResources"] == {"cpu": "1", "memory": "64Gi", "nvidia.com/gpu": "4"}


def test_sidecars_init_containers_and_overhead_use_effective_request() -> None:
    pod = {
        "initContainers": [
            {"name": "setup", "resources": {"requests": {"cpu": "4"}}},
            {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "250m"}}},
        ],
        "overhead": {"cpu": "250m"},
    }
    node = rjob("node", "trainer", container("node", {"cpu": "1"}), pod=pod)
    rt = runtime(node, ml_policy={"numNodes": 2, "torch": {}}, pod_group_policy=COSCHED)
    pg = objects_by_kind(build(trainjob(), rt))["PodGroup"]
    # max(1 + 0.25 sidecar, 4 init) + 0.25 overhead = 4.25 per pod, two pods
    assert pg["spec"]["minResources"] == {"cpu": "8500m"}


def test_dependson_complete_initializers_run_outside_the_gang(torch_node: dict) -> None:
    after = [{"name": "dataset-initializer", "status": "Complete"}]
    node = {**torch_node, "dependsOn": after}
    rt = runtime(initializer("dataset-initializer"), node, ml_policy={"torch": {}}, pod_group_policy=COSCHED)
    built = build(trainjob(trainer={"numNodes": 2}), rt)
    objs = objects_by_kind(built)
    assert objs["PodGroup"]["spec"]["minMember"] == 2
    assert objs["PodGroup"]["spec"]["minResources"] == {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "2"}
    init_pod, node_pod = (r["template"]["spec"]["template"] for r in objs["JobSet"]["spec"]["replicatedJobs"])
    assert "metadata" not in init_pod
    assert node_pod["metadata"]["labels"] == {"scheduling.x-k8s.io/pod-group": "job"}
    assert any("dataset-initializer" in w and "outside the gang" in w for w in built.warnings)


def test_dependson_ready_keeps_pod_sets_in_the_gang(torch_node: dict) -> None:
    node = {**torch_node, "dependsOn": [{"name": "dataset-initializer", "status": "Ready"}]}
    rt = runtime(initializer("dataset-initializer"), node, ml_policy={"torch": {}}, pod_group_policy=COSCHED)
    built = build(trainjob(), rt)
    assert objects_by_kind(built)["PodGroup"]["spec"]["minMember"] == 2
    assert built.warnings == []


def test_transitive_ordering_through_a_ready_edge(torch_node: dict) -> None:
    warm = rjob(
        "warmup", None, container("warmup"), dependsOn=[{"name": "dataset-initializer", "status": "Complete"}]
    )
    node = {**torch_node, "dependsOn": [{"name": "warmup", "status": "Ready"}]}
    rt = runtime(
        initializer("dataset-initializer"), warm, node, ml_policy={"torch": {}}, pod_group_policy=COSCHED
    )
    assert objects_by_kind(build(trainjob(), rt))["PodGroup"]["spec"]["minMember"] == 2


def test_volcano_priority_class_is_the_last_one_set(torch_node: dict) -> None:
    first = rjob("aux", None, container("aux"), pod={"priorityClassName": "low"})
    node = {**torch_node}
    node["template"]["spec"]["template"]["spec"]["priorityClassName"] = "high"
    rt = runtime(first, node, ml_policy={"torch": {}}, pod_group_policy=VOLCANO)
    pg = objects_by_kind(build(trainjob(), rt))["PodGroup"]
    assert pg["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert pg["spec"]["priorityClassName"] == "high"
    assert "networkTopology" not in pg["spec"]


def test_volcano_queue_from_runtime_annotation_then_patch(torch_node: dict) -> None:
    queue = "scheduling.volcano.sh/queue-name"
    rt = runtime(torch_node, ml_policy={"torch": {}}, pod_group_policy=VOLCANO, annotations={queue: "team-a"})
    assert objects_by_kind(build(trainjob(), rt))["PodGroup"]["spec"]["queue"] == "team-a"
    patch = {
        "manager": "example.com/tool",
        "trainingRuntimeSpec": {"template": {"metadata": {"annotations": {queue: "team-b"}}}},
    }
    objs = objects_by_kind(build(trainjob(runtimePatches=[patch]), rt))
    assert objs["PodGroup"]["spec"]["queue"] == "team-b"
    assert objs["JobSet"]["metadata"]["annotations"] == {queue: "team-b"}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, {"mode": "hard", "highestTierAllowed": 1}),
        ({"mode": "soft", "highestTierAllowed": 3}, {"mode": "soft", "highestTierAllowed": 3}),
    ],
    ids=["defaults", "explicit"],
)
def test_volcano_network_topology_defaults(torch_node: dict, given: dict, expected: dict) -> None:
    rt = runtime(
        torch_node, ml_policy={"torch": {}}, pod_group_policy={"volcano": {"networkTopology": given}}
    )
    pg = objects_by_kind(build(trainjob(), rt))["PodGroup"]
    assert pg["spec"]["networkTopology"] == expected


def test_volcano_pods_carry_the_group_annotation(torch_node: dict) -> None:
    rt = runtime(torch_node, ml_policy={"torch": {}}, pod_group_policy=VOLCANO)
    jobset = objects_by_kind(build(trainjob(), rt))["JobSet"]
    pod_meta = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]
    assert pod_meta == {"annotations": {"scheduling.k8s.io/group-name": "job"}}


@pytest.mark.parametrize("policy", [COSCHED, VOLCANO], ids=["coscheduling", "volcano"])
def test_running_pod_group_is_never_updated_but_suspended_one_is(torch_node: dict, policy: dict) -> None:
    rt = runtime(torch_node, ml_policy={"torch": {}}, pod_group_policy=policy)
    existing = objects_by_kind(build(trainjob(), rt))["PodGroup"]
    assert "PodGroup" not in objects_by_kind(build(trainjob(trainer={"numNodes": 3}), rt, existing))
    suspended = objects_by_kind(build(trainjob(suspend=True, trainer={"numNodes": 3}), rt, existing))
    assert suspended["PodGroup"]["spec"]["minMember"] == 3


def test_pod_group_is_owned_by_the_trainjob_and_has_no_labels(torch_node: dict) -> None:
    rt = runtime(torch_node, ml_policy={"torch": {}}, pod_group_policy=COSCHED)
    meta = objects_by_kind(build(trainjob(), rt))["PodGroup"]["metadata"]
    assert meta == {
        "name": "job",
        "namespace": "default",
        "ownerReferences": [
            {
                "apiVersion": "trainer.kubeflow.org/v1alpha1",
                "kind": "TrainJob",
                "name": "job",
                "uid": "uid-1",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }


def test_no_pod_group_policy_builds_only_the_jobset(torch_node: dict) -> None:
    rt = runtime(torch_node, ml_policy={"torch": {}})
    assert [d.object.kind for d in build(trainjob(), rt).objects] == ["JobSet"]
