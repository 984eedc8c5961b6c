"""The framework: instantiates plugins in registry order and runs each phase over the plugins registered at it.

Plugins are bucketed by the phases their registry entry declares (``runtime/registry.py``), the explicit form
of upstream's type assertions in ``framework.New``; the registry has checked each class against those phases'
Protocols, and a plugin built by a function rather than a class is checked here, on its instance. At most one
status plugin may be registered.
"""

from __future__ import annotations

import inspect
from typing import Any, cast

from gangplane.api.trainer import TrainJob, TrainJobStatus
from gangplane.runtime import points as p
from gangplane.runtime.info import RuntimeInfo
from gangplane.runtime.reader import Reader
from gangplane.runtime.registry import Entry, Registry, check_contract


class Framework:
    def __init__(self, registry: Registry, handle: p.Handle) -> None:
        entries = registry.entries()
        self.plugins: list[Any] = [entry.factory(handle) for entry in entries]
        for entry, plugin in zip(entries, self.plugins, strict=True):
            if not inspect.isclass(entry.factory):
                check_contract(type(plugin), entry)
        self._default = self._at(entries, p.DEFAULT)
        self._validate = self._at(entries, p.VALIDATE)
        self._ml_policy = self._at(entries, p.ENFORCE_ML_POLICY)
        self._pod_group_policy = self._at(entries, p.ENFORCE_POD_GROUP_POLICY)
        self._pod_spec = self._at(entries, p.ENFORCE_POD_SPEC)
        self._pre_build = self._at(entries, p.PRE_BUILD)
        self._build = self._at(entries, p.BUILD)
        self._status = self._at(entries, p.STATUS)
        self._watch = self._at(entries, p.WATCH)
        if len(self._status) > 1:
            raise ValueError("at most one status plugin may be registered")

    def _at(self, entries: list[Entry], phase: p.Phase[p.P]) -> list[p.P]:
        """The plugins registered at ``phase``, in registry order (typed by the registry's check)."""
        return [cast(p.P, x) for e, x in zip(entries, self.plugins, strict=True) if e.implements(phase)]

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
