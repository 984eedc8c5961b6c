"""The runtime extension points: one parent ``Plugin`` and one single-method Protocol per phase.

Port of upstream ``pkg/runtime/framework/interface.go``. The framework calls the phases in this order, and
within a phase calls plugins in registry order (upstream iterates a Go map, so its order is random):

1. ``default``                  admission, mutating: fill in what a webhook would (e.g. Kueue's suspend).
2. ``validate``                 admission: return every field error and warning; never raise for bad input.
3. ``enforce_ml_policy``        reconcile: apply ``mlPolicy`` and the TrainJob's trainer values to the Info.
4. ``enforce_pod_group_policy`` reconcile: stamp scheduler labels/annotations (counts are final by now).
5. ``enforce_pod_spec``         reconcile: other pod-spec concerns.
6. ``pre_build``                reconcile: endpoints, parallelism and completions.
7. ``build``                    reconcile: return desired objects, in apply order.
8. ``status``                   reconcile: compute the TrainJob status from children (one plugin only).

Separately, ``watches`` tells the controller which child kinds to watch for a plugin.

Contract for every phase: compute from the arguments; no I/O. ``validate``, ``build`` and ``status`` get a
read-only ``Reader``; only the shell (renderer or reconciler) writes. Phases 3-6 may edit the ``RuntimeInfo`` they are
given and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from gangplane.api.base import ApiModel
from gangplane.api.trainer import TrainJob, TrainJobStatus
from gangplane.clock import Clock
from gangplane.errors import FieldError
from gangplane.runtime.info import RuntimeInfo
from gangplane.runtime.reader import Reader


@dataclass(frozen=True)
class Handle:
    """What every plugin is constructed with."""

    clock: Clock


@dataclass
class ValidationResult:
    errors: list[FieldError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def extend(self, other: ValidationResult) -> None:
        self.errors.extend(other.errors)
        self.warnings.extend(other.warnings)


class AppliedBy(StrEnum):
    """Who creates a desired object on a real cluster."""

    TRAINER = "trainer"  # the TrainJob controller applies it
    KUEUE = "kueue"  # Kueue derives it from the TrainJob (Workload)
    KAI_PODGROUPER = "kai-podgrouper"  # KAI's pod-grouper derives it from the JobSet


@dataclass(frozen=True)
class Desired:
    """A desired object and who applies it."""

    object: ApiModel
    applied_by: AppliedBy = AppliedBy.TRAINER


@dataclass(frozen=True)
class WatchSource:
    """A kind whose events requeue TrainJobs: owned children map to their owner through ownerReferences."""

    api_version: str
    kind: str
    owned: bool = True


class Plugin(Protocol):
    name: ClassVar[str]


@runtime_checkable
class DefaultPlugin(Plugin, Protocol):
    def default(self, info: RuntimeInfo, job: TrainJob) -> None:
        """Mutate ``job`` in place as an admission webhook would. Called before ``validate``."""
        ...


@runtime_checkable
class ValidatePlugin(Plugin, Protocol):
    def validate(
        self, info: RuntimeInfo, old: TrainJob | None, new: TrainJob, reader: Reader
    ) -> ValidationResult:
        """Check ``new`` (and the transition from ``old`` on update). Sees pre-enforce counts."""
        ...


@runtime_checkable
class EnforceMLPolicyPlugin(Plugin, Protocol):
    def enforce_ml_policy(self, info: RuntimeInfo, job: TrainJob) -> None: ...


@runtime_checkable
class EnforcePodGroupPolicyPlugin(Plugin, Protocol):
    def enforce_pod_group_policy(self, info: RuntimeInfo, job: TrainJob) -> None: ...


@runtime_checkable
class EnforcePodSpecPlugin(Plugin, Protocol):
    def enforce_pod_spec(self, info: RuntimeInfo, job: TrainJob) -> None: ...


@runtime_checkable
class PreBuildPlugin(Plugin, Protocol):
    def pre_build(self, info: RuntimeInfo, job: TrainJob) -> None: ...


@runtime_checkable
class BuildPlugin(Plugin, Protocol):
    def build(self, info: RuntimeInfo, job: TrainJob, reader: Reader) -> list[Desired]:
        """Desired objects, or ``[]`` when the existing ones must be left alone (e.g. a running PodGroup)."""
        ...


@runtime_checkable
class StatusPlugin(Plugin, Protocol):
    def status(self, job: TrainJob, reader: Reader) -> TrainJobStatus | None:
        """The new status computed from children; ``None`` when nothing can be said."""
        ...


@runtime_checkable
class WatchPlugin(Plugin, Protocol):
    def watches(self) -> list[WatchSource]: ...


P = TypeVar("P", contravariant=True)


@dataclass(frozen=True)
class Phase(Generic[P]):
    """An extension point: the method the framework calls and the Protocol that types it. ``Phase[X]`` is
    contravariant, so registering a plugin class ``C`` at ``Phase[BuildPlugin]`` type-checks only when ``C``
    satisfies ``BuildPlugin`` (method name, arity and types): see ``runtime/registry.py`` ``plugin``."""

    method: str
    protocol: type


DEFAULT = Phase[DefaultPlugin]("default", DefaultPlugin)
VALIDATE = Phase[ValidatePlugin]("validate", ValidatePlugin)
ENFORCE_ML_POLICY = Phase[EnforceMLPolicyPlugin]("enforce_ml_policy", EnforceMLPolicyPlugin)
ENFORCE_POD_GROUP_POLICY = Phase[EnforcePodGroupPolicyPlugin](
    "enforce_pod_group_policy", EnforcePodGroupPolicyPlugin
)
ENFORCE_POD_SPEC = Phase[EnforcePodSpecPlugin]("enforce_pod_spec", EnforcePodSpecPlugin)
PRE_BUILD = Phase[PreBuildPlugin]("pre_build", PreBuildPlugin)
BUILD = Phase[BuildPlugin]("build", BuildPlugin)
STATUS = Phase[StatusPlugin]("status", StatusPlugin)
WATCH = Phase[WatchPlugin]("watches", WatchPlugin)
PHASES: tuple[Phase[Any], ...] = (
    DEFAULT, VALIDATE, ENFORCE_ML_POLICY, ENFORCE_POD_GROUP_POLICY, ENFORCE_POD_SPEC, PRE_BUILD, BUILD, STATUS, WATCH
)  # fmt: skip
