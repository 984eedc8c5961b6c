"""What a pass of the embedded Kueue reads from the store besides queue configuration: the LocalQueues (the
ClusterQueue and ``stopPolicy`` of each), the Namespaces' labels, the Workloads a batch of changes names, and
a Workload's owner TrainJob.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gangplane.api import trainer as t
from gangplane.api.scheduling import kueue_workload as kw
from gangplane.api.scheduling.kueue import StopPolicy
from gangplane.errors import NotFound
from gangplane.schedulers.kueue.changes import Batch
from gangplane.schedulers.kueue.lifecycle import controller_trainjob
from gangplane.schedulers.kueue.model import LocalQueueKey
from gangplane.store import catalog
from gangplane.store.base import Object, Store


@dataclass
class Queues:
    cluster_queues: dict[LocalQueueKey, str] = field(default_factory=dict)
    """LocalQueue -> the ClusterQueue it names."""
    stop_policies: dict[LocalQueueKey, StopPolicy] = field(default_factory=dict)
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)


def read_queues(store: Store) -> Queues:
    queues = Queues()
    for o in store.list(catalog.LOCAL_QUEUES).items:
        key, spec = (o["metadata"].get("namespace", ""), o["metadata"]["name"]), o.get("spec") or {}
        queues.cluster_queues[key] = spec.get("clusterQueue", "")
        queues.stop_policies[key] = _stop_policy(spec.get("stopPolicy"))
    for o in store.list(catalog.NAMESPACES).items:
        queues.namespace_labels[o["metadata"]["name"]] = o["metadata"].get("labels") or {}
    return queues


def _stop_policy(value: str | None) -> StopPolicy:
    """Upstream tests ``stopPolicy != None`` for stopped and ``== HoldAndDrain`` for draining, so a value its
    CRD enum would have refused (this store does not check it) holds, never breaks the pass."""
    try:
        return StopPolicy(value or StopPolicy.NONE)
    except ValueError:
        return StopPolicy.HOLD


def changed_workloads(
    store: Store, batch: Batch, known: Iterable[str]
) -> tuple[dict[str, Object], list[str]]:
    """(Workloads to read into the core by key, keys that are gone): all of them when the batch says
    everything (``known``: the core's keys), else what changed."""
    if batch.everything:
        found = {f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}": o
                 for o in store.list(catalog.WORKLOADS).items}  # fmt: skip
        return found, [k for k in known if k not in found]
    found, gone = {}, []
    for key in sorted(batch.workloads):
        namespace, name = key.split("/", 1)
        try:
            found[key] = store.get(catalog.WORKLOADS, namespace, name)
        except NotFound:
            gone.append(key)
    return found, gone


def trainjob(store: Store, namespace: str, name: str) -> t.TrainJob | None:
    try:
        return t.TrainJob.model_validate(store.get(catalog.TRAINJOBS, namespace, name))
    except NotFound:
        return None


def owner_of(store: Store, workload: kw.Workload) -> t.TrainJob | None:
    """The TrainJob named by the Workload's controller reference, if it exists (whatever its uid)."""
    ref = controller_trainjob(workload)
    return trainjob(store, workload.metadata.namespace or "", ref.name) if ref is not None else None


def workload_and_job(store: Store, key: str) -> tuple[kw.Workload, t.TrainJob] | None:
    namespace, name = key.split("/", 1)
    try:
        workload = kw.Workload.model_validate(store.get(catalog.WORKLOADS, namespace, name))
    except NotFound:
        return None
    job = owner_of(store, workload)
    return (workload, job) if job is not None else None
