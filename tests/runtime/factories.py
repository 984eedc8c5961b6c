"""Small manifest factories for runtime tests, and a one-call build through the default plugins."""

from __future__ import annotations

import copy
from typing import Any

from gangplane.api.trainer import ClusterTrainingRuntime, TrainJob
from gangplane.clock import ManualClock
from gangplane.runtime.core import Built, new_objects
from gangplane.runtime.framework import Framework
from gangplane.runtime.plugins import default_registry
from gangplane.runtime.points import Handle
from gangplane.runtime.reader import StaticReader


def container(
    name: str, requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None
) -> dict:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    return {"name": name, "image": "busybox", **({"resources": resources} if resources else {})}


def rjob(name: str, ancestor: str | None, *containers: dict, **extra: Any) -> dict:
    meta = {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": ancestor}} if ancestor else {}
    pod_spec = {"containers": list(containers), **extra.pop("pod", {})}
    return {"name": name, **extra, "template": {"metadata": meta, "spec": {"template": {"spec": pod_spec}}}}


def runtime(
    *rjobs: dict, ml_policy: dict | None = None, pod_group_policy: dict | None = None, **meta: Any
) -> dict:
    spec: dict[str, Any] = {"template": {"spec": {"replicatedJobs": list(rjobs)}}}
    if meta:
        spec["template"]["metadata"] = meta
    if ml_policy is not None:
        spec["mlPolicy"] = ml_policy
    if pod_group_policy is not None:
        spec["podGroupPolicy"] = pod_group_policy
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "rt"},
        "spec": spec,
    }


def trainjob(name: str = "job", **spec: Any) -> dict:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "default", "uid": "uid-1"},
        "spec": {"runtimeRef": {"name": "rt"}, **spec},
    }


def build(job: dict, rt: dict, *existing: dict) -> Built:
    framework = Framework(default_registry(), Handle(ManualClock()))
    return new_objects(
        framework,
        TrainJob.model_validate(copy.deepcopy(job)),
        ClusterTrainingRuntime.model_validate(copy.deepcopy(rt)),
        StaticReader(existing),
    )


def objects_by_kind(built: Built) -> dict[str, dict]:
    return {d.object.to_dict()["kind"]: d.object.to_dict() for d in built.objects}


def torch_node() -> dict:
    return rjob("node", "trainer", container("node", {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": 1}))
