"""XGBoost plugin on the upstream ``xgboost-distributed`` runtime: ``DMLC_*`` environment, workers, validation."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from crdschema import SHARED_DIR
from gangplane.api.trainer import ClusterTrainingRuntime, TrainJob
from gangplane.clock import ManualClock
from gangplane.errors import CauseType
from gangplane.runtime.core import Built, default_and_validate, new_objects
from gangplane.runtime.framework import Framework
from gangplane.runtime.plugins import default_registry
from gangplane.runtime.points import Handle
from gangplane.runtime.reader import StaticReader

if SHARED_DIR is None:
    pytest.skip("shared/ with the upstream runtimes is not available", allow_module_level=True)
RUNTIMES = SHARED_DIR / "upstream" / "runtimes"
INDEX = {"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}


def framework() -> Framework:
    return Framework(default_registry(), Handle(ManualClock()))


def upstream(file: str = "xgboost_distributed.yaml") -> dict[str, Any]:
    return yaml.safe_load((RUNTIMES / file).read_text())


def with_node_resources(resources: dict[str, Any]) -> dict[str, Any]:
    rt = upstream()
    rjob = rt["spec"]["template"]["spec"]["replicatedJobs"][0]
    rjob["template"]["spec"]["template"]["spec"]["containers"][0]["resources"] = resources
    return rt


def trainjob(name: str = "job", **trainer: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"runtimeRef": {"name": "xgboost-distributed"}}
    if trainer:
        spec["trainer"] = trainer
    meta = {"name": name, "namespace": "default", "uid": "uid-1"}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": meta, "spec": spec}


def build(job: dict[str, Any], rt: dict[str, Any]) -> Built:
    parsed = (TrainJob.model_validate(job), ClusterTrainingRuntime.model_validate(rt))
    return new_objects(framework(), *parsed, StaticReader())


def node_rjob(built: Built) -> dict[str, Any]:
    jobset = next(d.object.to_dict() for d in built.objects if d.object.to_dict()["kind"] == "JobSet")
    rjob: dict[str, Any] = next(r for r in jobset["spec"]["replicatedJobs"] if r["name"] == "node")
    return rjob


def node_container(built: Built) -> dict[str, Any]:
    container: dict[str, Any] = node_rjob(built)["template"]["spec"]["template"]["spec"]["containers"][0]
    return container


def env(container: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(e["name"], e.get("value", e.get("valueFrom"))) for e in container.get("env", [])]


def test_dmlc_environment_and_port() -> None:
    built = build(trainjob("boost", numNodes=3, env=[{"name": "OMP_NUM_THREADS", "value": "4"}]), upstream())
    node = node_container(built)
    assert env(node) == [
        ("DMLC_TRACKER_URI", "boost-node-0-0.boost"),
        ("DMLC_TRACKER_PORT", "29500"),
        ("DMLC_TASK_ID", INDEX),
        ("DMLC_NUM_WORKER", "3"),
        ("OMP_NUM_THREADS", "4"),
    ]
    assert node["ports"] == [{"containerPort": 29500}]
    assert node_rjob(built)["template"]["spec"]["parallelism"] == 3


@pytest.mark.parametrize(
    ("rt", "trainer", "workers"),
    [
        (upstream(), {"image": "xgb"}, "1"),
        (upstream(), {"numNodes": 2}, "2"),
        (upstream(), {"numNodes": 2, "resourcesPerNode": {"requests": {"nvidia.com/gpu": 4}}}, "8"),
        (upstream(), {"numNodes": 2, "resourcesPerNode": {"requests": {"nvidia.com/gpu": 1}}}, "2"),
        (upstream(), {"numNodes": 3, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}}}, "6"),
        (upstream(), {"numNodes": 2, "resourcesPerNode": {"requests": {"cpu": "8"}}}, "2"),
        (with_node_resources({"limits": {"nvidia.com/gpu": 2}}), {"numNodes": 2}, "4"),
        (
            with_node_resources({"limits": {"nvidia.com/gpu": 2}}),
            {"numNodes": 2, "resourcesPerNode": {}},
            "2",
        ),
        (upstream(), {"numNodes": 0, "resourcesPerNode": {"requests": {"nvidia.com/gpu": 4}}}, "0"),
    ],
    ids=[
        "one-node",
        "cpu-nodes",
        "gpus-per-node",
        "one-gpu",
        "gpus-from-limits",
        "cpu-only",
        "runtime-gpus",
        "resources-per-node-replace-runtime",
        "zero-nodes",
    ],
)
def test_num_workers(rt: dict[str, Any], trainer: dict[str, Any], workers: str) -> None:
    assert dict(env(node_container(build(trainjob(**trainer), rt))))["DMLC_NUM_WORKER"] == workers


def test_gpus_come_from_the_trainer_pod_set_only() -> None:
    """Upstream ``ExtractResourcePerNodeFromRuntime``: a ``node`` container of another replicated job is ignored."""
    rt = upstream()
    rjobs = rt["spec"]["template"]["spec"]["replicatedJobs"]
    gpu_node = {"name": "node", "image": "prep", "resources": {"requests": {"nvidia.com/gpu": 8}}}
    rjobs.insert(
        0, {"name": "prep", "template": {"spec": {"template": {"spec": {"containers": [gpu_node]}}}}}
    )
    assert dict(env(node_container(build(trainjob(numNodes=2), rt))))["DMLC_NUM_WORKER"] == "2"


def test_tracker_ignores_network_subdomain() -> None:
    rt = upstream()
    rt["spec"]["template"]["spec"]["network"] = {"subdomain": "svc"}
    node = node_container(build(trainjob("boost", numNodes=2), rt))
    assert dict(env(node))["DMLC_TRACKER_URI"] == "boost-node-0-0.boost"


def test_no_trainer_means_count_only() -> None:
    rt = upstream()
    rt["spec"]["mlPolicy"]["numNodes"] = 2
    built = build(trainjob(), rt)
    assert "env" not in node_container(built)
    assert node_rjob(built)["template"]["spec"]["parallelism"] == 2


def test_other_frameworks_get_no_dmlc_env() -> None:
    node = node_container(build(trainjob(numNodes=2), upstream("jax_distributed.yaml")))
    assert not [name for name, _ in env(node) if name.startswith("DMLC_")]


@pytest.mark.parametrize(
    ("file", "names", "expected"),
    [
        ("xgboost_distributed.yaml", ["A", "DMLC_TASK_ID"], [("spec.trainer.env[1].name", "DMLC_TASK_ID")]),
        (
            "xgboost_distributed.yaml",
            ["DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_NUM_WORKER"],
            [
                ("spec.trainer.env[0].name", "DMLC_TRACKER_URI"),
                ("spec.trainer.env[1].name", "DMLC_TRACKER_PORT"),
                ("spec.trainer.env[2].name", "DMLC_NUM_WORKER"),
            ],
        ),
        ("xgboost_distributed.yaml", ["DMLC_LOG_LEVEL"], []),
        ("jax_distributed.yaml", ["DMLC_TASK_ID"], []),
    ],
    ids=["one-reserved", "three-reserved", "not-reserved", "other-framework"],
)
def test_reserved_env(file: str, names: list[str], expected: list[tuple[str, str]]) -> None:
    job = TrainJob.model_validate(trainjob(env=[{"name": n, "value": "x"} for n in names]))
    rt = ClusterTrainingRuntime.model_validate(upstream(file))
    errors = default_and_validate(framework(), job, rt, StaticReader()).errors
    assert [(e.path, e.value) for e in errors] == expected
    assert all(e.type == CauseType.INVALID and e.detail == "must not have reserved envs" for e in errors)
