"""``RuntimeInfo``: the accumulator the enforce phases edit and the build phase reads.

Port of upstream ``pkg/runtime/runtime.go`` ``Info``. A PodSet points into ``jobset_spec`` (the runtime's JobSet
spec after runtime patches), so editing a PodSet's pod template edits what the JobSet plugin later builds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gangplane.api.core import Container, PodTemplateSpec
from gangplane.api.jobset import JobSetSpec, ReplicatedJob
from gangplane.api.trainer import MLPolicy, PodGroupPolicy


@dataclass
class PodSet:
    """One replicated job seen as a set of identical pods."""

    name: str
    ancestor: str | None
    count: int
    replicated_job: ReplicatedJob
    single_pod_requests: dict[str, str] = field(default_factory=dict)
    endpoints: list[str] = field(default_factory=list)

    @property
    def template(self) -> PodTemplateSpec:
        return self.replicated_job.template.spec.template

    def container(self, name: str) -> Container | None:
        return next((c for c in self.template.spec.containers if c.name == name), None)

    def init_container(self, name: str) -> Container | None:
        return next((c for c in self.template.spec.init_containers or [] if c.name == name), None)


@dataclass
class SchedulerHints:
    """Labels and annotations stamped on every pod template (upstream ``Info.Scheduler``)."""

    pod_labels: dict[str, str] = field(default_factory=dict)
    pod_annotations: dict[str, str] = field(default_factory=dict)
    # Pod sets that run outside the gang (see docs/gang-deadlock.md): they get no gang labels or annotations.
    excluded_pod_sets: set[str] = field(default_factory=set)


@dataclass
class RuntimeInfo:
    labels: dict[str, str]
    annotations: dict[str, str]
    ml_policy: MLPolicy | None
    pod_group_policy: PodGroupPolicy | None
    jobset_spec: JobSetSpec
    pod_sets: list[PodSet]
    scheduler: SchedulerHints = field(default_factory=SchedulerHints)
    warnings: list[str] = field(default_factory=list)

    def pod_set(self, name: str) -> PodSet | None:
        return next((p for p in self.pod_sets if p.name == name), None)

    def trainer_pod_set(self) -> PodSet | None:
        return next((p for p in self.pod_sets if p.ancestor == "trainer"), None)

    def scheduler_name(self) -> str | None:
        """The ``schedulerName`` of the trainer pods (or the first pod set that sets one)."""
        ordered = sorted(self.pod_sets, key=lambda p: p.ancestor != "trainer")
        return next((p.template.spec.scheduler_name for p in ordered if p.template.spec.scheduler_name), None)
