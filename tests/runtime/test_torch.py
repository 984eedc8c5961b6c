"""Torch plugin: PET_* environment, numProcPerNode rules, torchtune, envInjection, reserved env validation."""

from __future__ import annotations

import pytest
from factories import build, container, objects_by_kind, rjob, runtime, trainjob

from gangplane.api.trainer import ClusterTrainingRuntime, TrainJob
from gangplane.clock import ManualClock
from gangplane.runtime.core import default_and_validate
from gangplane.runtime.framework import Framework
from gangplane.runtime.plugins import default_registry
from gangplane.runtime.points import Handle
from gangplane.runtime.reader import StaticReader


def node_container(job: dict, rt: dict) -> dict:
    jobset = objects_by_kind(build(job, rt))["JobSet"]
    node = next(r for r in jobset["spec"]["replicatedJobs"] if r["name"] == "node")
    return node["template"]["spec"]["template"]["spec"]["containers"][0]


def env(container: dict) -> dict[str, object]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def test_pet_environment_and_port(torch_node: dict) -> None:
    rt = runtime(torch_node, ml_policy={"numNodes": 2, "torch": {}})
    job = trainjob("mnist", trainer={"env": [{"name": "LR", "value": "0.1"}], "numProcPerNode": 4})
    node = node_container(job, rt)
    assert env(node) == {
        "LR": "0.1",
        "PET_NNODES": "2",
        "PET_NPROC_PER_NODE": "4",
        "PET_NODE_RANK": {
            "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
        },
        "PET_MASTER_ADDR": "mnist-node-0-0.mnist",
        "PET_MASTER_PORT": "29500",
    }
    assert node["ports"] == [{"containerPort": 29500, "protocol": "TCP"}]


@pytest.mark.parametrize(
    ("requests", "limits", "expected"),
    [
        ({"nvidia.com/gpu": 2}, None, "auto"),
        ({"cpu": "2500m"}, None, "3"),
        (None, {"cpu": "4"}, "4"),
        (None, None, "1"),
        ({"cpu": "300m"}, None, "1"),
    ],
    ids=["gpus-auto", "cpu-ceil", "cpu-from-limits", "nothing-one", "small-cpu-one"],
)
def test_num_proc_per_node_auto(requests: dict | None, limits: dict | None, expected: str) -> None:
    rt = runtime(rjob("node", "trainer", container("node", requests, limits)), ml_policy={"torch": {}})
    assert env(node_container(trainjob(trainer={}), rt))["PET_NPROC_PER_NODE"] == expected


def test_resources_per_node_decide_auto_when_given(torch_node: dict) -> None:
    rt = runtime(torch_node, ml_policy={"torch": {}})
    job = trainjob(trainer={"resourcesPerNode": {"requests": {"cpu": "6"}}})
    # as given: no GPU in resourcesPerNode, so the CPU count decides even though the runtime asks for a GPU
    assert env(node_container(job, rt))["PET_NPROC_PER_NODE"] == "6"


def test_no_trainer_section_means_no_pet_env(torch_node: dict) -> None:
    rt = runtime(torch_node, ml_policy={"torch": {}})
    assert "env" not in node_container(trainjob(), rt)


def test_trainer_image_command_args_replace_the_runtime_values(torch_node: dict) -> None:
    rt = runtime(torch_node, ml_policy={"torch": {}})
    node = node_container(
        trainjob(trainer={"image": "me/train:1", "command": ["python"], "args": ["t.py"]}), rt
    )
    assert (node["image"], node["command"], node["args"]) == ("me/train:1", ["python"], ["t.py"])


def test_torchtune_omits_master_vars_and_points_rendezvous_at_node_zero() -> None:
    tune = container("node", {"nvidia.com/gpu": 1})
    tune["command"] = ["tune", "run", "--rdzv_endpoint=localhost:29500", "full_finetune_distributed"]
    rt = runtime(rjob("node", "trainer", tune), ml_policy={"torch": {}})
    node = node_container(trainjob("ft", trainer={"numNodes": 2}), rt)
    assert "PET_MASTER_ADDR" not in env(node)
    assert node["command"] == [
        "tune",
        "run",
        "--rdzv_endpoint=ft-node-0-0.ft:29500",
        "full_finetune_distributed",
    ]


def test_env_injection_targets_get_pet_and_master_vars(torch_node: dict) -> None:
    torch_node["template"]["spec"]["template"]["spec"]["containers"].append(container("sidecar"))
    policy = {"torch": {"envInjection": {"targets": [{"jobName": "node", "containerNames": ["sidecar"]}]}}}
    rt = runtime(torch_node, ml_policy=policy)
    jobset = objects_by_kind(build(trainjob("j", trainer={}), rt))["JobSet"]
    sidecar = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][1]
    names = [e["name"] for e in sidecar["env"]]
    assert names == [
        "PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT",
        "MASTER_ADDR", "MASTER_PORT",
    ]  # fmt: skip


def validate(job: dict, rt: dict) -> list[str]:
    framework = Framework(default_registry(), Handle(ManualClock()))
    result = default_and_validate(
        framework, TrainJob.model_validate(job), ClusterTrainingRuntime.model_validate(rt), StaticReader()
    )
    return [f"{e.path}: {e.detail}" for e in result.errors]


def test_reserved_env_is_rejected_with_its_path(torch_node: dict) -> None:
    rt = runtime(torch_node, ml_policy={"torch": {}})
    job = trainjob(trainer={"env": [{"name": "OK", "value": "1"}, {"name": "PET_NNODES", "value": "9"}]})
    assert validate(job, rt) == ["spec.trainer.env[1].name: must not have reserved envs"]


def test_env_injection_target_must_exist(torch_node: dict) -> None:
    policy = {"torch": {"envInjection": {"targets": [{"jobName": "node", "containerNames": ["ghost"]}]}}}
    rt = runtime(torch_node, ml_policy=policy)
    assert validate(trainjob(), rt) == [
        "spec.mlPolicy.torch.envInjection.targets[0].containerNames[0]: no such container"
    ]
