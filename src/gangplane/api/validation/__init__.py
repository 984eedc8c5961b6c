"""Pure admission validation: every field error and warning at once, never raising on bad input.

Equal to the upstream CRD schema and CEL rules plus the runtime webhook, with gangplane's extra rules
documented where they live (``validation/runtime.py``, ``validation/trainjob.py``). Rules that need the
resolved runtime of a TrainJob are the runtime plugins' ``validate`` hooks, not these.
"""

from __future__ import annotations

from typing import Any

from gangplane.api import trainer as t
from gangplane.api.base import ApiModel
from gangplane.api.validation.common import Validation
from gangplane.api.validation.runtime import validate_jobset_spec, validate_runtime
from gangplane.api.validation.stages import Parsed, parse_all
from gangplane.api.validation.trainjob import (
    validate_runtime_patches_mutability,
    validate_trainjob,
    validate_trainjob_update,
)
from gangplane.errors import Invalid


def validate_object(
    obj: ApiModel | dict[str, Any], old: ApiModel | dict[str, Any] | None = None
) -> Validation:
    """Validate any object by kind (``old`` given on update); schema errors of a dict come back as errors.

    Kinds without rules here (JobSets, Pods, scheduling objects) validate clean once they parse.
    """
    try:
        model = _model(obj)
        previous = _model(old) if old is not None else None
    except Invalid as exc:
        return Validation(list(exc.causes))
    if isinstance(model, t.TrainJob):
        result = validate_trainjob(model)
        if isinstance(previous, t.TrainJob):
            result.extend(validate_trainjob_update(previous, model))
        return result
    if isinstance(model, t.TrainingRuntime):
        return validate_runtime(model)
    return Validation()


def parse_wire(obj: dict[str, Any]) -> Parsed:
    """Every schema error of a wire object, and a model of the rest for the later rules to judge."""
    from gangplane.api.serde import to_model

    return parse_all(obj, to_model)


def _model(obj: ApiModel | dict[str, Any]) -> ApiModel:
    # serde imports every registered model; keep it off this package's import path.
    from gangplane.api.serde import to_model

    return obj if isinstance(obj, ApiModel) else to_model(obj)


__all__ = [
    "Parsed",
    "Validation",
    "parse_wire",
    "validate_jobset_spec",
    "validate_object",
    "validate_runtime",
    "validate_runtime_patches_mutability",
    "validate_trainjob",
    "validate_trainjob_update",
]
