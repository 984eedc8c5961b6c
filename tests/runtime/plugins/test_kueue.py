"""Kueue plugin: the webhook defaults, the Workload Kueue derives, and the admission patch."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest
import yaml

from crdschema import SHARED_DIR, validate_against_crd
from gangplane.api.core import Toleration
from gangplane.api.trainer import ClusterTrainingRuntime, TrainJob
from gangplane.clock import ManualClock
from gangplane.errors import CauseType
from gangplane.runtime.core import Built, default_and_validate, new_objects
from gangplane.runtime.framework import Framework
from gangplane.runtime.plugins import default_registry
from gangplane.runtime.plugins.coscheduling import CoschedulingPlugin
from gangplane.runtime.plugins.kueue import KueuePlugin, PodSetAdmission, admission_patch, workload_name
from gangplane.runtime.points import AppliedBy, Handle
from gangplane.runtime.reader import StaticReader
from gangplane.runtime.registry import Registry

if SHARED_DIR is None:
    pytest.skip("shared/ with the upstream runtimes is not available", allow_module_level=True)
TORCH = yaml.safe_load((SHARED_DIR / "upstream" / "runtimes" / "torch_distributed.yaml").read_text())
QUEUE = "kueue.x-k8s.io/queue-name"
MANAGER = "kueue.x-k8s.io/manager"
WPC = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": "high"}}


def registry() -> Registry:
    base = default_registry()
    extra = [(KueuePlugin.name, KueuePlugin)] if KueuePlugin.name not in base.names() else []
    return base.merge(Registry(extra))


def framework() -> Framework:
    return Framework(registry(), Handle(ManualClock()))


def trainjob(labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "job", "namespace": "ml", "uid": "uid-1"}
    if labels:
        meta["labels"] = labels
    spec = {"runtimeRef": {"name": "torch-distributed"}, **spec}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": meta, "spec": spec}


def torch(**edits: Any) -> dict[str, Any]:
    rt = copy.deepcopy(TORCH)
    rt["spec"].update(edits)
    return rt


def initializer(name: str) -> dict[str, Any]:
    pod = {"containers": [{"name": name, "image": "init"}]}
    labels = {"trainer.kubeflow.org/trainjob-ancestor-step": name}
    return {"name": name, "template": {"metadata": {"labels": labels}, "spec": {"template": {"spec": pod}}}}


def build(job: dict[str, Any], rt: dict[str, Any], *existing: dict[str, Any]) -> Built:
    return new_objects(
        framework(),
        TrainJob.model_validate(job),
        ClusterTrainingRuntime.model_validate(rt),
        StaticReader(existing),
    )


def workloads(built: Built) -> list[dict[str, Any]]:
    return [d.object.to_dict() for d in built.objects if d.object.to_dict()["kind"] == "Workload"]


def defaulted(job: dict[str, Any]) -> TrainJob:
    model = TrainJob.model_validate(job)
    default_and_validate(framework(), model, ClusterTrainingRuntime.model_validate(TORCH), StaticReader())
    return model


# ---------------------------------------------------------------- webhook defaults


@pytest.mark.parametrize(
    ("labels", "patches", "resource_version", "suspended", "managers"),
    [
        ({QUEUE: "team-a"}, None, None, True, [MANAGER]),
        (
            {QUEUE: "team-a"},
            ["example.com/a", "example.com/b"],
            None,
            True,
            ["example.com/a", "example.com/b", MANAGER],
        ),
        ({QUEUE: "team-a"}, [MANAGER, "example.com/a"], None, True, [MANAGER, "example.com/a"]),
        (None, None, None, None, None),
        ({QUEUE: ""}, None, None, None, None),
        ({QUEUE: "team-a"}, None, "42", None, None),
    ],
    ids=[
        "queued",
        "appended-last",
        "never-duplicated-or-moved",
        "no-queue",
        "empty-queue",
        "update-untouched",
    ],
)
def test_default_suspends_and_appends_patch_once(
    labels: dict[str, str] | None,
    patches: list[str] | None,
    resource_version: str | None,
    suspended: bool | None,
    managers: list[str] | None,
) -> None:
    job = trainjob(labels, **({"runtimePatches": [{"manager": m} for m in patches]} if patches else {}))
    if resource_version:
        job["metadata"]["resourceVersion"] = resource_version
    result = defaulted(job)
    assert result.spec.suspend is suspended
    got = [p.manager for p in result.spec.runtime_patches] if result.spec.runtime_patches else None
    assert got == (managers if managers is not None else patches)


def test_default_is_idempotent() -> None:
    job = defaulted(trainjob({QUEUE: "team-a"}))
    rt = ClusterTrainingRuntime.model_validate(TORCH)
    default_and_validate(framework(), job, rt, StaticReader())
    assert [p.manager for p in job.spec.runtime_patches or []] == [MANAGER]


def test_defaulted_trainjob_is_valid_against_crd() -> None:
    assert validate_against_crd(defaulted(trainjob({QUEUE: "team-a"})).to_dict()) == []


@pytest.mark.parametrize(
    ("queue", "valid"),
    [("team-a", True), ("team-a.gpu", True), ("Team_A", False), ("-a", False), ("a" * 254, False)],
    ids=["label", "subdomain", "uppercase", "leading-dash", "too-long"],
)
def test_queue_name_must_be_a_dns_subdomain(queue: str, valid: bool) -> None:
    job = TrainJob.model_validate(trainjob({QUEUE: queue}))
    result = default_and_validate(
        framework(), job, ClusterTrainingRuntime.model_validate(TORCH), StaticReader()
    )
    paths = [(e.path, e.type) for e in result.errors]
    assert paths == ([] if valid else [(f"metadata.labels[{QUEUE}]", CauseType.INVALID)])


# ---------------------------------------------------------------- the Workload


def test_workload_name_is_kueues_hash_of_kind_group_name_uid() -> None:
    digest = hashlib.sha1(b"TrainJob\ntrainer.kubeflow.org\njob\nuid-1").hexdigest()
    assert workload_name("job", "uid-1") == f"trainjob-job-{digest[:5]}"
    assert workload_name("job", "uid-2") != workload_name("job", "uid-1")


def test_workload_name_truncates_the_prefix_only() -> None:
    name = workload_name("x" * 63, "uid-1", max_length=63)
    assert len(name) == 63
    assert name.startswith("trainjob-xxx") and name[-6] == "-"


def test_unqueued_job_has_no_workload() -> None:
    assert workloads(build(trainjob(), TORCH)) == []


def test_workload_for_upstream_torch_runtime() -> None:
    built = build(trainjob({QUEUE: "team-a"}, trainer={"numNodes": 3}, suspend=True), TORCH)
    [desired] = [d for d in built.objects if d.applied_by == AppliedBy.KUEUE]
    wl = desired.object.to_dict()
    jobset = next(d.object.to_dict() for d in built.objects if d.object.to_dict()["kind"] == "JobSet")
    assert wl["metadata"] == {
        "name": workload_name("job", "uid-1"),
        "namespace": "ml",
        "labels": {"kueue.x-k8s.io/job-uid": "uid-1"},
        "finalizers": ["kueue.x-k8s.io/resource-in-use"],
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
    assert wl["spec"]["queueName"] == "team-a"
    assert wl["spec"]["priority"] == 0
    [pod_set] = wl["spec"]["podSets"]
    assert (pod_set["name"], pod_set["count"]) == ("node", 3)
    assert pod_set["template"] == jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert validate_against_crd(wl) == []


@pytest.mark.parametrize(
    ("rjob_edits", "expected"),
    [
        ({}, {"dataset-initializer": 1, "model-initializer": 1, "node": 4}),
        (
            {"replicas": 2, "parallelism": 3},
            {"dataset-initializer": 1, "model-initializer": 1, "node": 4, "extra": 6},
        ),
        ({"replicas": 2, "parallelism": 3, "completions": 2}, {"extra": 6}),
    ],
    ids=["initializers-and-nodes", "replicas-times-parallelism", "trainer-sets-completions-to-parallelism"],
)
def test_pod_set_counts(rjob_edits: dict[str, Any], expected: dict[str, int]) -> None:
    rt = copy.deepcopy(TORCH)
    rjobs = rt["spec"]["template"]["spec"]["replicatedJobs"]
    rjobs[:0] = [initializer("dataset-initializer"), initializer("model-initializer")]
    if rjob_edits:
        extra = initializer("extra")
        del extra["template"]["metadata"]
        extra["replicas"] = rjob_edits["replicas"]
        job_spec = {k: v for k, v in rjob_edits.items() if k != "replicas"}
        extra["template"]["spec"].update(job_spec)
        rjobs.append(extra)
    [wl] = workloads(build(trainjob({QUEUE: "q"}, trainer={"numNodes": 4}), rt))
    counts = {p["name"]: p["count"] for p in wl["spec"]["podSets"]}
    assert {k: counts[k] for k in expected} == expected
    assert validate_against_crd(wl) == []


@pytest.mark.parametrize(
    ("labels", "pod_class", "existing", "ref", "priority"),
    [
        (
            {"kueue.x-k8s.io/priority-class": "high"},
            None,
            [{**WPC, "value": 1000}],
            ("kueue.x-k8s.io", "WorkloadPriorityClass", "high"),
            1000,
        ),
        (
            {"kueue.x-k8s.io/priority-class": "high"},
            None,
            [],
            ("kueue.x-k8s.io", "WorkloadPriorityClass", "high"),
            None,
        ),
        (
            {},
            "batch",
            [
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": "batch"},
                    "value": 7,
                }
            ],
            ("scheduling.k8s.io", "PriorityClass", "batch"),
            7,
        ),
        (
            {"kueue.x-k8s.io/priority-class": "high"},
            "batch",
            [{**WPC, "value": 5}],
            ("kueue.x-k8s.io", "WorkloadPriorityClass", "high"),
            5,
        ),
        ({}, None, [], None, 0),
    ],
    ids=["workload-priority-class", "class-missing", "pod-priority-class", "label-wins", "none"],
)
def test_priority(
    labels: dict[str, str],
    pod_class: str | None,
    existing: list[dict[str, Any]],
    ref: tuple[str, str, str] | None,
    priority: int | None,
) -> None:
    rt = copy.deepcopy(TORCH)
    if pod_class:
        rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
            "priorityClassName"
        ] = pod_class
    [wl] = workloads(build(trainjob({QUEUE: "q", **labels}), rt, *existing))
    got = wl["spec"].get("priorityClassRef")
    assert (tuple(got.values()) if got else None) == ref
    assert wl["spec"].get("priority") == priority
    assert validate_against_crd(wl) == []


def test_workload_templates_carry_the_gang_label_of_the_built_jobset() -> None:
    rt = torch(podGroupPolicy={"coscheduling": {"scheduleTimeoutSeconds": 30}})
    built = build(trainjob({QUEUE: "q"}), rt)
    [wl] = workloads(built)
    labels = wl["spec"]["podSets"][0]["template"]["metadata"]["labels"]
    assert labels == {"scheduling.x-k8s.io/pod-group": "job"}
    kinds = [d.object.to_dict()["kind"] for d in built.objects]
    assert kinds.index("PodGroup") < kinds.index("JobSet")
    assert CoschedulingPlugin.name in registry().names()


# ---------------------------------------------------------------- admission


ADMITTED = PodSetAdmission(
    name="node",
    node_selector={"gpu-type": "a100"},
    tolerations=(Toleration(key="gpu", operator="Exists", effect="NoSchedule"),),
    labels={"team": "a"},
)


def test_admission_patch_shape() -> None:
    job = defaulted(trainjob({QUEUE: "team-a"}))
    patch = admission_patch(job, [ADMITTED]).to_dict()
    pod = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"][
        "template"
    ]
    assert patch["manager"] == MANAGER
    assert pod == {
        "metadata": {"labels": {"team": "a", "kueue.x-k8s.io/podset": "node"}},
        "spec": {
            "nodeSelector": {"gpu-type": "a100"},
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }


def test_admission_patch_keeps_jobset_metadata_of_the_kueue_entry() -> None:
    meta = {"labels": {"kept": "yes"}}
    job = trainjob(
        {QUEUE: "q"},
        runtimePatches=[{"manager": MANAGER, "trainingRuntimeSpec": {"template": {"metadata": meta}}}],
    )
    patch = admission_patch(TrainJob.model_validate(job), [PodSetAdmission(name="node")]).to_dict()
    assert patch["trainingRuntimeSpec"]["template"]["metadata"] == meta
    rjob = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    assert rjob["template"]["spec"]["template"] == {
        "metadata": {"labels": {"kueue.x-k8s.io/podset": "node"}},
        "spec": {},
    }


def test_admitted_job_renders_flavor_placement_on_its_pods() -> None:
    job = defaulted(trainjob({QUEUE: "team-a"}, trainer={"numNodes": 2}))
    job.spec.runtime_patches = [
        admission_patch(job, [ADMITTED]) if p.manager == MANAGER else p
        for p in job.spec.runtime_patches or []
    ]
    job.spec.suspend = False
    job.metadata.resource_version = "7"  # an update: Kueue's create-only webhook must not re-suspend
    assert validate_against_crd(job.to_dict()) == []
    result = default_and_validate(
        framework(), job, ClusterTrainingRuntime.model_validate(TORCH), StaticReader()
    )
    assert result.errors == []
    built = new_objects(framework(), job, ClusterTrainingRuntime.model_validate(TORCH), StaticReader())
    jobset = next(d.object.to_dict() for d in built.objects if d.object.to_dict()["kind"] == "JobSet")
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert pod["metadata"]["labels"] == {"team": "a", "kueue.x-k8s.io/podset": "node"}
    assert pod["spec"]["nodeSelector"] == {"gpu-type": "a100"}
    assert pod["spec"]["tolerations"] == [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert jobset["spec"]["suspend"] is False
