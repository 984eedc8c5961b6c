"""Wiring: the reconcilers as ``Controller``s on a ``Manager``'s shared informers, with their watches.

``build_controllers`` registers every reconciler the embedded cluster runs (TrainJob, JobSet, Job);
``build_trainjob_controller`` only the TrainJob controller, which is all ``gangplane controller --kubeconfig``
runs against a real API server (JobSet and Job controllers exist there already). Coscheduling PodGroup status
is written by the embedded scheduler (``schedulers/coscheduling.py`` ``pod_group_status``), not here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gangplane.api import trainer as t
from gangplane.client.controller import Controller, Manager, controller_owner, own_key
from gangplane.client.informer import Key
from gangplane.controllers.job import JobReconciler
from gangplane.controllers.jobset import JobSetReconciler
from gangplane.controllers.trainjob import TrainJobReconciler
from gangplane.runtime.framework import Framework
from gangplane.runtime.plugins import default_registry
from gangplane.runtime.points import Handle
from gangplane.runtime.registry import Registry
from gangplane.store import catalog
from gangplane.store.base import Object, ResourceType

RUNTIME_INDEX = "runtimeRef"


def runtime_ref_key(obj: Object) -> Iterable[str]:
    """Index value of a TrainJob: ``<Kind>/<namespace>/<name>`` of the runtime it refers to."""
    meta, ref = obj.get("metadata") or {}, (obj.get("spec") or {}).get("runtimeRef") or {}
    kind = ref.get("kind") or t.CLUSTER_TRAINING_RUNTIME_KIND
    namespace = meta.get("namespace", "") if kind == t.TRAINING_RUNTIME_KIND else ""
    return (f"{kind}/{namespace}/{ref.get('name', '')}",)


def _everything(_: ResourceType) -> bool:
    return True


def build_trainjob_controller(
    manager: Manager,
    *,
    registry: Registry | None = None,
    workers: int = 1,
    served: Callable[[ResourceType], bool] = _everything,
) -> Controller:
    """The TrainJob controller, watching TrainJobs, their JobSets, the runtimes they use and every kind a
    plugin asks to watch (owned children map to their TrainJob). ``served`` filters the plugin watches to
    the kinds the API server has (upstream skips a plugin watch whose CRD is not installed); an informer on a
    missing kind would never sync."""
    framework = Framework(registry or default_registry(), Handle(manager.clock))
    controller = manager.add(
        Controller(
            TrainJobReconciler(manager.store, manager.clock, framework), manager.clock, workers=workers
        )
    )
    trainjobs = manager.informer(catalog.TRAINJOBS)
    trainjobs.add_index(RUNTIME_INDEX, runtime_ref_key)
    controller.watch(trainjobs, own_key)
    to_owner = controller_owner(t.TRAINJOB_KIND)
    for source in framework.watches():
        rt = catalog.by_kind(source.api_version, source.kind)
        if rt is not None and source.owned and served(rt):
            controller.watch(manager.informer(rt), to_owner)
    if all(s.kind != "JobSet" for s in framework.watches()):
        controller.watch(manager.informer(catalog.JOBSETS), to_owner)

    def users(runtime: Object) -> Iterable[Key]:
        meta = runtime.get("metadata") or {}
        value = f"{runtime.get('kind')}/{meta.get('namespace', '')}/{meta.get('name', '')}"
        return [(str(j["metadata"].get("namespace", "")), str(j["metadata"]["name"]))
                for j in trainjobs.by_index(RUNTIME_INDEX, value)]  # fmt: skip

    for rt in (catalog.TRAINING_RUNTIMES, catalog.CLUSTER_TRAINING_RUNTIMES):
        controller.watch(manager.informer(rt), users)
    return controller


def build_controllers(
    manager: Manager, *, registry: Registry | None = None, workers: int = 1
) -> list[Controller]:
    """Every controller of the embedded cluster, added to ``manager`` (start it to run them)."""
    trainjob = build_trainjob_controller(manager, registry=registry, workers=workers)
    jobset = manager.add(
        Controller(JobSetReconciler(manager.store, manager.clock), manager.clock, workers=workers)
    )
    jobset.watch(manager.informer(catalog.JOBSETS), own_key)
    for rt in (catalog.JOBS, catalog.SERVICES):
        jobset.watch(manager.informer(rt), controller_owner("JobSet"))
    job = manager.add(Controller(JobReconciler(manager.store, manager.clock), manager.clock, workers=workers))
    job.watch(manager.informer(catalog.JOBS), own_key)
    job.watch(manager.informer(catalog.PODS), controller_owner("Job"))
    return [trainjob, jobset, job]
