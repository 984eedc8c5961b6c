"""Torch: torchrun's ``PET_*`` environment on the trainer's ``node`` container (upstream ``plugins/torch``)."""

from __future__ import annotations

import math
from typing import ClassVar

from gangplane.api import trainer as t
from gangplane.api.core import Container, EnvVar, ResourceRequirements
from gangplane.api.quantity import parse
from gangplane.errors import CauseType, FieldError
from gangplane.runtime.info import PodSet, RuntimeInfo
from gangplane.runtime.plugins.common import (
    TRAINER_PORT,
    apply_trainer_num_nodes,
    completion_index_env,
    node0_address,
    reserved_env_errors,
    upsert_container_port,
)
from gangplane.runtime.plugins.jobset import upsert_env
from gangplane.runtime.points import Handle, ValidationResult
from gangplane.runtime.reader import Reader

MASTER_PORT = TRAINER_PORT
RESERVED_ENV = ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT")
TORCHTUNE_COMMAND = ["tune", "run"]


def gpu_count(resources: ResourceRequirements | None) -> int:
    """The first resource whose name contains ``gpu``, from requests, else limits (upstream rule)."""
    for given in (resources.requests, resources.limits) if resources else ():
        for name, text in (given or {}).items():
            if "gpu" in name.lower():
                return int(parse(text))
    return 0


def _cpu(resources: ResourceRequirements | None) -> int:
    for given in (resources.requests, resources.limits) if resources else ():
        if given and "cpu" in given:
            return max(1, math.ceil(parse(given["cpu"])))
    return 1


def num_proc_per_node(job: t.TrainJob, node: Container | None) -> str:
    """``trainer.numProcPerNode``, else ``auto``; ``auto`` without GPUs becomes the CPU count."""
    trainer = job.spec.trainer
    if trainer is not None and trainer.num_proc_per_node is not None:
        return str(trainer.num_proc_per_node)
    resources = trainer.resources_per_node if trainer and trainer.resources_per_node else None
    resources = resources or (node.resources if node else None)
    return "auto" if gpu_count(resources) > 0 else str(_cpu(resources))


def is_torchtune(container: Container) -> bool:
    return (container.command or [])[:2] == TORCHTUNE_COMMAND


class TorchPlugin:
    name: ClassVar[str] = "Torch"

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def validate(
        self, info: RuntimeInfo, old: t.TrainJob | None, new: t.TrainJob, reader: Reader
    ) -> ValidationResult:
        if info.ml_policy is None or info.ml_policy.torch is None:
            return ValidationResult()
        return ValidationResult(errors=[*reserved_env_errors(new, RESERVED_ENV), *_injection_errors(info)])

    def enforce_ml_policy(self, info: RuntimeInfo, job: t.TrainJob) -> None:
        trainer_set = info.trainer_pod_set()
        if info.ml_policy is None or info.ml_policy.torch is None or trainer_set is None:
            return
        apply_trainer_num_nodes(trainer_set, job)
        node = trainer_set.container(t.NODE)
        if job.spec.trainer is None or node is None:
            return
        upsert_env(node, job.spec.trainer.env or [])
        env = self._pet_env(job, trainer_set, node)
        upsert_env(node, env)
        upsert_container_port(node, MASTER_PORT, protocol="TCP")
        self._inject_targets(info, env)
        if is_torchtune(node) and trainer_set.count > 1:
            node.command = torchtune_command(node.command or [], node0_address(job))

    def _pet_env(self, job: t.TrainJob, trainer_set: PodSet, node: Container) -> list[EnvVar]:
        rank = completion_index_env("PET_NODE_RANK")
        env = [
            EnvVar(name="PET_NNODES", value=str(trainer_set.count)),
            EnvVar(name="PET_NPROC_PER_NODE", value=num_proc_per_node(job, node)),
            rank,
        ]
        command = job.spec.trainer.command if job.spec.trainer and job.spec.trainer.command else node.command
        if (command or [])[:2] == TORCHTUNE_COMMAND:
            return env
        return [
            *env,
            EnvVar(name="PET_MASTER_ADDR", value=node0_address(job)),
            EnvVar(name="PET_MASTER_PORT", value=str(MASTER_PORT)),
        ]

    def _inject_targets(self, info: RuntimeInfo, env: list[EnvVar]) -> None:
        """``envInjection`` targets get the PET variables plus ``MASTER_ADDR``/``MASTER_PORT``."""
        policy = info.ml_policy.torch if info.ml_policy else None
        extra = [EnvVar(name=v.name.removeprefix("PET_"), value=v.value) for v in env if "MASTER" in v.name]
        for target in (policy.env_injection.targets if policy and policy.env_injection else None) or []:
            pod_set = info.pod_set(target.job_name)
            for name in target.container_names:
                container = pod_set.container(name) if pod_set else None
                if container is not None:
                    upsert_env(container, [*env, *extra])


def torchtune_command(command: list[str], master: str) -> list[str]:
    """Point torchtune's rendezvous at the master pod; replaces a ``--rdzv_endpoint`` the runtime set."""
    rest = [arg for arg in command[2:] if not arg.startswith("--rdzv_endpoint")]
    return [*TORCHTUNE_COMMAND, f"--rdzv_endpoint={master}:{MASTER_PORT}", *rest]


def _injection_errors(info: RuntimeInfo) -> list[FieldError]:
    policy = info.ml_policy.torch if info.ml_policy else None
    targets = (policy.env_injection.targets if policy and policy.env_injection else None) or []
    errors: list[FieldError] = []
    for i, target in enumerate(targets):
        pod_set = info.pod_set(target.job_name)
        path = f"spec.mlPolicy.torch.envInjection.targets[{i}]"
        if pod_set is None:
            errors.append(
                FieldError(f"{path}.jobName", CauseType.NOT_FOUND, "no such replicated job", target.job_name)
            )
            continue
        errors.extend(
            FieldError(f"{path}.containerNames[{k}]", CauseType.NOT_FOUND, "no such container", name)
            for k, name in enumerate(target.container_names)
            if pod_set.container(name) is None
        )
    return errors
