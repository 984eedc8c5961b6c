"""Slurm Bridge plugin: the coscheduling requirement, annotation checks, and where the annotations go."""

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
from gangplane.runtime.plugins.slurm import SlurmBridgePlugin, pod_group_annotations
from gangplane.runtime.points import AppliedBy, Handle, ValidationResult
from gangplane.runtime.reader import StaticReader
from gangplane.runtime.registry import Registry

if SHARED_DIR is None:
    pytest.skip("shared/ with the upstream runtimes is not available", allow_module_level=True)
TORCH = yaml.safe_load((SHARED_DIR / "upstream" / "runtimes" / "torch_distributed.yaml").read_text())
P = "slurmjob.slinky.slurm.net/"
COSCHED = {"coscheduling": {"scheduleTimeoutSeconds": 60}}


def registry() -> Registry:
    base = default_registry()
    extra = (
        [(SlurmBridgePlugin.name, SlurmBridgePlugin)] if SlurmBridgePlugin.name not in base.names() else []
    )
    return base.merge(Registry(extra))


def framework() -> Framework:
    return Framework(registry(), Handle(ManualClock()))


def slurm_runtime(policy: dict[str, Any] | None = COSCHED, annotations: dict[str, str] | None = None) -> dict:
    rt = copy.deepcopy(TORCH)
    for rjob in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        rjob["template"]["spec"]["template"]["spec"]["schedulerName"] = "slurm-bridge-scheduler"
    if policy is not None:
        rt["spec"]["podGroupPolicy"] = policy
    if annotations:
        rt["spec"]["template"]["metadata"] = {"annotations": annotations}
    return rt


def trainjob(annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "job", "namespace": "ml", "uid": "uid-1"}
    if annotations:
        meta["annotations"] = annotations
    spec = {"runtimeRef": {"name": "torch-distributed"}, **spec}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": meta, "spec": spec}


def validate(job: dict[str, Any], rt: dict[str, Any]) -> ValidationResult:
    model = TrainJob.model_validate(job)
    return default_and_validate(framework(), model, ClusterTrainingRuntime.model_validate(rt), StaticReader())


def build(job: dict[str, Any], rt: dict[str, Any]) -> Built:
    model = TrainJob.model_validate(job)
    return new_objects(framework(), model, ClusterTrainingRuntime.model_validate(rt), StaticReader())


def errors(result: ValidationResult) -> list[tuple[str, CauseType]]:
    return [(e.path, e.type) for e in result.errors]


# ---------------------------------------------------------------- the gang policy


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (COSCHED, []),
        ({"coscheduling": {}}, []),
        (None, [("spec.podGroupPolicy", CauseType.INVALID)]),
        ({"volcano": {}}, [("spec.podGroupPolicy", CauseType.INVALID)]),
    ],
    ids=["coscheduling", "coscheduling-defaults", "no-policy", "volcano"],
)
def test_requires_coscheduling(policy: dict[str, Any] | None, expected: list[tuple[str, CauseType]]) -> None:
    result = validate(trainjob(), slurm_runtime(policy))
    assert errors(result) == expected
    assert all("podGroupPolicy.coscheduling" in e.detail for e in result.errors)


def test_other_schedulers_are_not_checked() -> None:
    assert validate(trainjob({f"{P}timelimit": "soon"}), TORCH) == ValidationResult()


# ---------------------------------------------------------------- annotation values


@pytest.mark.parametrize(
    ("key", "value", "valid"),
    [
        ("timelimit", "30", True),
        ("timelimit", "90m", True),
        ("timelimit", "1h30m", True),
        ("timelimit", "05:30", True),
        ("timelimit", "01:00:00", True),
        ("timelimit", "2-12", True),
        ("timelimit", "2-12:30:00", True),
        ("timelimit", "soon", False),
        ("timelimit", "-5", False),
        ("timelimit", "1.5h", False),
        ("min-nodes", "1", True),
        ("min-nodes", "four", False),
        ("max-nodes", "-1", False),
        ("priority", "100", True),
        ("priority", "1e3", False),
        ("user-id", "1000", True),
        ("group-id", "g", False),
        ("cpu-per-task", "500m", True),
        ("cpu-per-task", "lots", False),
        ("mem-per-node", "16Gi", True),
        ("mem-per-node", "16 GB", False),
        ("exclusive", "false", True),
        ("exclusive", "no", False),
        ("partition", "gpu", True),
        ("partition", "", False),
        ("account", "", False),
        ("qos", "high", True),
    ],
)
def test_annotation_values(key: str, value: str, valid: bool) -> None:
    result = validate(trainjob({P + key: value}), slurm_runtime())
    assert errors(result) == ([] if valid else [(f"metadata.annotations[{P}{key}]", CauseType.INVALID)])


def test_runtime_annotations_are_checked_against_the_runtime() -> None:
    result = validate(trainjob(), slurm_runtime(annotations={f"{P}timelimit": "soon"}))
    assert errors(result) == [("spec.runtimeRef", CauseType.INVALID)]
    assert f"{P}timelimit" in result.errors[0].detail


def test_min_nodes_must_not_exceed_max_nodes() -> None:
    notes = {f"{P}min-nodes": "5", f"{P}max-nodes": "4"}
    result = validate(trainjob(notes, trainer={"numNodes": 6}), slurm_runtime())
    assert errors(result) == [(f"metadata.annotations[{P}min-nodes]", CauseType.INVALID)]


def test_unknown_slurm_key_warns() -> None:
    result = validate(trainjob({f"{P}time-limit": "30"}), slurm_runtime())
    assert result.errors == []
    assert result.warnings == [f"slurm-bridge ignores the unknown annotation {P}time-limit"]


# ---------------------------------------------------------------- where the annotations go


def test_trainjob_annotations_override_the_runtime_and_land_on_the_jobset() -> None:
    rt = slurm_runtime(annotations={f"{P}partition": "cpu", f"{P}account": "ml", "other": "kept"})
    job = trainjob(
        {f"{P}partition": "gpu", f"{P}timelimit": "60", "unrelated": "not-copied"}, trainer={"numNodes": 2}
    )
    built = build(job, rt)
    expected = {f"{P}partition": "gpu", f"{P}account": "ml", f"{P}timelimit": "60"}
    assert pod_group_annotations(built.info) == expected
    jobset = next(d.object.to_dict() for d in built.objects if d.object.to_dict()["kind"] == "JobSet")
    assert jobset["metadata"]["annotations"] == {**expected, "other": "kept"}


def test_pod_group_annotations_only_for_slurm_bridge() -> None:
    built = build(trainjob({f"{P}partition": "gpu"}), TORCH)
    assert pod_group_annotations(built.info) == {}


def test_coscheduling_builds_the_gang_and_slurm_bridge_nothing() -> None:
    built = build(trainjob(trainer={"numNodes": 3}), slurm_runtime())
    kinds = [(d.object.to_dict()["kind"], d.applied_by) for d in built.objects]
    assert kinds == [("PodGroup", AppliedBy.TRAINER), ("JobSet", AppliedBy.TRAINER)]
    pg = built.objects[0].object.to_dict()
    assert pg["spec"]["minMember"] == 3  # slurm-bridge: min_nodes = minMember, one exclusive node per pod
    assert validate_against_crd(pg) == []
    jobset = built.objects[1].object.to_dict()
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert pod["metadata"]["labels"] == {"scheduling.x-k8s.io/pod-group": "job"}
    assert pod["spec"]["schedulerName"] == "slurm-bridge-scheduler"


def test_min_nodes_above_the_gang_size_is_rejected() -> None:
    # One node per pod: 3 trainer nodes can never fill 4 Slurm nodes (issue #16).
    result = validate(trainjob({f"{P}min-nodes": "4"}, trainer={"numNodes": 3}), slurm_runtime())
    assert errors(result) == [(f"metadata.annotations[{P}min-nodes]", CauseType.INVALID)]
    assert "exceeds the 3 pods of the gang" in result.errors[0].detail
    assert errors(validate(trainjob({f"{P}min-nodes": "3"}, trainer={"numNodes": 3}), slurm_runtime())) == []
