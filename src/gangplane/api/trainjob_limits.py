"""Sane maxima for the sizes a TrainJob or training runtime asks for, checked on the raw object before
admission builds anything from it (a ``numNodes`` of 2**31-1 would otherwise make the runtime render one
endpoint per node until memory runs out).

Upstream Trainer has no maximum (``numNodes`` is an int32). The bound here is Kubernetes' own for the Jobs a
TrainJob becomes: an Indexed Job may have at most 100,000 completions and parallelism
(``pkg/apis/batch/validation``, ``completionsSoftLimit``/``parallelismLimitForHighCompletions``); every
trainer node is one index of such a Job, so a larger TrainJob could never run on Kubernetes either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gangplane.errors import CauseType, FieldError

MAX_NUM_NODES = 100_000
MAX_PROCS_PER_NODE = 100_000
MAX_REPLICAS = 100_000


def _at(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _over(path: str, value: Any, maximum: int) -> list[FieldError]:
    if type(value) is not int or value <= maximum:
        return []
    return [FieldError(path, CauseType.INVALID, f"must be less than or equal to {maximum}", value)]


def trainjob_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    trainer = _at(obj, "spec", "trainer")
    return _over("spec.trainer.numNodes", _at(trainer, "numNodes"), MAX_NUM_NODES) + _over(
        "spec.trainer.numProcPerNode", _at(trainer, "numProcPerNode"), MAX_PROCS_PER_NODE
    )


def runtime_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    policy = _at(obj, "spec", "mlPolicy")
    errors = _over("spec.mlPolicy.numNodes", _at(policy, "numNodes"), MAX_NUM_NODES)
    for framework in ("torch", "mpi"):
        errors += _over(
            f"spec.mlPolicy.{framework}.numProcPerNode",
            _at(policy, framework, "numProcPerNode"),
            MAX_PROCS_PER_NODE,
        )
    jobs = _at(obj, "spec", "template", "spec", "replicatedJobs")
    for i, job in enumerate(jobs if isinstance(jobs, list) else []):
        errors += _over(
            f"spec.template.spec.replicatedJobs[{i}].replicas", _at(job, "replicas"), MAX_REPLICAS
        )
    return errors


def errors(kind: str, obj: Mapping[str, Any]) -> list[FieldError]:
    if kind == "TrainJob":
        return trainjob_errors(obj)
    if kind in ("TrainingRuntime", "ClusterTrainingRuntime"):
        return runtime_errors(obj)
    return []
