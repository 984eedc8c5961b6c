"""Fluent builders for test manifests (after Trainer's ``pkg/util/testing/wrapper.go``).

Builders assemble wire dicts (camelCase) so tests can also feed them through ``serde``; ``obj()`` returns the
typed model, ``dict()`` a deep copy of the wire form.
"""

from __future__ import annotations

import copy
from typing import Any, Self

from gangplane.api.trainer import (
    ANCESTOR_LABEL,
    API_VERSION,
    ClusterTrainingRuntime,
    TrainingRuntime,
    TrainJob,
)


class TrainJobBuilder:
    def __init__(self, name: str = "job", namespace: str = "default") -> None:
        self._obj: dict[str, Any] = {
            "apiVersion": API_VERSION,
            "kind": "TrainJob",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"runtimeRef": {"name": "torch-distributed"}},
        }

    @property
    def _spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self._obj["spec"]
        return spec

    def _trainer(self) -> dict[str, Any]:
        trainer: dict[str, Any] = self._spec.setdefault("trainer", {})
        return trainer

    def runtime_ref(self, name: str, kind: str | None = None, api_group: str | None = None) -> Self:
        ref: dict[str, Any] = {"name": name}
        ref |= {"kind": kind} if kind is not None else {}
        ref |= {"apiGroup": api_group} if api_group is not None else {}
        self._spec["runtimeRef"] = ref
        return self

    def trainer(self, **fields: Any) -> Self:
        """Set ``spec.trainer`` fields by wire name (``numNodes=2``, ``image="x"``)."""
        self._trainer().update(fields)
        return self

    def num_nodes(self, n: int) -> Self:
        return self.trainer(numNodes=n)

    def env(self, *names: str) -> Self:
        return self.trainer(env=[{"name": n, "value": "v"} for n in names])

    def initializer(self, source: str, **fields: Any) -> Self:
        self._spec.setdefault("initializer", {})[source] = fields
        return self

    def suspend(self, value: bool = True) -> Self:
        self._spec["suspend"] = value
        return self

    def deadline(self, seconds: int) -> Self:
        self._spec["activeDeadlineSeconds"] = seconds
        return self

    def managed_by(self, value: str) -> Self:
        self._spec["managedBy"] = value
        return self

    def patch(self, manager: str, *rjobs: dict[str, Any], time: str | None = None) -> Self:
        """Append a runtime patch; ``rjobs`` from ``patch_rjob``."""
        entry: dict[str, Any] = {"manager": manager}
        entry |= {"time": time} if time is not None else {}
        if rjobs:
            entry["trainingRuntimeSpec"] = {"template": {"spec": {"replicatedJobs": list(rjobs)}}}
        self._spec.setdefault("runtimePatches", []).append(entry)
        return self

    def set(self, path: str, value: Any) -> Self:
        """Set any field by dotted wire path, e.g. ``set("metadata.name", "x")``."""
        *parents, last = path.split(".")
        node = self._obj
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
        return self

    def dict(self) -> dict[str, Any]:
        return copy.deepcopy(self._obj)

    def obj(self) -> TrainJob:
        return TrainJob.model_validate(self.dict())


def patch_rjob(name: str = "node", **pod_spec: Any) -> dict[str, Any]:
    """A runtime patch ``replicatedJobs[]`` entry with a pod-spec patch (wire field names)."""
    entry: dict[str, Any] = {"name": name}
    if pod_spec:
        entry["template"] = {"spec": {"template": {"spec": pod_spec}}}
    return entry


class RuntimeBuilder:
    def __init__(self, name: str = "runtime", *, cluster: bool = True) -> None:
        self._cluster = cluster
        self._obj: dict[str, Any] = {
            "apiVersion": API_VERSION,
            "kind": "ClusterTrainingRuntime" if cluster else "TrainingRuntime",
            "metadata": {"name": name} if cluster else {"name": name, "namespace": "default"},
            "spec": {"template": {"spec": {"replicatedJobs": []}}},
        }

    @property
    def _spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self._obj["spec"]
        return spec

    def label(self, key: str, value: str) -> Self:
        self._obj["metadata"].setdefault("labels", {})[key] = value
        return self

    def ml_policy(self, **fields: Any) -> Self:
        """Set ``spec.mlPolicy`` fields by wire name (``torch={}``, ``numNodes=2``)."""
        self._spec.setdefault("mlPolicy", {}).update(fields)
        return self

    def coscheduling(self, timeout: int | None = None) -> Self:
        source = {"scheduleTimeoutSeconds": timeout} if timeout is not None else {}
        self._spec.setdefault("podGroupPolicy", {})["coscheduling"] = source
        return self

    def volcano(self, **network_topology: Any) -> Self:
        source = {"networkTopology": network_topology} if network_topology else {}
        self._spec.setdefault("podGroupPolicy", {})["volcano"] = source
        return self

    def rjob(
        self,
        name: str,
        *containers: str,
        ancestor: str | None = None,
        scheduler: str | None = None,
        job: dict[str, Any] | None = None,
        **fields: Any,
    ) -> Self:
        """Append a replicated job with the named containers; ``job`` are Job-spec wire fields
        (``parallelism``), ``fields`` replicated-job wire fields (``replicas``, ``dependsOn``)."""
        pod: dict[str, Any] = {"containers": [{"name": c, "image": "busybox"} for c in containers]}
        pod |= {"schedulerName": scheduler} if scheduler is not None else {}
        template: dict[str, Any] = {"spec": {**(job or {}), "template": {"spec": pod}}}
        if ancestor is not None:
            template["metadata"] = {"labels": {ANCESTOR_LABEL: ancestor}}
        self._spec["template"]["spec"]["replicatedJobs"].append(
            {"name": name, **fields, "template": template}
        )
        return self

    def trainer_job(self, name: str = "node", **fields: Any) -> Self:
        """The usual ``node`` replicated job labelled as the trainer ancestor."""
        return self.rjob(name, "node", ancestor="trainer", **fields)

    def jobset(self, **fields: Any) -> Self:
        """Set JobSet spec fields by wire name (``startupPolicy={...}``)."""
        self._spec["template"]["spec"].update(fields)
        return self

    def dict(self) -> dict[str, Any]:
        return copy.deepcopy(self._obj)

    def obj(self) -> TrainingRuntime:
        cls = ClusterTrainingRuntime if self._cluster else TrainingRuntime
        return cls.model_validate(self.dict())
