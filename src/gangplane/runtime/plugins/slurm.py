"""Slurm Bridge: checks and Slurm job parameters for TrainJobs scheduled by Slinky's slurm-bridge.

The Trainer guide (trainer-api.md §13, slurm.md §A7) uses the **Coscheduling** policy: slurm-bridge turns the
pods of one coscheduling PodGroup into one Slurm external job, with ``min_nodes = minMember`` and one
exclusive node per pod. So the Coscheduling plugin builds the PodGroup and this plugin builds nothing. It:

- activates when the runtime's pods use ``schedulerName: slurm-bridge-scheduler`` (pods moved to the
  scheduler by slurm-bridge's namespace webhook are not detected: set the name in the runtime);
- requires ``podGroupPolicy.coscheduling``: without a PodGroup slurm-bridge makes one Slurm job per pod (no
  gang, slurm.md §A3);
- checks the ``slurmjob.slinky.slurm.net/*`` annotation values as slurm-bridge parses them
  (slurm-bridge ``docs/workload.md`` "Supported Slurm job annotations");
- resolves them per job: runtime template < runtime patches < TrainJob ``metadata.annotations``. Upstream
  slurm-bridge never reads the TrainJob (its owner walk stops at the JobSet), so copying the TrainJob's keys
  is gangplane's addition. With a coscheduling PodGroup slurm-bridge reads them **only from the PodGroup**;
  ``pod_group_annotations`` is what the PodGroup must carry.
"""

from __future__ import annotations

import re
from typing import ClassVar

from gangplane.api import trainer as t
from gangplane.api.quantity import parse
from gangplane.api.scheduling import slurm
from gangplane.errors import CauseType, FieldError
from gangplane.runtime.info import RuntimeInfo
from gangplane.runtime.plugins import gang
from gangplane.runtime.points import Handle, ValidationResult
from gangplane.runtime.reader import Reader

A = slurm.SlurmJobAnnotation
_INTEGERS = frozenset({A.PRIORITY, A.MIN_NODES, A.MAX_NODES, A.GROUP_ID, A.USER_ID})
_QUANTITIES = frozenset({A.CPU_PER_TASK, A.MEM_PER_NODE})
# Go strconv.ParseBool.
_BOOLEANS = frozenset({"1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"})
# A bare integer (minutes), a duration with unit suffixes, or Slurm --time: MM:SS, HH:MM:SS, D-HH[:MM[:SS]].
_TIME_LIMIT = re.compile(r"^(\d+|(\d+[smhdw])+|\d+:\d+|\d+:\d+:\d+|\d+-\d+(:\d+){0,2})$")
_KNOWN = frozenset(a.value for a in A)


def uses_slurm_bridge(info: RuntimeInfo) -> bool:
    return info.scheduler_name() == slurm.SCHEDULER_NAME


def _slurm_keys(values: dict[str, str] | None) -> dict[str, str]:
    return {k: v for k, v in (values or {}).items() if k.startswith(slurm.SLURM_JOB_ANNOTATION_PREFIX)}


def slurm_job_annotations(info: RuntimeInfo, job: t.TrainJob) -> dict[str, str]:
    """The Slurm job annotations in force: runtime template and patches, overridden by the TrainJob's."""
    return {**_slurm_keys(info.annotations), **_slurm_keys(job.metadata.annotations)}


def pod_group_annotations(info: RuntimeInfo) -> dict[str, str]:
    """What the coscheduling PodGroup must carry for slurm-bridge, once ``enforce_pod_group_policy`` ran."""
    return _slurm_keys(info.annotations) if uses_slurm_bridge(info) else {}


def _is_quantity(value: str) -> bool:
    try:
        parse(value)
    except ValueError:
        return False
    return True


def _value_problem(key: str, value: str) -> str | None:
    """Why slurm-bridge would reject ``value`` for ``key``, or ``None``."""
    if key in _INTEGERS and not (value.isascii() and value.isdigit()):
        return "must be a non-negative base-10 integer"
    if key in _QUANTITIES and not _is_quantity(value):
        return "must be a Kubernetes quantity (e.g. 4 or 16Gi)"
    if key == A.EXCLUSIVE and value not in _BOOLEANS:
        return 'must be "true" or "false"'
    if key == A.TIME_LIMIT and not _TIME_LIMIT.match(value):
        return "must be minutes, a duration such as 90m or 2h, or a Slurm time (MM:SS, HH:MM:SS, D-HH:MM:SS)"
    if value == "":
        return "must not be empty"
    return None


def _path(key: str, job: t.TrainJob) -> str:
    from_job = key in (job.metadata.annotations or {})
    return f"metadata.annotations[{key}]" if from_job else "spec.runtimeRef"


def _annotation_errors(values: dict[str, str], job: t.TrainJob) -> list[FieldError]:
    errors = [
        FieldError(_path(key, job), CauseType.INVALID, f"{key} {problem}", value)
        for key, value in sorted(values.items())
        if (problem := _value_problem(key, value)) is not None
    ]
    low, high = values.get(A.MIN_NODES, ""), values.get(A.MAX_NODES, "")
    if low.isdigit() and high.isdigit() and int(low) > int(high):
        detail = f"{A.MIN_NODES} ({low}) must not exceed {A.MAX_NODES} ({high})"
        errors.append(FieldError(_path(A.MIN_NODES, job), CauseType.INVALID, detail, low))
    return errors


def _unknown_key_warnings(values: dict[str, str]) -> list[str]:
    return [
        f"slurm-bridge ignores the unknown annotation {key}" for key in sorted(values) if key not in _KNOWN
    ]


def _policy_errors(info: RuntimeInfo, job: t.TrainJob) -> list[FieldError]:
    if info.pod_group_policy is not None and info.pod_group_policy.coscheduling is not None:
        return []
    detail = (
        f"runtime {job.spec.runtime_ref.name!r} schedules with {slurm.SCHEDULER_NAME}, which needs "
        "podGroupPolicy.coscheduling: without a coscheduling PodGroup slurm-bridge submits one Slurm job per "
        "pod and the gang is lost"
    )
    return [FieldError("spec.podGroupPolicy", CauseType.INVALID, detail)]


def _gang_size(info: RuntimeInfo, job: t.TrainJob) -> int:
    """Pods of the coscheduling PodGroup, one Slurm node each (sequential pod sets run outside the gang).
    Admission runs before the ML policy is enforced, so the TrainJob's ``numNodes`` is applied here."""
    sequential = set(gang.sequential_pod_sets(info))
    wanted = job.spec.trainer.num_nodes if job.spec.trainer else None
    return sum(
        wanted if p.ancestor == "trainer" and wanted else p.count
        for p in info.pod_sets
        if p.name not in sequential
    )


def _node_count_errors(values: dict[str, str], info: RuntimeInfo, job: t.TrainJob) -> list[FieldError]:
    """``min-nodes`` above the gang's pod count can never be satisfied (one node per pod): reject it."""
    low, size = values.get(A.MIN_NODES, ""), _gang_size(info, job)
    if not low.isdigit() or int(low) <= size:
        return []
    detail = f"{A.MIN_NODES} ({low}) exceeds the {size} pods of the gang (slurm-bridge runs one pod per node)"
    return [FieldError(_path(A.MIN_NODES, job), CauseType.INVALID, detail, low)]


class SlurmBridgePlugin:
    name: ClassVar[str] = "SlurmBridge"

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def validate(
        self, info: RuntimeInfo, old: t.TrainJob | None, new: t.TrainJob, reader: Reader
    ) -> ValidationResult:
        if not uses_slurm_bridge(info):
            return ValidationResult()
        values = slurm_job_annotations(info, new)
        errors = [
            *_policy_errors(info, new),
            *_annotation_errors(values, new),
            *_node_count_errors(values, info, new),
        ]
        return ValidationResult(errors=errors, warnings=_unknown_key_warnings(values))

    def enforce_pod_group_policy(self, info: RuntimeInfo, job: t.TrainJob) -> None:
        # The resolved set lands on the JobSet metadata (where the Trainer guide puts it and where
        # slurm-bridge reads it when there is no PodGroup); pod_group_annotations() hands it to the PodGroup.
        if uses_slurm_bridge(info):
            info.annotations.update(slurm_job_annotations(info, job))
