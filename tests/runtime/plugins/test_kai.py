"""KAI plugin: queue routing, admission checks, and the PodGroup KAI's pod-grouper derives from the JobSet."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from crdschema import SHARED_DIR, validate_against_crd
from gangplane.api.trainer import ClusterTrainingRuntime, TrainJob
from gangplane.clock import ManualClock
from gangplane.errors import CauseType
from gangplane.runtime.core import Built, default_and_validate, new_objects
from gangplane.runtime.framework import Framework
from gangplane.runtime.plugins import default_registry
from gangplane.runtime.plugins.kai import KAIPlugin
from gangplane.runtime.points import AppliedBy, Handle, ValidationResult
from gangplane.runtime.reader import StaticReader
from gangplane.runtime.registry import Registry

if SHARED_DIR is None:
    pytest.skip("shared/ with the upstream runtimes is not available", allow_module_level=True)
TORCH = yaml.safe_load((SHARED_DIR / "upstream" / "runtimes" / "torch_distributed.yaml").read_text())
QUEUE = "kai.scheduler/queue"
MIN_MEMBER = "kai.scheduler/batch-min-member"
JOBSET_UID = "js-uid-9"


def registry() -> Registry:
    base = default_registry()
    return base.merge(Registry([(KAIPlugin.name, KAIPlugin)] if KAIPlugin.name not in base.names() else []))


def framework() -> Framework:
    return Framework(registry(), Handle(ManualClock()))


def trainjob(
    labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None, **spec: Any
) -> dict:
    meta: dict[str, Any] = {"name": "t", "namespace": "ml", "uid": "uid-1"}
    meta.update({k: v for k, v in (("labels", labels), ("annotations", annotations)) if v})
    spec = {"runtimeRef": {"name": "torch-distributed"}, **spec}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": meta, "spec": spec}


def pod_spec(rjob: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = rjob["template"]["spec"]["template"]["spec"]
    return spec


def kai_runtime(*before: dict[str, Any], **spec_edits: Any) -> dict[str, Any]:
    """The upstream torch runtime on kai-scheduler, with replicated jobs ``before`` ahead of ``node``."""
    rt = copy.deepcopy(TORCH)
    rjobs = rt["spec"]["template"]["spec"]["replicatedJobs"]
    rjobs[:0] = [copy.deepcopy(r) for r in before]
    for rjob in rjobs:
        pod_spec(rjob)["schedulerName"] = "kai-scheduler"
    rt["spec"].update(spec_edits)
    return rt


def initializer(name: str) -> dict[str, Any]:
    pod = {"containers": [{"name": name, "image": "init"}]}
    labels = {"trainer.kubeflow.org/trainjob-ancestor-step": name}
    return {"name": name, "template": {"metadata": {"labels": labels}, "spec": {"template": {"spec": pod}}}}


def with_depends_on(rt: dict[str, Any], *names: str) -> dict[str, Any]:
    node = rt["spec"]["template"]["spec"]["replicatedJobs"][-1]
    node["dependsOn"] = [{"name": n, "status": "Complete"} for n in names]
    return rt


def live_jobset(uid: str = JOBSET_UID) -> dict[str, Any]:
    meta = {"name": "t", "namespace": "ml", "uid": uid}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta, "spec": {}}


def build(job: dict[str, Any], rt: dict[str, Any], *existing: dict[str, Any]) -> Built:
    return new_objects(
        framework(),
        TrainJob.model_validate(job),
        ClusterTrainingRuntime.model_validate(rt),
        StaticReader(existing),
    )


def validate(job: dict[str, Any], rt: dict[str, Any]) -> ValidationResult:
    model = TrainJob.model_validate(job)
    return default_and_validate(framework(), model, ClusterTrainingRuntime.model_validate(rt), StaticReader())


def of_kind(built: Built, kind: str) -> list[dict[str, Any]]:
    return [d.object.to_dict() for d in built.objects if d.object.to_dict()["kind"] == kind]


def pod_group(built: Built) -> dict[str, Any]:
    [desired] = [d for d in built.objects if d.applied_by == AppliedBy.KAI_PODGROUPER]
    pg = desired.object.to_dict()
    assert validate_against_crd(pg) == []
    return pg


# ---------------------------------------------------------------- activation and validation


def test_inactive_without_kai_scheduler_name() -> None:
    with_live = build(trainjob({QUEUE: "team-a"}, suspend=True), TORCH, live_jobset())
    assert [d.applied_by for d in with_live.objects] == [AppliedBy.TRAINER]
    [jobset] = of_kind(with_live, "JobSet")
    assert "labels" not in jobset["metadata"]
    assert validate(trainjob(), TORCH) == ValidationResult()


@pytest.mark.parametrize(
    ("labels", "annotations", "policy", "errors", "warned"),
    [
        ({QUEUE: "team-a"}, None, None, [], False),
        ({"project": "p1"}, None, None, [], False),
        (None, None, None, [], True),
        ({QUEUE: ""}, None, None, [(f"metadata.labels[{QUEUE}]", CauseType.INVALID)], False),
        ({QUEUE: "q"}, None, {"coscheduling": {}}, [("spec.podGroupPolicy", CauseType.INVALID)], False),
        ({QUEUE: "q"}, None, {"volcano": {}}, [("spec.podGroupPolicy", CauseType.INVALID)], False),
        ({QUEUE: "q"}, {MIN_MEMBER: "2"}, None, [], False),
        (
            {QUEUE: "q"},
            {MIN_MEMBER: "0"},
            None,
            [(f"metadata.annotations[{MIN_MEMBER}]", CauseType.INVALID)],
            False,
        ),
        (
            {QUEUE: "q"},
            {MIN_MEMBER: "x"},
            None,
            [(f"metadata.annotations[{MIN_MEMBER}]", CauseType.INVALID)],
            False,
        ),
    ],
    ids=[
        "queue",
        "project-fallback",
        "default-queue-warns",
        "empty-queue",
        "coscheduling",
        "volcano",
        "min-member-ok",
        "min-member-zero",
        "min-member-not-int",
    ],
)
def test_validate(
    labels: dict[str, str] | None,
    annotations: dict[str, str] | None,
    policy: dict[str, Any] | None,
    errors: list[tuple[str, CauseType]],
    warned: bool,
) -> None:
    rt = kai_runtime(**({"podGroupPolicy": policy} if policy else {}))
    result = validate(trainjob(labels, annotations), rt)
    assert [(e.path, e.type) for e in result.errors] == errors
    assert any("default-queue" in w for w in result.warnings) is warned


# ---------------------------------------------------------------- enforce


def test_queue_label_reaches_jobset_and_every_pod() -> None:
    rt = with_depends_on(kai_runtime(initializer("dataset-initializer")), "dataset-initializer")
    [jobset] = of_kind(build(trainjob({QUEUE: "team-a"}), rt), "JobSet")
    assert jobset["metadata"]["labels"] == {QUEUE: "team-a"}
    assert jobset["metadata"]["annotations"] == {MIN_MEMBER: "1"}
    pods = [r["template"]["spec"]["template"] for r in jobset["spec"]["replicatedJobs"]]
    assert [p["metadata"]["labels"][QUEUE] for p in pods] == ["team-a", "team-a"]


# ---------------------------------------------------------------- the derived PodGroup


def test_no_pod_group_before_the_jobset_exists() -> None:
    built = build(trainjob({QUEUE: "q"}), kai_runtime())
    assert [d.applied_by for d in built.objects] == [AppliedBy.TRAINER]


def test_worked_example_from_reference() -> None:
    """kai.md §4.3: numNodes 4 -> pg-t-<jobsetUID>, root minSubGroup 1, parent node, leaf node-replica-0 (4)."""
    pg = pod_group(build(trainjob({QUEUE: "team-a"}, trainer={"numNodes": 4}), kai_runtime(), live_jobset()))
    assert pg["metadata"] == {
        "name": f"pg-t-{JOBSET_UID}",
        "namespace": "ml",
        "labels": {QUEUE: "team-a"},
        "ownerReferences": [
            {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "t", "uid": JOBSET_UID}
        ],
    }
    assert pg["spec"] == {
        "minSubGroup": 1,
        "queue": "team-a",
        "priorityClassName": "train",
        "subGroups": [
            {"name": "node", "minSubGroup": 1},
            {"name": "node-replica-0", "parent": "node", "minMember": 4},
        ],
    }


def test_trainjob_metadata_fills_in_but_never_overrides_the_jobset() -> None:
    rt = kai_runtime()
    rt["spec"]["template"]["metadata"] = {"labels": {"team": "runtime"}, "annotations": {"note": "runtime"}}
    job = trainjob({QUEUE: "q", "team": "job", "owner": "ana"}, {"note": "job", "extra": "x"})
    pg = pod_group(build(job, rt, live_jobset()))
    assert pg["metadata"]["labels"] == {QUEUE: "q", "team": "runtime", "owner": "ana"}
    assert pg["metadata"]["annotations"] == {"note": "runtime", "extra": "x"}


@pytest.mark.parametrize(
    ("depends", "annotations", "startup", "root", "jobset_annotation"),
    [
        (True, None, None, 1, "1"),
        (False, None, None, 3, None),
        (True, {MIN_MEMBER: "2"}, None, 2, None),
        (False, {MIN_MEMBER: "9"}, None, 3, None),
        (False, None, "InOrder", 1, None),
    ],
    ids=["sequential-relaxed", "concurrent-all", "user-value-kept", "user-value-capped", "in-order-startup"],
)
def test_root_min_sub_group(
    depends: bool,
    annotations: dict[str, str] | None,
    startup: str | None,
    root: int,
    jobset_annotation: str | None,
) -> None:
    rt = kai_runtime(initializer("dataset-initializer"), initializer("model-initializer"))
    if depends:
        with_depends_on(rt, "dataset-initializer", "model-initializer")
    if startup:
        rt["spec"]["template"]["spec"]["startupPolicy"] = {"startupPolicyOrder": startup}
    built = build(trainjob({QUEUE: "q"}, annotations, trainer={"numNodes": 2}), rt, live_jobset())
    pg = pod_group(built)
    assert pg["spec"]["minSubGroup"] == root
    assert [g["name"] for g in pg["spec"]["subGroups"] if "parent" not in g] == [
        "dataset-initializer",
        "model-initializer",
        "node",
    ]
    assert built.info.annotations.get(MIN_MEMBER) == jobset_annotation  # the JobSet's annotations
    assert any("outside the gang" in w for w in built.warnings) is depends


def test_several_concurrent_gang_members_are_warned_about() -> None:
    launcher = {
        "name": "launcher",
        "template": {"spec": {"template": {"spec": {"containers": [{"name": "launcher", "image": "x"}]}}}},
    }
    rt = kai_runtime(initializer("dataset-initializer"), launcher)
    with_depends_on(rt, "dataset-initializer")
    built = build(trainjob({QUEUE: "q"}), rt, live_jobset())
    assert pod_group(built)["spec"]["minSubGroup"] == 1
    assert any("replicated jobs launcher, node start as its own gang" in w for w in built.warnings)


def test_replicas_and_leaf_overrides() -> None:
    rt = kai_runtime()
    worker = copy.deepcopy(rt["spec"]["template"]["spec"]["replicatedJobs"][0])
    worker["name"] = "worker"
    del worker["template"]["metadata"]
    worker["replicas"] = 2
    worker["template"]["spec"]["parallelism"] = 3
    worker["template"]["metadata"] = {
        "annotations": {
            MIN_MEMBER: "2",
            "kai.scheduler/topology": "dc",
            "kai.scheduler/topology-required-placement": "rack",
        }
    }
    rt["spec"]["template"]["spec"]["replicatedJobs"].append(worker)
    pg = pod_group(build(trainjob({QUEUE: "q"}), rt, live_jobset()))
    topology = {"topology": "dc", "requiredTopologyLevel": "rack"}
    assert pg["spec"]["subGroups"][2:] == [
        {"name": "worker", "minSubGroup": 2},
        {"name": "worker-replica-0", "parent": "worker", "minMember": 2, "topologyConstraint": topology},
        {"name": "worker-replica-1", "parent": "worker", "minMember": 2, "topologyConstraint": topology},
    ]
    assert pg["spec"]["minSubGroup"] == 2


def test_invalid_leaf_override_means_kai_creates_no_pod_group() -> None:
    rt = kai_runtime()
    rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["metadata"]["annotations"] = {
        MIN_MEMBER: "0"
    }
    built = build(trainjob({QUEUE: "q"}), rt, live_jobset())
    assert [d for d in built.objects if d.applied_by == AppliedBy.KAI_PODGROUPER] == []


PRIORITY_CLASS = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "custom"},
}


@pytest.mark.parametrize(
    ("labels", "pod_class", "existing", "expected"),
    [
        ({}, None, [], "train"),
        ({"priorityClassName": "build"}, None, [], "build"),
        ({}, "custom", [], "train"),
        ({}, "custom", [PRIORITY_CLASS], "custom"),
        ({"priorityClassName": "missing"}, "custom", [PRIORITY_CLASS], "train"),
    ],
    ids=[
        "default-train",
        "label-kai-class",
        "pod-class-missing",
        "pod-class-exists",
        "label-first-even-if-missing",
    ],
)
def test_priority_class(
    labels: dict[str, str], pod_class: str | None, existing: list[dict[str, Any]], expected: str
) -> None:
    rt = kai_runtime()
    if pod_class:
        pod_spec(rt["spec"]["template"]["spec"]["replicatedJobs"][0])["priorityClassName"] = pod_class
    pg = pod_group(build(trainjob({QUEUE: "q", **labels}), rt, live_jobset(), *existing))
    assert pg["spec"]["priorityClassName"] == expected


@pytest.mark.parametrize(
    ("labels", "queue", "preemptibility"),
    [
        ({"project": "p1"}, "p1", None),
        ({}, "default-queue", None),
        ({QUEUE: "q", "kai.scheduler/preemptibility": "non-preemptible"}, "q", "non-preemptible"),
        ({QUEUE: "q", "kai.scheduler/preemptibility": "sometimes"}, "q", None),
    ],
    ids=["project", "default-queue", "preemptibility", "invalid-preemptibility-ignored"],
)
def test_queue_and_preemptibility(labels: dict[str, str], queue: str, preemptibility: str | None) -> None:
    pg = pod_group(build(trainjob(labels), kai_runtime(), live_jobset()))
    assert pg["spec"]["queue"] == queue
    assert pg["spec"].get("preemptibility") == preemptibility


def test_root_topology_from_trainjob_annotations() -> None:
    annotations = {"kai.scheduler/topology": "dc", "kai.scheduler/topology-preferred-placement": "zone"}
    pg = pod_group(build(trainjob({QUEUE: "q"}, annotations), kai_runtime(), live_jobset()))
    assert pg["spec"]["topologyConstraint"] == {"topology": "dc", "preferredTopologyLevel": "zone"}
