"""Admission: what the API server does to an object before storing it — decode, default, validate.

Mirrors the Kubernetes pipeline Trainer relies on: schema and CEL-equivalent rules fail with 422 ``Invalid``;
webhook rules that need the resolved runtime (the plugins' ``validate``) fail with 403 ``Forbidden``, as
upstream's integration tests expect. All field errors are reported at once. Pure apart from the ``Reader``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gangplane.api import defaults, serde, validation
from gangplane.api import trainer as t
from gangplane.api.base import ApiModel
from gangplane.clock import Clock
from gangplane.errors import CauseType, FieldError, Forbidden, Invalid
from gangplane.runtime.core import default_and_validate
from gangplane.runtime.framework import Framework
from gangplane.runtime.reader import Reader

_RUNTIME_KINDS = (t.TRAINING_RUNTIME_KIND, t.CLUSTER_TRAINING_RUNTIME_KIND)


@dataclass
class Admitted:
    model: ApiModel
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return self.model.to_dict()


def resolve_runtime(job: t.TrainJob, reader: Reader) -> t.TrainingRuntime:
    """The live runtime a TrainJob refers to; ``Forbidden`` on ``spec.runtimeRef`` when it does not exist."""
    ref = job.spec.runtime_ref
    kind = ref.kind or t.CLUSTER_TRAINING_RUNTIME_KIND
    namespace = job.metadata.namespace or "" if kind == t.TRAINING_RUNTIME_KIND else ""
    found = reader.get(t.API_VERSION, kind, namespace, ref.name)
    if found is None:
        detail = f"specified {kind} must be created before the TrainJob is created"
        raise Forbidden(
            t.TRAINJOB_KIND,
            job.metadata.name or "",
            [FieldError("spec.runtimeRef", CauseType.NOT_FOUND, detail, ref.name)],
        )
    cls = t.ClusterTrainingRuntime if kind == t.CLUSTER_TRAINING_RUNTIME_KIND else t.TrainingRuntime
    return cls.model_validate(found)


class Admission:
    """Decode, default and validate any object gangplane knows; TrainJobs also through the plugins."""

    def __init__(self, framework: Framework, clock: Clock) -> None:
        self.framework = framework
        self.clock = clock

    def admit(self, obj: dict[str, Any], reader: Reader, old: dict[str, Any] | None = None) -> Admitted:
        # Schema errors and the rules' errors come back together; the webhook stage (the plugins) runs only
        # on an object that passed both, as upstream's validating webhooks run after schema validation.
        parsed = validation.parse_wire(obj)
        kind, name = obj.get("kind", ""), (obj.get("metadata") or {}).get("name", "")
        if parsed.model is None:
            raise Invalid(kind, name, parsed.errors)
        model = parsed.model
        old_model = serde.to_model(old) if old is not None else None
        defaults.default_object(model, self.clock, old_model)
        checked = validation.validate_object(model, old_model)
        errors = parsed.with_rules(checked.errors)
        if errors:
            raise Invalid(kind, name, errors)
        warnings = list(checked.warnings)
        if isinstance(model, t.TrainJob):
            warnings += self._admit_trainjob(model, reader, old_model)
        return Admitted(model, warnings)

    def _admit_trainjob(self, job: t.TrainJob, reader: Reader, old: ApiModel | None) -> list[str]:
        runtime = resolve_runtime(job, reader)
        old_job = old if isinstance(old, t.TrainJob) else None
        result = default_and_validate(self.framework, job, runtime, reader, old_job)
        if result.errors:
            raise Forbidden(t.TRAINJOB_KIND, job.metadata.name or "", result.errors)
        deprecated = (runtime.metadata.labels or {}).get(t.SUPPORT_LABEL) == t.SUPPORT_DEPRECATED
        notice = [f"{runtime.kind} {runtime.metadata.name!r} is deprecated"] if deprecated else []
        return [*notice, *result.warnings]


def is_runtime(obj: dict[str, Any]) -> bool:
    return serde.group_of(str(obj.get("apiVersion", ""))) == t.GROUP and obj.get("kind") in _RUNTIME_KINDS
