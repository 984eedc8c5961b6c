"""KAI's pod-grouper for the embedded cluster: the PodGroup of every JobSet whose pods use ``kai-scheduler``.

On a real cluster KAI's own pod-grouper (``pkg/podgrouper``) creates ``scheduling.run.ai/v2alpha2`` PodGroups
and gangplane never does (``runtime/plugins/kai.py`` renders them with ``applied_by=KAI_PODGROUPER``, which the
TrainJob controller skips). The embedded cluster has no KAI install, so this controller stands in for it:

- per JobSet it server-side-applies (field manager ``kai-podgrouper``) the PodGroup the skip-top-owner and
  JobSet groupers derive (kai.md §4.3), built by the runtime plugin's ``pod_group_for`` from the live JobSet
  and its TrainJob, so the rendered and the created PodGroup are the same object;
- the PodGroup is owned by the JobSet (``pg-<jobset>-<uid>``; an owner reference without ``controller``, as
  KAI's default grouper writes it), so deleting the JobSet garbage-collects it;
- the JobSet's pods get the annotation ``pod-group-name`` and the label ``kai.scheduler/subgroup-name``
  (``<rjob>-replica-<job-index>``) KAI stamps; the embedded KAI scheduler reads that annotation to find the
  group (``schedulers/kai/session.py`` ``group_name``) and the TrainJob controller to read its status.

``kai.scheduler/skip-podgrouper: "true"`` (annotation) on the JobSet, its TrainJob or a pod leaves them alone.
Status is never written here: the embedded KAI scheduler writes it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from gangplane.api import trainer as t
from gangplane.api.jobset import JOB_INDEX_LABEL, JOBSET_NAME_LABEL, REPLICATED_JOB_NAME_LABEL, JobSet
from gangplane.api.meta import ObjectMeta
from gangplane.api.scheduling import kai
from gangplane.client.cache import LiveReads, StoreReader
from gangplane.client.controller import Controller, Manager, Result, own_key
from gangplane.client.informer import Informer, Key
from gangplane.clock import Clock
from gangplane.controllers.manager import jobset_owner, jobset_pod_key
from gangplane.controllers.objects import deleting, is_subset, labels_of, meta, name_of, namespace_of, uid_of
from gangplane.controllers.shell import get_or_none, list_labelled
from gangplane.runtime.info import PodSet, RuntimeInfo
from gangplane.runtime.plugins.kai import pod_group_for
from gangplane.runtime.reader import Reader
from gangplane.store import catalog
from gangplane.store.base import EventType, Object, Store
from gangplane.store.patch import APPLY_PATCH, MERGE_PATCH

FIELD_MANAGER = "kai-podgrouper"
_log = logging.getLogger(__name__)


# ---------------------------------------------------------------- decisions (pure)


def _pod_templates(jobset: Object) -> list[Mapping[str, Any]]:
    rjobs = (jobset.get("spec") or {}).get("replicatedJobs") or []
    return [((r.get("template") or {}).get("spec") or {}).get("template") or {} for r in rjobs]


def uses_kai(jobset: Object, scheduler_name: str = kai.SCHEDULER_NAME) -> bool:
    """Some pod template of the JobSet names ``scheduler_name`` (KAI groups only the pods it schedules)."""
    return any((p.get("spec") or {}).get("schedulerName") == scheduler_name for p in _pod_templates(jobset))


def skips_podgrouper(*objs: Object | None) -> bool:
    """``kai.scheduler/skip-podgrouper: "true"`` on any of ``objs`` (a pod and its owners)."""
    notes = ((meta(o).get("annotations") or {}) for o in objs if o is not None)
    return any(n.get(kai.SKIP_PODGROUPER_KEY) == "true" for n in notes)


def _as_runtime_info(jobset: JobSet) -> RuntimeInfo:
    """The live JobSet as the runtime info ``pod_group_for`` reads: its replicated jobs as pod sets, the
    trainer one found by Trainer's ancestor label (the pod KAI's grouper is taken to see)."""
    pod_sets = []
    for rjob in jobset.spec.replicated_jobs:
        labels = (rjob.template.metadata.labels if rjob.template.metadata else None) or {}
        count = rjob.template.spec.parallelism
        pod_sets.append(PodSet(rjob.name, labels.get(t.ANCESTOR_LABEL), max(count or 1, 1), rjob))
    return RuntimeInfo({}, {}, None, None, jobset.spec, pod_sets)


def _top_owner(trainjob: Object | None) -> t.TrainJob:
    """The TrainJob the skip-top-owner grouper merges from; a plain JobSet gets one with no metadata, so the
    JobSet grouper sees the JobSet's labels and annotations alone."""
    if trainjob is not None:
        return t.TrainJob.model_validate(trainjob)
    return t.TrainJob(metadata=ObjectMeta(), spec=t.TrainJobSpec(runtime_ref=t.RuntimeRef(name="")))


def desired_pod_group(jobset: Object, trainjob: Object | None, reader: Reader) -> Object | None:
    """The PodGroup KAI derives for ``jobset`` (live, with its UID), merged with its TrainJob's metadata;
    ``None`` where KAI's grouper would fail (an invalid ``batch-min-member``) or the JobSet has no UID yet."""
    if not uid_of(jobset):
        return None
    typed = JobSet.model_validate(jobset)
    group = pod_group_for(_as_runtime_info(typed), _top_owner(trainjob), typed, reader)
    return None if group is None else group.to_dict()


def leaf_of(pod: Object) -> str | None:
    """The JobSet grouper's leaf SubGroup of a pod, ``<rjob>-replica-<job-index>``; ``None`` without labels."""
    labels = labels_of(pod)
    rjob, index = labels.get(REPLICATED_JOB_NAME_LABEL), labels.get(JOB_INDEX_LABEL)
    return f"{rjob}-replica-{index}" if rjob and index is not None else None


def pod_stamp(pod: Object, group: str, scheduler_name: str = kai.SCHEDULER_NAME) -> Object | None:
    """The merge patch that puts ``pod`` in ``group`` and its leaf, or ``None`` when it needs none."""
    if (
        (pod.get("spec") or {}).get("schedulerName") != scheduler_name
        or deleting(pod)
        or skips_podgrouper(pod)
    ):
        return None
    wanted: dict[str, Any] = {"annotations": {kai.POD_GROUP_ANNOTATION: group}}
    if (leaf := leaf_of(pod)) is not None:
        wanted["labels"] = {kai.SUBGROUP_LABEL: leaf}
    return None if is_subset(wanted, meta(pod)) else {"metadata": wanted}


# ---------------------------------------------------------------- the reconciler (shell)


class PodGrouperReconciler:
    """Keyed by the JobSet's ``(namespace, name)``; writes the PodGroup spec and pod metadata, never status."""

    name = "kai-podgrouper"

    def __init__(self, store: Store, clock: Clock, scheduler_name: str = kai.SCHEDULER_NAME) -> None:
        self.store, self.clock, self.scheduler_name = store, clock, scheduler_name
        self.reader = StoreReader(LiveReads(store))

    def reconcile(self, key: Key) -> Result:
        jobset = get_or_none(self.store, catalog.JOBSETS, *key)
        if jobset is None or deleting(jobset) or not uses_kai(jobset, self.scheduler_name):
            return Result()
        trainjob = self._trainjob(jobset)
        if skips_podgrouper(jobset, trainjob):
            return Result()
        group = self._desired(jobset, trainjob)
        if group is not None:
            self._apply(group)
            self._stamp_pods(jobset, name_of(group))
        return Result()

    def _desired(self, jobset: Object, trainjob: Object | None) -> Object | None:
        """The PodGroup, or ``None`` (logged, as KAI logs it) where the grouper cannot build one."""
        where = f"{namespace_of(jobset)}/{name_of(jobset)}"
        try:
            group = desired_pod_group(jobset, trainjob, self.reader)
        except ValidationError as err:
            _log.warning("kai-podgrouper: jobset %s cannot be decoded: %s", where, err)
            return None
        if group is None:
            _log.warning("kai-podgrouper: jobset %s: invalid %s", where, kai.BATCH_MIN_MEMBER_ANNOTATION)
        return group

    def _trainjob(self, jobset: Object) -> Object | None:
        """The TrainJob that controls the JobSet (the skip-top-owner grouper's top owner), if any."""
        refs = meta(jobset).get("ownerReferences") or []
        ref = next((r for r in refs if r.get("kind") == t.TRAINJOB_KIND and r.get("controller")), None)
        if ref is None:
            return None
        found = get_or_none(self.store, catalog.TRAINJOBS, namespace_of(jobset), str(ref.get("name")))
        return found if found is not None and uid_of(found) == ref.get("uid") else None

    def _apply(self, group: Object) -> None:
        namespace, name = namespace_of(group), name_of(group)
        live = get_or_none(self.store, catalog.KAI_PODGROUPS, namespace, name)
        if live is not None and is_subset(group, live) and group.get("spec") == live.get("spec"):
            return  # the spec is compared whole: a field the grouper no longer sets must go
        self.store.patch(catalog.KAI_PODGROUPS, namespace, name, group, APPLY_PATCH,
                         field_manager=FIELD_MANAGER, force=True)  # fmt: skip

    def _stamp_pods(self, jobset: Object, group: str) -> None:
        selector = f"{JOBSET_NAME_LABEL}={name_of(jobset)}"
        for pod in list_labelled(self.store, catalog.PODS, namespace_of(jobset), selector):
            patch = pod_stamp(pod, group, self.scheduler_name)
            if patch is not None:
                self.store.patch(catalog.PODS, namespace_of(pod), name_of(pod), patch, MERGE_PATCH,
                                 field_manager=FIELD_MANAGER)  # fmt: skip


# ---------------------------------------------------------------- wiring


def _pod_grouping(pod: Object) -> tuple[object, ...]:
    notes = meta(pod).get("annotations") or {}
    return (notes.get(kai.POD_GROUP_ANNOTATION), labels_of(pod).get(kai.SUBGROUP_LABEL), deleting(pod))


def _watch_pods(controller: Controller, pods: Informer) -> None:
    """Requeue a pod's JobSet when the pod appears or its group membership changes; other churn is ignored."""

    def handler(kind: EventType, pod: Object, old: Object | None) -> None:
        if kind is EventType.MODIFIED and old is not None and _pod_grouping(old) == _pod_grouping(pod):
            return
        for key in jobset_pod_key(pod):
            controller.enqueue(key)

    pods.add_handler(handler)


def build_podgrouper_controller(manager: Manager, *, workers: int = 1) -> Controller:
    """The embedded cluster's KAI pod-grouper on ``manager``: watches JobSets, their TrainJobs (same name),
    their pods and the PodGroups they own (a changed or deleted PodGroup is put back)."""
    controller = manager.add(
        Controller(PodGrouperReconciler(manager.store, manager.clock), manager.clock, workers=workers)
    )
    controller.watch(manager.informer(catalog.JOBSETS), own_key)
    controller.watch(manager.informer(catalog.TRAINJOBS), own_key)
    controller.watch(manager.informer(catalog.KAI_PODGROUPS), jobset_owner)
    _watch_pods(controller, manager.informer(catalog.PODS))
    return controller


__all__ = [
    "FIELD_MANAGER",
    "PodGrouperReconciler",
    "build_podgrouper_controller",
    "desired_pod_group",
    "leaf_of",
    "pod_stamp",
    "skips_podgrouper",
    "uses_kai",
]
