"""JAX: ``jax.distributed`` environment on the trainer's ``node`` container (upstream ``plugins/jax``).

One JAX process per node; process 0 (``node-0-0``) is the coordinator. The port is upstream's
``constants.ContainerTrainerPort`` (29500), shared with torch. Upstream has no validator for JAX; gangplane
rejects ``trainer.env`` entries that would be overwritten by the variables below, as Torch and MPI do.
"""

from __future__ import annotations

from typing import ClassVar

from gangplane.api import trainer as t
from gangplane.api.core import EnvVar
from gangplane.runtime.info import RuntimeInfo
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

RESERVED_ENV = ("JAX_NUM_PROCESSES", "JAX_PROCESS_ID", "JAX_COORDINATOR_ADDRESS")


def jax_env(job: t.TrainJob, num_processes: int) -> list[EnvVar]:
    return [
        EnvVar(name="JAX_NUM_PROCESSES", value=str(num_processes)),
        completion_index_env("JAX_PROCESS_ID"),
        EnvVar(name="JAX_COORDINATOR_ADDRESS", value=f"{node0_address(job)}:{TRAINER_PORT}"),
    ]


class JAXPlugin:
    name: ClassVar[str] = "JAX"

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def validate(
        self, info: RuntimeInfo, old: t.TrainJob | None, new: t.TrainJob, reader: Reader
    ) -> ValidationResult:
        if info.ml_policy is None or info.ml_policy.jax is None:
            return ValidationResult()
        return ValidationResult(errors=reserved_env_errors(new, RESERVED_ENV))

    def enforce_ml_policy(self, info: RuntimeInfo, job: t.TrainJob) -> None:
        trainer_set = info.trainer_pod_set()
        if info.ml_policy is None or info.ml_policy.jax is None or trainer_set is None:
            return
        apply_trainer_num_nodes(trainer_set, job)
        node = trainer_set.container(t.NODE)
        if job.spec.trainer is None or node is None:
            return
        upsert_env(node, jax_env(job, trainer_set.count))
        upsert_container_port(node, TRAINER_PORT)
