"""The ``slurm-bridge-scheduler`` shell for the embedded cluster: store and Slurm in, ``bridge.decide`` actions out.

One controller with a single work-queue key runs a *cycle*: read pods (those with ``schedulerName:
slurm-bridge-scheduler``), coscheduling PodGroups and Nodes from informer caches, ``squeue --json`` (and, at
most every ``node_refresh`` seconds, ``sinfo --json``), decide, execute. Any relevant watch event triggers a
cycle, and a cycle re-arms itself every ``poll_interval`` seconds of the injected clock, since Slurm has no
watch. The shell holds no scheduling logic.

Writes are safe against stale caches: every pod or PodGroup write re-reads the object and checks its uid (and
that a pod is still unbound), so a repeated action from a cache that lags one cycle is a no-op.

A pod whose Slurm job ended is *failed, then deleted*, as Kubernetes' pod garbage collector does
(``pkg/controller/podgc`` ``markFailedAndDeletePodWithCondition``): the bridge's finalizer, then
``phase: Failed`` with ``DisruptionTarget=True`` (reason ``SlurmJobEnded``), then the delete. The node agent
stops the processes; the finalizer keeps the failed pod visible until ``Release`` so its Job counts it and
applies its ``podFailurePolicy`` (e.g. ``FailJob`` on ``DisruptionTarget``; without one the Job retries up to
``backoffLimit``, on a new Slurm job). The group's job
id lives in the PodGroup annotation ``POD_GROUP_JOB_ANNOTATION`` and in each hold job's comment, so a
restarted bridge re-adopts running jobs instead of submitting new ones.
"""

from __future__ import annotations

import contextlib
import getpass
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gangplane.api.scheduling import slurm
from gangplane.client import Controller, Informer, Manager, Result
from gangplane.clock import Clock, rfc3339
from gangplane.errors import Conflict, NotFound
from gangplane.schedulers.slurm.bridge import decide, unreachable
from gangplane.schedulers.slurm.cli import SlurmError, SlurmJob, SlurmNode, SubmitRejected
from gangplane.schedulers.slurm.commands import SlurmCli
from gangplane.schedulers.slurm.model import (
    CONDITION_TYPE,
    DISRUPTION_TARGET,
    POD_FINALIZER,
    POD_GROUP_JOB_ANNOTATION,
    POD_SCHEDULED,
    TERMINAL_PHASES,
    Action,
    Bind,
    BridgeView,
    Cancel,
    ConditionView,
    DeletePods,
    ForgetJob,
    MarkUnschedulable,
    RecordJob,
    Ref,
    Rejection,
    Release,
    SetGroupCondition,
    Submit,
    owns,
)
from gangplane.schedulers.slurm.views import bridge_view, is_managed
from gangplane.store.base import Object, ResourceType, Store
from gangplane.store.catalog import COSCHEDULING_PODGROUPS, NODES, PODS

_log = logging.getLogger(__name__)
CYCLE_KEY = ("", "slurm-bridge")
_RETRY_SOON = 0.05  # after a lost write race: re-read and redo the cycle
_WRITE_ATTEMPTS = 3


def _cycle_key(obj: Object) -> Iterable[tuple[str, str]]:
    return (CYCLE_KEY,)


def _managed_pod_key(obj: Object) -> Iterable[tuple[str, str]]:
    return (CYCLE_KEY,) if is_managed(obj) else ()


def _set_condition(obj: Object, type_: str, condition: ConditionView, now: str) -> bool:
    """Put the condition into ``obj['status']['conditions']``; False if it was already there as is."""
    conditions: list[dict[str, Any]] = obj.setdefault("status", {}).setdefault("conditions", [])
    old = next((c for c in conditions if c.get("type") == type_), None)
    new = {
        "type": type_,
        "status": condition.status,
        "reason": str(condition.reason),
        "message": condition.message,
    }
    if old is not None and all(old.get(k) == v for k, v in new.items()):
        return False
    new["lastTransitionTime"] = (
        now if old is None or old.get("status") != condition.status else old.get("lastTransitionTime", now)
    )
    if old is not None:
        conditions.remove(old)
    conditions.append(new)
    return True


class SlurmBridge:
    """The shell. ``start``/``stop`` run it on its own threads; ``run_once`` runs one cycle synchronously."""

    name = "slurm-bridge"

    def __init__(
        self,
        store: Store,
        clock: Clock,
        cli: SlurmCli,
        *,
        manager: Manager | None = None,
        poll_interval: float = 1.0,
        node_refresh: float = 10.0,
        default_partition: str = slurm.DEFAULT_PARTITION,
        user: str | None = None,
    ) -> None:
        """``user``: the Slurm user this bridge submits as (default: this process's user); jobs of any other
        user are never bound to or cancelled."""
        self.store, self.clock, self.cli = store, clock, cli
        self.user = getpass.getuser() if user is None else user
        self.poll_interval, self.node_refresh, self.default_partition = (
            poll_interval,
            node_refresh,
            default_partition,
        )
        self._own_manager = manager is None
        self.manager = manager or Manager(store, clock)
        self.pods: Informer = self.manager.informer(PODS)
        self.groups: Informer = self.manager.informer(COSCHEDULING_PODGROUPS)
        self.nodes: Informer = self.manager.informer(NODES)
        self.controller = self.manager.add(Controller(self, clock))
        self.controller.watch(self.pods, _managed_pod_key)
        self.controller.watch(self.groups, _cycle_key)
        self.controller.watch(self.nodes, _cycle_key)
        self.rejections: dict[str, Rejection] = {}
        self._slurm_nodes: list[SlurmNode] = []
        self._nodes_read_at: float | None = None

    # -- lifecycle ------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start informers and the worker (when the bridge owns its manager) and the first cycle."""
        if self._own_manager:
            self.manager.start()
        self.controller.enqueue(CYCLE_KEY)

    def stop(self) -> None:
        if self._own_manager:
            self.manager.stop()

    def wait_synced(self, timeout: float = 30.0) -> bool:
        return all(informer.wait_synced(timeout) for informer in (self.pods, self.groups, self.nodes))

    # -- one cycle ------------------------------------------------------------------------------------------
    def reconcile(self, key: tuple[str, str]) -> Result:
        try:
            clean = self._cycle()
        except SlurmError as err:  # controller down or garbled output: keep everything, try again later
            _log.warning("slurm-bridge: %s", err)
            self._execute_all(unreachable(self._view([]), str(err)))
            return Result(requeue_after=self.poll_interval)
        return Result(requeue_after=self.poll_interval if clean else _RETRY_SOON)

    def run_once(self) -> list[Action]:
        """One cycle, synchronously (tests, simulator): the actions decided, after executing them."""
        actions = self._decide()
        self._execute_all(actions)
        return actions

    def _cycle(self) -> bool:
        return self._execute_all(self._decide())

    def _decide(self) -> list[Action]:
        jobs = self.cli.jobs()
        live_uids = {str(g["metadata"].get("uid")) for g in self.groups.list()}
        self.rejections = {uid: r for uid, r in self.rejections.items() if uid in live_uids}
        return decide(self._view(jobs, self._known_slurm_nodes()))

    def _view(self, jobs: list[SlurmJob], slurm_nodes: list[SlurmNode] | None = None) -> BridgeView:
        return bridge_view(
            self.pods.list(),
            self.groups.list(),
            self.nodes.list(),
            jobs,
            slurm_nodes if slurm_nodes is not None else self._slurm_nodes,
            rejections=self.rejections,
            default_partition=self.default_partition,
            now=self.clock.now(),
            user=self.user,
        )

    def _known_slurm_nodes(self) -> list[SlurmNode]:
        now = self.clock.now()
        if self._nodes_read_at is None or now - self._nodes_read_at >= self.node_refresh:
            try:
                self._slurm_nodes = self.cli.nodes()
                self._nodes_read_at = now
            except SlurmError as err:
                _log.warning("slurm-bridge: keeping the last node list: %s", err)
        return self._slurm_nodes

    def _execute_all(self, actions: Iterable[Action]) -> bool:
        """Execute in order; a lost race (Conflict, NotFound) skips that action only. True if all went clean."""
        clean = True
        for action in actions:
            try:
                clean = self._execute(action) and clean
            except (Conflict, NotFound) as err:
                _log.info("slurm-bridge: %s skipped: %s", type(action).__name__, err)
                clean = False
        return clean

    def _execute(self, action: Action) -> bool:
        """Carry out one action; False when the next cycle should come at once (a rejected submission)."""
        match action:
            case Submit():
                return self._submit(action)
            case RecordJob(group, job_id):
                self._annotate_job(group, str(job_id))
            case ForgetJob(group, _):
                self._annotate_job(group, None)
            case Bind():
                self._bind(action)
            case DeletePods(pods, reason, message):
                self._delete_pods(pods, reason, message)
            case Release(pod):
                self._modify(pod, _without_finalizer)
            case Cancel(job_id, reason, message):
                self._cancel(job_id, reason, message)
            case SetGroupCondition(group, condition):
                self._set_group_condition(group, condition)
            case MarkUnschedulable(pods, reason, message):
                for pod in pods:
                    self._set_pod_condition(pod, POD_SCHEDULED, ConditionView("False", reason, message))
        return True

    # -- actions --------------------------------------------------------------------------------------------
    def _cancel(self, job_id: int, reason: str, message: str) -> None:
        """``scancel`` only after re-reading the job: it must still carry this bridge's comment marker and
        user, so a reused or foreign job id is never cancelled."""
        job = self.cli.job(job_id)
        if job is None:
            return
        if not owns(job, None, self.user):
            _log.warning(
                "slurm-bridge: not cancelling Slurm job %d: not ours (comment %r, user %r)",
                job_id,
                job.comment,
                job.user,
            )
            return
        _log.info("slurm-bridge: cancelling Slurm job %d (%s: %s)", job_id, reason, message)
        self.cli.cancel(job_id)

    def _fresh(self, rt: ResourceType, ref: Ref) -> Object | None:
        """The stored object if it is still the one the decision was about (same uid)."""
        try:
            obj = self.store.get(rt, ref.namespace, ref.name)
        except NotFound:
            return None
        return obj if not ref.uid or obj["metadata"].get("uid") == ref.uid else None

    def _submit(self, action: Submit) -> bool:
        try:
            job_id = self.cli.submit(action.spec)
        except SubmitRejected as err:  # remembered, so the next cycle reports it instead of resubmitting
            _log.info("slurm-bridge: Slurm rejected the job of %s: %s", action.group, err.reason)
            self.rejections[action.group.uid] = Rejection(action.spec, err.reason)
            return False
        self.rejections.pop(action.group.uid, None)
        _log.info("slurm-bridge: submitted Slurm job %d for PodGroup %s", job_id, action.group)
        self._annotate_job(action.group, str(job_id))
        return True

    def _annotate_job(self, group: Ref, value: str | None) -> None:
        obj = self._fresh(COSCHEDULING_PODGROUPS, group)
        if obj is None:
            return
        annotations = obj["metadata"].setdefault("annotations", {})
        if annotations.get(POD_GROUP_JOB_ANNOTATION) == value:
            return
        if value is None:
            annotations.pop(POD_GROUP_JOB_ANNOTATION, None)
        else:
            annotations[POD_GROUP_JOB_ANNOTATION] = value
        self.store.update(COSCHEDULING_PODGROUPS, obj)

    def _bind(self, action: Bind) -> None:
        pod = self._fresh(PODS, action.pod)
        if pod is None or (pod.get("spec") or {}).get("nodeName"):
            return  # gone, replaced, or bound by an earlier cycle
        meta = pod["metadata"]
        meta.setdefault("labels", {})[slurm.SLURM_JOB_ID_LABEL] = str(action.job_id)
        meta.setdefault("annotations", {})[slurm.SLURM_NODE_ANNOTATION] = action.node
        spec = pod.setdefault("spec", {})
        spec["nodeName"] = action.node
        spec["tolerations"] = [*(spec.get("tolerations") or []), *_missing_toleration(spec)]
        self.store.update(PODS, pod)
        message = f"bound to {action.node} (Slurm node {action.slurm_node} of job {action.job_id})"
        # redone on a fresh read when the agent's first status write got in between: the pod is bound now,
        # so no later cycle binds it (and writes this condition) again
        self._set_pod_condition(action.pod, POD_SCHEDULED, ConditionView("True", "", message))

    def _delete_pods(self, pods: Iterable[Ref], reason: str, message: str) -> None:
        """Hold all, then fail all, then delete all (module docstring): once the first pod shows ``Failed``
        its Job may delete the others, and the finalizer keeps them until they carry the reason too."""
        now, refs = rfc3339(self.clock.now()), list(pods)
        _log.info("slurm-bridge: failing and deleting pods %s: %s", ", ".join(map(str, refs)), message)
        for ref in refs:
            self._modify(ref, _with_finalizer)
        for ref in refs:
            self._modify(ref, lambda pod: _failed(pod, reason, message, now), status=True)
        for ref in refs:
            with contextlib.suppress(NotFound):
                self.store.delete(
                    PODS, ref.namespace, ref.name, preconditions={"uid": ref.uid} if ref.uid else None
                )

    def _modify(
        self, ref: Ref, change: Callable[[Object], bool], *, status: bool = False, rt: ResourceType = PODS
    ) -> None:
        """Apply ``change`` to the fresh object and write it (its status when ``status``) if it changed
        anything; a write that lost a race (the agent, the PodGroup controller) is redone on a fresh read."""
        for attempt in range(_WRITE_ATTEMPTS):
            obj = self._fresh(rt, ref)
            if obj is None or not change(obj):
                return
            try:
                (self.store.update_status if status else self.store.update)(rt, obj)
                return
            except Conflict:
                if attempt == _WRITE_ATTEMPTS - 1:
                    raise

    def _set_pod_condition(self, ref: Ref, type_: str, condition: ConditionView) -> None:
        now = rfc3339(self.clock.now())
        self._modify(ref, lambda pod: _set_condition(pod, type_, condition, now), status=True)

    def _set_group_condition(self, ref: Ref, condition: ConditionView) -> None:
        now = rfc3339(self.clock.now())

        def change(group: Object) -> bool:
            return _set_condition(group, CONDITION_TYPE, condition, now)

        self._modify(ref, change, status=True, rt=COSCHEDULING_PODGROUPS)


MANAGED_NODE_TOLERATION = {
    "key": slurm.MANAGED_NODE_TAINT,
    "operator": "Equal",
    "value": slurm.SCHEDULER_NAME,
    "effect": "NoExecute",
}


def _missing_toleration(spec: Object) -> list[dict[str, str]]:
    """The managed-node toleration slurm-bridge's PreEnqueue adds, unless the pod has it (slurm.md §A4)."""
    return (
        [] if MANAGED_NODE_TOLERATION in (spec.get("tolerations") or []) else [dict(MANAGED_NODE_TOLERATION)]
    )


def _with_finalizer(pod: Object) -> bool:
    finalizers: list[str] = pod["metadata"].setdefault("finalizers", [])
    if POD_FINALIZER in finalizers or pod["metadata"].get("deletionTimestamp"):
        return False  # a deleting object takes no new finalizer
    finalizers.append(POD_FINALIZER)
    return True


def _without_finalizer(pod: Object) -> bool:
    finalizers = pod["metadata"].get("finalizers") or []
    if POD_FINALIZER not in finalizers:
        return False
    pod["metadata"]["finalizers"] = [f for f in finalizers if f != POD_FINALIZER]
    return True


def _failed(pod: Object, reason: str, message: str, now: str) -> bool:
    """``phase: Failed`` (unless already terminal) with ``DisruptionTarget``, reason and message."""
    changed = _set_condition(pod, DISRUPTION_TARGET, ConditionView("True", reason, message), now)
    status = pod["status"]
    if status.get("phase") not in TERMINAL_PHASES:
        status.update(phase="Failed", reason=reason, message=message)
        changed = True
    return changed


def build_slurm_bridge(
    store: Store, clock: Clock, cli: SlurmCli | None = None, **options: Any
) -> SlurmBridge:
    """The ``slurm-bridge-scheduler`` for an embedded cluster; ``options`` as ``SlurmBridge`` (``manager``,
    ``poll_interval``, ``node_refresh``, ``default_partition``). Call ``start()`` / ``stop()``."""
    return SlurmBridge(store, clock, cli or SlurmCli(), **options)


def slurm_node_objects(nodes: Iterable[SlurmNode], labels: Mapping[str, str] | None = None) -> list[Object]:
    """Node objects for Slurm's nodes (same names, the slurm-nodename label, CPU/memory/GPU capacity): what an
    embedded cluster registers so that allocations map to Nodes."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": node.name,
                "labels": {**(labels or {}), slurm.SLURM_NODE_NAME_LABEL: node.name},
            },
            "status": {"capacity": _capacity(node), "allocatable": _capacity(node)},
        }
        for node in nodes
    ]


def _capacity(node: SlurmNode) -> dict[str, str]:
    capacity = {"cpu": str(node.cpus), "memory": f"{node.memory_mb}Mi", "pods": "110"}
    if node.gpus:
        capacity["nvidia.com/gpu"] = str(node.gpus)
    return capacity


__all__ = ["CYCLE_KEY", "SlurmBridge", "build_slurm_bridge", "slurm_node_objects"]
