"""Wiring: the reconcilers as ``Controller``s on a ``Manager``'s shared informers, with their watches.

``build_controllers`` registers every reconciler the embedded cluster runs (TrainJob, JobSet, Job, the
pod garbage collector for terminating pods whose node agent is gone, the node lifecycle and taint eviction
controllers);
``build_trainjob_controller`` only the TrainJob controller, which is all ``gangplane controller --kubeconfig``
runs against a real API server (JobSet and Job controllers exist there already). Coscheduling PodGroup status
is written by the embedded scheduler (``schedulers/coscheduling.py`` ``pod_group_status``), not here.

The TrainJob controller also watches what its ``gangplane.dev/Waiting`` condition is computed from
(``controllers/pending.py``): its pods (through the ``jobset.sigs.k8s.io/jobset-name`` label, only when a
pod's scheduling state changes), KAI PodGroups (owned by the JobSet of the same name) and Kueue Workloads
(controlled by the TrainJob). Volcano and Coscheduling PodGroups come in through the plugins' watches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gangplane.api import trainer as t
from gangplane.api.jobset import JOBSET_NAME_LABEL
from gangplane.client.cache import CacheReads
from gangplane.client.controller import Controller, Manager, controller_owner, own_key
from gangplane.client.informer import Informer, Key
from gangplane.controllers.job import JobReconciler
from gangplane.controllers.jobset import JobSetReconciler
from gangplane.controllers.node_eviction import EvictionRates
from gangplane.controllers.node_health import NODE_MONITOR_GRACE_SECONDS
from gangplane.controllers.node_lifecycle import build_node_lifecycle
from gangplane.controllers.pending import QueuePositions
from gangplane.controllers.podgc import build_pod_gc
from gangplane.controllers.taint_eviction import build_taint_eviction
from gangplane.controllers.trainjob import TrainJobReconciler
from gangplane.runtime.framework import Framework
from gangplane.runtime.plugins import default_registry
from gangplane.runtime.points import Handle
from gangplane.runtime.registry import Registry
from gangplane.store import catalog
from gangplane.store.base import EventType, ListOptions, Object, ResourceType

RUNTIME_INDEX = "runtimeRef"


def runtime_ref_key(obj: Object) -> Iterable[str]:
    """Index value of a TrainJob: ``<Kind>/<namespace>/<name>`` of the runtime it refers to."""
    meta, ref = obj.get("metadata") or {}, (obj.get("spec") or {}).get("runtimeRef") or {}
    kind = ref.get("kind") or t.CLUSTER_TRAINING_RUNTIME_KIND
    namespace = meta.get("namespace", "") if kind == t.TRAINING_RUNTIME_KIND else ""
    return (f"{kind}/{namespace}/{ref.get('name', '')}",)


def _everything(_: ResourceType) -> bool:
    return True


def _pod_scheduling(pod: Object) -> tuple[object, ...]:
    """What of a pod the waiting reason reads: phase, node, gates, deletion, PodScheduled, container waits."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    scheduled = [c for c in status.get("conditions") or () if c.get("type") == "PodScheduled"]
    containers = [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]
    waits = [(s.get("state") or {}).get("waiting") for s in containers]
    return (status.get("phase"), spec.get("nodeName"), spec.get("schedulingGates"),
            meta.get("deletionTimestamp"), scheduled, waits)  # fmt: skip


def jobset_pod_key(pod: Object) -> Iterable[Key]:
    """A pod's TrainJob: the JobSet named by its ``jobset.sigs.k8s.io/jobset-name`` label (same name)."""
    meta = pod.get("metadata") or {}
    name = (meta.get("labels") or {}).get(JOBSET_NAME_LABEL)
    return ((str(meta.get("namespace") or ""), str(name)),) if name else ()


def jobset_owner(obj: Object) -> Iterable[Key]:
    """A KAI PodGroup's TrainJob: its JobSet owner (an owner reference, not a controller one)."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        if ref.get("kind") == "JobSet":
            yield str(meta.get("namespace") or ""), str(ref.get("name"))


def watch_pods(controller: Controller, pods: Informer) -> None:
    """Requeue a pod's TrainJob when the pod appears, goes, or changes in what ``_pod_scheduling`` reads;
    status churn that does not (readiness probes, restarts of a running pod) is not forwarded."""

    def handler(kind: EventType, pod: Object, old: Object | None) -> None:
        if kind is EventType.MODIFIED and old is not None and _pod_scheduling(old) == _pod_scheduling(pod):
            return
        for key in jobset_pod_key(pod):
            controller.enqueue(key)

    pods.add_handler(handler)


def build_trainjob_controller(
    manager: Manager,
    *,
    registry: Registry | None = None,
    workers: int = 1,
    served: Callable[[ResourceType], bool] = _everything,
    pod_selector: str = JOBSET_NAME_LABEL,
    positions: QueuePositions | None = None,
) -> Controller:
    """The TrainJob controller, watching TrainJobs, their JobSets, the runtimes they use, every kind a
    plugin asks to watch (owned children map to their TrainJob) and the inputs of the waiting condition.
    ``served`` filters the plugin, PodGroup and Workload watches to the kinds the API server has (upstream
    skips a plugin watch whose CRD is not installed); an informer on a missing kind would never sync.
    ``pod_selector`` narrows the pod informer (default: JobSet pods only); ``""`` shares the unfiltered
    one other controllers use. ``positions`` tells waiting Kueue Workloads' places in their queues.
    The reconciler reads from the manager's informer caches (``client/cache.py``), never from the server."""
    framework = Framework(registry or default_registry(), Handle(manager.clock))
    pods = ListOptions(label_selector=pod_selector)
    reads = CacheReads(manager, options={catalog.PODS: pods}, served=served)
    reconciler = TrainJobReconciler(manager.store, manager.clock, framework, positions, reads=reads)
    controller = manager.add(Controller(reconciler, manager.clock, workers=workers))
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
    watch_pods(controller, manager.informer(catalog.PODS, pods))
    for rt, mapper in ((catalog.KAI_PODGROUPS, jobset_owner), (catalog.WORKLOADS, to_owner)):
        if served(rt):
            controller.watch(manager.informer(rt), mapper)

    def users(runtime: Object) -> Iterable[Key]:
        meta = runtime.get("metadata") or {}
        value = f"{runtime.get('kind')}/{meta.get('namespace', '')}/{meta.get('name', '')}"
        return [(str(j["metadata"].get("namespace", "")), str(j["metadata"]["name"]))
                for j in trainjobs.by_index(RUNTIME_INDEX, value)]  # fmt: skip

    for rt in (catalog.TRAINING_RUNTIMES, catalog.CLUSTER_TRAINING_RUNTIMES):
        controller.watch(manager.informer(rt), users)
    return controller


def build_controllers(
    manager: Manager,
    *,
    registry: Registry | None = None,
    workers: int = 1,
    positions: QueuePositions | None = None,
    node_monitor_grace: float = NODE_MONITOR_GRACE_SECONDS,
    eviction_rates: EvictionRates | None = None,
) -> list[Controller]:
    """Every controller of the embedded cluster, added to ``manager`` (start it to run them);
    ``node_monitor_grace`` is kube-controller-manager's ``--node-monitor-grace-period``, ``eviction_rates``
    its ``--node-eviction-rate``, ``--secondary-node-eviction-rate`` and ``--large-cluster-size-threshold``."""
    trainjob = build_trainjob_controller(
        manager, registry=registry, workers=workers, pod_selector="", positions=positions
    )
    jobset = manager.add(
        Controller(JobSetReconciler(manager.store, manager.clock), manager.clock, workers=workers)
    )
    jobset.watch(manager.informer(catalog.JOBSETS), own_key)
    for rt in (catalog.JOBS, catalog.SERVICES):
        jobset.watch(manager.informer(rt), controller_owner("JobSet"))
    job = manager.add(Controller(JobReconciler(manager.store, manager.clock), manager.clock, workers=workers))
    job.watch(manager.informer(catalog.JOBS), own_key)
    job.watch(manager.informer(catalog.PODS), controller_owner("Job"))
    lifecycle = build_node_lifecycle(manager, grace=node_monitor_grace, rates=eviction_rates)
    nodes = [lifecycle, build_taint_eviction(manager)]
    return [trainjob, jobset, job, build_pod_gc(manager), *nodes]
