"""XGBoost: the DMLC tracker environment on the trainer's ``node`` container (upstream ``plugins/xgboost``).

Worker 0 (``node-0-0``) hosts the Rabit/collective tracker on upstream's ``constants.ContainerTrainerPort``
(29500). With GPUs there is one worker per GPU, else one per node, so
``DMLC_NUM_WORKER = count * max(1, GPUs per node)``.
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
    resources_per_node,
    upsert_container_port,
)
from gangplane.runtime.plugins.jobset import upsert_env
from gangplane.runtime.plugins.torch import gpu_count
from gangplane.runtime.points import Handle, ValidationResult
from gangplane.runtime.reader import Reader

RESERVED_ENV = ("DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER")


def dmlc_env(job: t.TrainJob, num_workers: int) -> list[EnvVar]:
    return [
        EnvVar(name="DMLC_TRACKER_URI", value=node0_address(job)),
        EnvVar(name="DMLC_TRACKER_PORT", value=str(TRAINER_PORT)),
        completion_index_env("DMLC_TASK_ID"),
        EnvVar(name="DMLC_NUM_WORKER", value=str(num_workers)),
    ]


class XGBoostPlugin:
    name: ClassVar[str] = "XGBoost"

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def validate(
        self, info: RuntimeInfo, old: t.TrainJob | None, new: t.TrainJob, reader: Reader
    ) -> ValidationResult:
        if info.ml_policy is None or info.ml_policy.xgboost is None:
            return ValidationResult()
        return ValidationResult(errors=reserved_env_errors(new, RESERVED_ENV))

    def enforce_ml_policy(self, info: RuntimeInfo, job: t.TrainJob) -> None:
        trainer_set = info.trainer_pod_set()
        if info.ml_policy is None or info.ml_policy.xgboost is None or trainer_set is None:
            return
        apply_trainer_num_nodes(trainer_set, job)
        node = trainer_set.container(t.NODE)
        if job.spec.trainer is None or node is None:
            return
        workers_per_node = max(1, gpu_count(resources_per_node(info, job)))
        upsert_env(node, dmlc_env(job, trainer_set.count * workers_per_node))
        upsert_container_port(node, TRAINER_PORT)
