"""Rendering: manifests in, every object a real cluster would get out, in apply order (pure).

Order: cluster configuration first (everything that is neither a TrainJob nor a runtime, e.g. queues and
priority classes), then runtimes, then per TrainJob the TrainJob itself (as admitted), its runtime snapshot,
the objects the Trainer controller applies (PodGroup before JobSet) and last those other controllers derive
(Kueue's Workload, KAI's PodGroup).

Every kind the embedded API server serves is taken as context, as the cluster would hold it: kinds gangplane
has a model for are admitted (defaulted, validated), the others (PriorityClass, Namespace, Secret, ...) are
kept as given, so the plugins read them as the controller reads the cluster (a Volcano or KAI policy's
``priorityClassName`` resolves against the PriorityClasses given). Kinds no server serves are errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from gangplane.api import trainer as t
from gangplane.api.base import OpenModel
from gangplane.api.corev1_config import ConfigMap
from gangplane.api.meta import ObjectMeta
from gangplane.api.serde import model_for
from gangplane.errors import ApiError, CauseType, FieldError, Invalid
from gangplane.runtime.admission import Admission, is_runtime, resolve_runtime
from gangplane.runtime.core import new_objects
from gangplane.runtime.plugins.common import owner_reference
from gangplane.runtime.points import AppliedBy, Desired
from gangplane.runtime.reader import StaticReader
from gangplane.store.base import ResourceType
from gangplane.store.catalog import by_kind

DEFAULT_NAMESPACE = "default"
SNAPSHOT_SUFFIX = "-runtime-snapshot"
SNAPSHOT_KEY = "runtime"


@dataclass
class Rendered:
    objects: list[Desired] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[tuple[str, ApiError]] = field(default_factory=list)


def runtime_snapshot(job: t.TrainJob, runtime: t.TrainingRuntime) -> ConfigMap:
    """KEP-2599: the runtime frozen for this TrainJob, so later runtime edits do not change it."""
    meta = ObjectMeta(
        name=f"{job.metadata.name}{SNAPSHOT_SUFFIX}",
        namespace=job.metadata.namespace,
        owner_references=[owner_reference(job)],
    )
    text = yaml.dump(runtime.to_dict(), Dumper=yaml.CSafeDumper, sort_keys=False)  # libyaml: 10x faster
    return ConfigMap(metadata=meta, data={SNAPSHOT_KEY: text})


def _served(obj: dict[str, Any]) -> ResourceType | None:
    return by_kind(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))


def with_namespace(obj: dict[str, Any]) -> dict[str, Any]:
    """The object in "default" when its kind is namespaced and it names no namespace, as kubectl places it."""
    meta, served = obj.get("metadata"), _served(obj)
    if (served is not None and not served.namespaced) or not isinstance(meta, dict) or meta.get("namespace"):
        return obj
    return {**obj, "metadata": {**meta, "namespace": DEFAULT_NAMESPACE}}


def _context(obj: dict[str, Any]) -> OpenModel:
    """A served kind gangplane has no model for, kept as given (``metadata.name`` is all render needs)."""
    name = (obj.get("metadata") or {}).get("name")
    if not name:
        kind = str(obj.get("kind") or "Object")
        raise Invalid(kind, "", [FieldError("metadata.name", CauseType.REQUIRED, "Required value")])
    return OpenModel.model_validate(obj)


def _sort_key(entry: tuple[int, str, dict[str, Any]]) -> tuple[int, int]:
    index, _, obj = entry
    if obj.get("kind") == t.TRAINJOB_KIND and obj.get("apiVersion", "").startswith(t.GROUP):
        return (2, index)
    return (1 if is_runtime(obj) else 0, index)


class Renderer:
    def __init__(self, admission: Admission) -> None:
        self.admission = admission

    def render(self, documents: list[tuple[str, dict[str, Any]]]) -> Rendered:
        reader = StaticReader()
        result = Rendered()
        ordered = sorted(((i, src, obj) for i, (src, obj) in enumerate(documents)), key=_sort_key)
        for _, source, obj in ordered:
            try:
                self._render_one(obj, reader, result)
            except ApiError as error:
                result.errors.append((source, error))
        return result

    def _render_one(self, obj: dict[str, Any], reader: StaticReader, result: Rendered) -> None:
        placed = with_namespace(obj)
        if model_for(str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")) is None and _served(obj):
            context = _context(placed)
            reader.add(placed)
            result.objects.append(Desired(context))
            return
        admitted = self.admission.admit(placed, reader)
        reader.add(admitted.to_dict())
        result.warnings.extend(admitted.warnings)
        result.objects.append(Desired(admitted.model))
        if isinstance(admitted.model, t.TrainJob):
            self._render_children(admitted.model, reader, result)

    def _render_children(self, job: t.TrainJob, reader: StaticReader, result: Rendered) -> None:
        runtime = resolve_runtime(job, reader)
        built = new_objects(self.admission.framework, job, runtime, reader)
        result.warnings.extend(built.warnings)
        applied = [d for d in built.objects if d.applied_by == AppliedBy.TRAINER]
        derived = [d for d in built.objects if d.applied_by != AppliedBy.TRAINER]
        result.objects.extend([Desired(runtime_snapshot(job, runtime)), *applied, *derived])
