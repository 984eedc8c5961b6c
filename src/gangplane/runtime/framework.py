"""The framework: instantiates plugins in registry order and runs each phase over the plugins that implement it.

Plugins are bucketed by the Protocol they implement (``isinstance`` on runtime-checkable Protocols), the Python
analogue of upstream's type assertions in ``framework.New``. At most one status plugin may be registered.
"""

from __future__ import annotations

from typing import Any

from gangplane.api.trainer import TrainJob, TrainJobStatus
from gangplane.runtime import points as p
from gangplane.runtime.info import RuntimeInfo
from gangplane.runtime.reader import Reader
from gangplane.runtime.registry import Registry


class Framework:
    def __init__(self, registry: Registry, handle: p.Handle) -> None:
        self.plugins: list[Any] = [factory(handle) for _, factory in registry.items()]
        for name, plugin in zip(registry.names(), self.plugins, strict=True):
            if getattr(plugin, "name", None) != name:
                raise ValueError(
                    f"plugin registered as {name!r} calls itself {getattr(plugin, 'name', None)!r}"
                )
        self._default = [x for x in self.plugins if isinstance(x, p.DefaultPlugin)]
        self._validate = [x for x in self.plugins if isinstance(x, p.ValidatePlugin)]
        self._ml_policy = [x for x in self.plugins if isinstance(x, p.EnforceMLPolicyPlugin)]
        self._pod_group_policy = [x for x in self.plugins if isinstance(x, p.EnforcePodGroupPolicyPlugin)]
        self._pod_spec = [x for x in self.plugins if isinstance(x, p.EnforcePodSpecPlugin)]
        self._pre_build = [x for x in self.plugins if isinstance(x, p.PreBuildPlugin)]
        self._build = [x for x in self.plugins if isinstance(x, p.BuildPlugin)]
        self._status = [x for x in self.plugins if isinstance(x, p.StatusPlugin)]
        self._watch = [x for x in self.plugins if isinstance(x, p.WatchPlugin)]
        if len(self._status) > 1:
            raise ValueError("at most one status plugin may be registered")

    def run_default(self, info: RuntimeInfo, job: TrainJob) -> None:
        for plugin in self._default:
            plugin.default(info, job)

    def run_validate(
        self, info: RuntimeInfo, old: TrainJob | None, new: TrainJob, reader: Reader
    ) -> p.ValidationResult:
        result = p.ValidationResult()
        for plugin in self._validate:
            result.extend(plugin.validate(info, old, new, reader))
        return result

    def run_enforce_ml_policy(self, info: RuntimeInfo, job: TrainJob) -> None:
        for plugin in self._ml_policy:
            plugin.enforce_ml_policy(info, job)

    def run_enforce_pod_group_policy(self, info: RuntimeInfo, job: TrainJob) -> None:
        for plugin in self._pod_group_policy:
            plugin.enforce_pod_group_policy(info, job)

    def run_enforce_pod_spec(self, info: RuntimeInfo, job: TrainJob) -> None:
        for plugin in self._pod_spec:
            plugin.enforce_pod_spec(info, job)

    def run_pre_build(self, info: RuntimeInfo, job: TrainJob) -> None:
        for plugin in self._pre_build:
            plugin.pre_build(info, job)

    def run_build(self, info: RuntimeInfo, job: TrainJob, reader: Reader) -> list[p.Desired]:
        return [obj for plugin in self._build for obj in plugin.build(info, job, reader)]

    def run_status(self, job: TrainJob, reader: Reader) -> TrainJobStatus | None:
        return self._status[0].status(job, reader) if self._status else None

    def watches(self) -> list[p.WatchSource]:
        return [source for plugin in self._watch for source in plugin.watches()]
