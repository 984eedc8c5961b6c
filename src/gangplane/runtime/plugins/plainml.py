"""PlainML: the trainer node count for runtimes without an ML framework policy (upstream ``plugins/plainml``)."""

from __future__ import annotations

from typing import ClassVar

from gangplane.api import trainer as t
from gangplane.runtime.info import RuntimeInfo
from gangplane.runtime.plugins.common import apply_trainer_num_nodes
from gangplane.runtime.points import Handle


def has_framework_policy(policy: t.MLPolicy | None) -> bool:
    return policy is not None and any((policy.torch, policy.mpi, policy.jax, policy.xgboost, policy.flux))


class PlainMLPlugin:
    name: ClassVar[str] = "PlainML"

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def enforce_ml_policy(self, info: RuntimeInfo, job: t.TrainJob) -> None:
        trainer_set = info.trainer_pod_set()
        if not has_framework_policy(info.ml_policy) and trainer_set is not None:
            apply_trainer_num_nodes(trainer_set, job)
