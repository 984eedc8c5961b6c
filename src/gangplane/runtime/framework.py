"""The framework: instantiates plugins in registry order and runs each phase over the plugins that implement it.

Plugins are bucketed by the Protocol they implement (``isinstance`` on runtime-checkable Protocols), the Python
analogue of upstream's type assertions in ``framework.New``. At most one status plugin may be registered.
"""

from __future__ import annotations

from typing import Any, TypeVar

from gangplane.api.trainer import TrainJob, TrainJobStatus
from gangplane.runtime import points as p
from gangplane.runtime.info import RuntimeInfo
from gangplane.runtime.reader import Reader
from gangplane.runtime.registry import Registry

T = TypeVar("T")


class Framework:
    def __init__(self, registry: Registry, handle: p.Handle) -> None:
        self.plugins: list[Any] = [factory(handle) for _, factory in registry.items()]
        for name, plugin in zip(registry.names(), self.plugins, strict=True):
            if getattr(plugin, "name", None) != name:
                raise ValueError(f"plugin registered as {name!r} calls itself {getattr(plugin, 'name', None)!r}")
        if len(self._of(p.StatusPlugin)) > 1:
            raise ValueError("at most one status plugin may be registered")

    def _of(self, point: type[T]) -> list[T]:
        return [plugin for plugin in self.plugins if isinstance(plugin, point)]

    def run_default(self, info: RuntimeInfo, job: TrainJob) -> None:
        for plugin in self._of(p.DefaultPlugin):
            plugin.default(info, job)

    def run_validate(
        self, info: RuntimeInfo, old: TrainJob | None, new: TrainJob, reader: Reader
    ) -> p.ValidationResult:
        result = p.ValidationResult()
        for plugin in self._of(p.ValidatePlugin):
            result.extend(plugin.validate(info, old, new, reader))
        return result

    def run_enforce_ml_policy(self, info: RuntimeInfo, job: TrainJob) -> None:
        for plugin in self._of(p.EnforceMLPolicyPlugin):
            plugin.enforce_ml_policy(info, job)

    def run_enforce_pod_group_policy(self, info: RuntimeInfo, job: TrainJob) -> None:
        for plugin in self._of(p.EnforcePodGroupPolicyPlugin):
            plugin.enforce_pod_group_policy(info, job)

    def run_enforce_pod_spec(self, info: RuntimeInfo, job: TrainJob) -> None:
        for plugin in self._of(p.EnforcePodSpecPlugin):
            plugin.enforce_pod_spec(info, job)

    def run_pre_build(self, info: RuntimeInfo, job: TrainJob) -> None:
        for plugin in self._of(p.PreBuildPlugin):
            plugin.pre_build(info, job)

    def run_build(self, info: RuntimeInfo, job: TrainJob, reader: Reader) -> list[p.Desired]:
        return [obj for plugin in self._of(p.BuildPlugin) for obj in plugin.build(info, job, reader)]

    def run_status(self, job: TrainJob, reader: Reader) -> TrainJobStatus | None:
        plugins = self._of(p.StatusPlugin)
        return plugins[0].status(job, reader) if plugins else None

    def watches(self) -> list[p.WatchSource]:
        return [source for plugin in self._of(p.WatchPlugin) for source in plugin.watches()]
