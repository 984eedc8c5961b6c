"""The framework: registry rules, fixed plugin order, phase order."""

from __future__ import annotations

from typing import ClassVar

import pytest
from factories import runtime, torch_node, trainjob

from gangplane.api.trainer import ClusterTrainingRuntime, TrainJob
from gangplane.clock import ManualClock
from gangplane.runtime import points
from gangplane.runtime.core import new_objects
from gangplane.runtime.framework import Framework
from gangplane.runtime.info import RuntimeInfo
from gangplane.runtime.plugins import default_registry
from gangplane.runtime.reader import Reader, StaticReader
from gangplane.runtime.registry import PluginContractError, Registry, plugin

HANDLE = points.Handle(ManualClock())


def test_default_registry_order_is_fixed() -> None:
    assert default_registry().names()[:5] == ["Torch", "MPI", "JAX", "XGBoost", "PlainML"]
    names = default_registry().names()
    assert names.index("CoScheduling") < names.index("JobSet") < names.index("TrainJobStatus")
    assert names[-2:] == ["JobSet", "TrainJobStatus"]


def test_every_plugin_implements_an_extension_point_and_names_match() -> None:
    framework = Framework(default_registry(), HANDLE)
    for instance, entry in zip(framework.plugins, default_registry().entries(), strict=True):
        assert entry.phases and instance.name == entry.name
        assert all(isinstance(instance, phase.protocol) for phase in entry.phases), instance.name


def test_duplicate_names_are_rejected() -> None:
    registry = default_registry()
    with pytest.raises(ValueError, match="already registered"):
        registry.merge(Registry([plugin("Torch", lambda h: None).at()]))


def test_misnamed_plugin_is_rejected() -> None:
    class Liar:
        name: ClassVar[str] = "Other"

        def __init__(self, handle: points.Handle) -> None: ...

    with pytest.raises(PluginContractError, match="calls itself"):
        Registry([plugin("Mine", Liar).at()])


class Recorder:
    """Records the phases it sees, in order, under its own name."""

    calls: ClassVar[list[str]] = []

    def __init__(self, handle: points.Handle) -> None: ...

    def _note(self, phase: str) -> None:
        self.calls.append(f"{self.name}:{phase}")

    def enforce_ml_policy(self, info: RuntimeInfo, job: TrainJob) -> None:
        self._note("ml")

    def enforce_pod_group_policy(self, info: RuntimeInfo, job: TrainJob) -> None:
        self._note("podgroup")

    def enforce_pod_spec(self, info: RuntimeInfo, job: TrainJob) -> None:
        self._note("podspec")

    def pre_build(self, info: RuntimeInfo, job: TrainJob) -> None:
        self._note("prebuild")

    def build(self, info: RuntimeInfo, job: TrainJob, reader: Reader) -> list[points.Desired]:
        self._note("build")
        return []


class First(Recorder):
    name: ClassVar[str] = "First"


class Second(Recorder):
    name: ClassVar[str] = "Second"


def test_phases_run_in_order_and_plugins_in_registry_order() -> None:
    Recorder.calls.clear()
    phases = (points.ENFORCE_ML_POLICY, points.ENFORCE_POD_GROUP_POLICY, points.ENFORCE_POD_SPEC,
              points.PRE_BUILD, points.BUILD)  # fmt: skip
    entries = [plugin("Second", Second).at(*phases), plugin("First", First).at(*phases)]
    framework = Framework(Registry(entries), HANDLE)
    job = TrainJob.model_validate(trainjob())
    rt = ClusterTrainingRuntime.model_validate(runtime(torch_node()))
    new_objects(framework, job, rt, StaticReader())
    phases = ["ml", "podgroup", "podspec", "prebuild", "build"]
    assert Recorder.calls == [f"{name}:{phase}" for phase in phases for name in ("Second", "First")]


def test_at_most_one_status_plugin() -> None:
    registry = default_registry()
    status_factory = registry["TrainJobStatus"].factory

    class Another:
        name: ClassVar[str] = "AnotherStatus"
        status = status_factory(HANDLE).status

        def __init__(self, handle: points.Handle) -> None: ...

    with pytest.raises(ValueError, match="one status plugin"):
        Framework(registry.merge(Registry([plugin("AnotherStatus", Another).at(points.STATUS)])), HANDLE)
