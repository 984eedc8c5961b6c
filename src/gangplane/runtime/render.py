"""Rendering: manifests in, every object a real cluster would get out, in apply order (pure).

Order: cluster configuration first (everything that is neither a TrainJob nor a runtime, e.g. queues and
priority classes), then runtimes, then per TrainJob the TrainJob itself (as admitted), its runtime snapshot,
the objects the Trainer controller applies (PodGroup before JobSet) and last those other controllers derive
(Kueue's Workload, KAI's PodGroup).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from gangplane.api import trainer as t
from gangplane.api.corev1_config import ConfigMap
from gangplane.api.meta import ObjectMeta
from gangplane.errors import ApiError
from gangplane.runtime.admission import Admission, is_runtime, resolve_runtime
from gangplane.runtime.core import new_objects
from gangplane.runtime.plugins.common import owner_reference
from gangplane.runtime.points import AppliedBy, Desired
from gangplane.runtime.reader import StaticReader

# Kinds without a namespace; every other kind given without one lands in "default", as kubectl would do it.
CLUSTER_SCOPED_KINDS = frozenset(
    {
        "ClusterTrainingRuntime", "Namespace", "Node", "PriorityClass", "ResourceFlavor", "ClusterQueue",
        "Cohort", "WorkloadPriorityClass", "Topology", "Queue", "HyperNode",
    }
)  # fmt: skip
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


def with_namespace(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if obj.get("kind") in CLUSTER_SCOPED_KINDS or not isinstance(meta, dict) or meta.get("namespace"):
        return obj
    return {**obj, "metadata": {**meta, "namespace": DEFAULT_NAMESPACE}}


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
        admitted = self.admission.admit(with_namespace(obj), reader)
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
