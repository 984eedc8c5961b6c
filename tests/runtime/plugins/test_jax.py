"""JAX plugin on the upstream ``jax-distributed`` runtime: count, ``JAX_*`` environment, port, validation."""

from __future__ import annotations

import copy
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


def upstream(file: str = "jax_distributed.yaml") -> dict[str, Any]:
    return yaml.safe_load((RUNTIMES / file).read_text())


def trainjob(name: str = "job", **trainer: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"runtimeRef": {"name": "jax-distributed"}}
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


@pytest.mark.parametrize(
    ("name", "trainer", "runtime_nodes", "count"),
    [
        ("job", {"image": "jax:custom"}, None, 1),
        ("mnist", {"numNodes": 4}, None, 4),
        ("job", {"numNodes": 0}, 3, 0),
        ("job", {"image": "jax:custom"}, 3, 3),
    ],
    ids=["runtime-default", "trainer-nodes", "zero-nodes", "runtime-nodes"],
)
def test_jax_environment(name: str, trainer: dict[str, Any], runtime_nodes: int | None, count: int) -> None:
    rt = upstream()
    if runtime_nodes is not None:
        rt["spec"]["mlPolicy"]["numNodes"] = runtime_nodes
    built = build(trainjob(name, **trainer), rt)
    node = node_container(built)
    assert env(node) == [
        ("JAX_NUM_PROCESSES", str(count)),
        ("JAX_PROCESS_ID", INDEX),
        ("JAX_COORDINATOR_ADDRESS", f"{name}-node-0-0.{name}:29500"),
    ]
    assert node["ports"] == [{"containerPort": 29500}]
    assert node_rjob(built)["template"]["spec"]["parallelism"] == count


def test_user_env_follows_and_port_is_not_duplicated() -> None:
    rt = upstream()
    container = rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    container["containers"][0]["ports"] = [{"containerPort": 29500, "name": "coord"}]
    built = build(trainjob(numNodes=2, env=[{"name": "XLA_FLAGS", "value": "--xla_dump_to=/tmp"}]), rt)
    node = node_container(built)
    assert [name for name, _ in env(node)] == [
        "JAX_NUM_PROCESSES",
        "JAX_PROCESS_ID",
        "JAX_COORDINATOR_ADDRESS",
        "XLA_FLAGS",
    ]
    assert node["ports"] == [{"containerPort": 29500, "name": "coord"}]


def test_coordinator_ignores_network_subdomain() -> None:
    rt = upstream()
    rt["spec"]["template"]["spec"]["network"] = {"subdomain": "svc"}
    node = node_container(build(trainjob("train", numNodes=2), rt))
    assert dict(env(node))["JAX_COORDINATOR_ADDRESS"] == "train-node-0-0.train:29500"


def test_no_trainer_means_count_only() -> None:
    built = build(trainjob(), upstream())
    assert "env" not in node_container(built)
    assert node_rjob(built)["template"]["spec"]["parallelism"] == 1


def test_other_frameworks_get_no_jax_env() -> None:
    node = node_container(build(trainjob(numNodes=2), upstream("xgboost_distributed.yaml")))
    assert not [name for name, _ in env(node) if name.startswith("JAX_")]


@pytest.mark.parametrize(
    ("file", "names", "expected"),
    [
        ("jax_distributed.yaml", ["A", "JAX_PROCESS_ID"], [("spec.trainer.env[1].name", "JAX_PROCESS_ID")]),
        (
            "jax_distributed.yaml",
            ["JAX_NUM_PROCESSES", "JAX_COORDINATOR_ADDRESS"],
            [
                ("spec.trainer.env[0].name", "JAX_NUM_PROCESSES"),
                ("spec.trainer.env[1].name", "JAX_COORDINATOR_ADDRESS"),
            ],
        ),
        ("jax_distributed.yaml", ["JAX_PLATFORMS"], []),
        ("xgboost_distributed.yaml", ["JAX_PROCESS_ID"], []),
    ],
    ids=["one-reserved", "two-reserved", "not-reserved", "other-framework"],
)
def test_reserved_env(file: str, names: list[str], expected: list[tuple[str, str]]) -> None:
    job = TrainJob.model_validate(trainjob(env=[{"name": n, "value": "x"} for n in names]))
    rt = ClusterTrainingRuntime.model_validate(copy.deepcopy(upstream(file)))
    errors = default_and_validate(framework(), job, rt, StaticReader()).errors
    assert [(e.path, e.value) for e in errors] == expected
    assert all(e.type == CauseType.INVALID and e.detail == "must not have reserved envs" for e in errors)
