"""The Slurm Bridge decision core: one cycle's view of PodGroups, pods and Slurm jobs in, actions out. Pure.

Semantics follow slurm-bridge (reference slurm.md §A4-A5), with a hold job standing in for the external job:

- a coscheduling PodGroup with at least ``minMember`` pending pods gets **one** Slurm job sized by spec.py;
  a request that can never fit the partition is not submitted, and the group says why;
- while the job pends, the group and its pods carry Slurm's pending reason; if the group shrinks below
  ``minMember`` the job is cancelled (upstream deletes it);
- once Slurm allocates, each pending pod gets one distinct allocated node, mapped to a gangplane Node (the
  ``slinky.slurm.net/slurm-nodename`` label, else the same name); surplus pods wait;
- Slurm wins: when a job ends (time limit, ``scancel``, node failure, or Slurm forgot it) every live pod bound
  to it is deleted, and the group forgets the job so replacement pods get a new one;
- a job whose pods have all finished, or whose PodGroup is gone, is cancelled;
- a pod the bridge failed keeps the bridge's finalizer until it is terminal and ``RELEASE_AFTER`` seconds
  have passed since its ``DisruptionTarget`` (model.py ``POD_FINALIZER`` says why).

Conditions are only emitted when they differ from what the objects already carry, so a steady state
produces no writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gangplane.schedulers.slurm.cli import SlurmJob
from gangplane.schedulers.slurm.model import (
    ENDED_STATES,
    ENDING_STATES,
    PENDING_STATES,
    RELEASE_AFTER,
    RUNNING_STATES,
    Action,
    Bind,
    BridgeView,
    Cancel,
    ConditionView,
    DeletePods,
    ForgetJob,
    GroupView,
    MarkUnschedulable,
    PodView,
    Reason,
    RecordJob,
    Ref,
    Release,
    SetGroupCondition,
    Submit,
    owns,
    parse_job_comment,
)
from gangplane.schedulers.slurm.spec import job_spec, never_fits


def decide(view: BridgeView) -> list[Action]:
    """Every action this cycle calls for, in execution order: pod deletions for ended jobs first, then
    finalizer releases, cancellations of orphaned jobs, then each group (by namespace/name), then pods
    without a group."""
    jobs = {job.job_id: job for job in view.jobs}
    actions: list[Action] = [
        *_ended_job_actions(view, jobs),
        *_release_actions(view),
        *_orphan_job_actions(view),
    ]
    for group in sorted(view.groups, key=lambda g: (g.ref.namespace, g.ref.name)):
        if not group.deleting:
            actions += _group_actions(group, view, jobs)
    actions += _loose_pod_actions(view.loose_pods)
    return actions


def unreachable(view: BridgeView, why: str) -> list[Action]:
    """When Slurm cannot be asked, nothing changes but what waiting groups say: a group not yet allocated
    shows ``SlurmUnreachable`` with Slurm's error, so the TrainJob says why it waits (not only the log).
    Allocated groups keep their condition: their pods run on, Slurm owns their nodes either way."""
    message = f"Slurm cannot be reached: {why}; nothing is submitted or bound until it answers"
    actions: list[Action] = []
    for group in sorted(view.groups, key=lambda g: (g.ref.namespace, g.ref.name)):
        if not group.deleting and (group.condition is None or group.condition.status != "True"):
            actions += _condition(group, "False", Reason.SLURM_UNREACHABLE, message)
    return actions


# -- jobs that ended, or lost their group -------------------------------------------------------------------


def _ended(job: SlurmJob | None) -> bool:
    return job is None or job.state in ENDED_STATES


def _cancellable(job: SlurmJob) -> bool:
    return not _ended(job) and job.state not in ENDING_STATES


def _end_message(job_id: int, job: SlurmJob | None) -> str:
    if job is None:
        return f"Slurm job {job_id} is gone (Slurm no longer lists it)"
    reason = f", reason {job.reason}" if job.reason and job.reason != "None" else ""
    return f"Slurm job {job_id} ended: {job.state}{reason}"


def _all_pods(view: BridgeView) -> Iterable[PodView]:
    for group in view.groups:
        yield from group.pods
    yield from view.loose_pods


def _bound_job(pod: PodView) -> int | None:
    """The job a running (bound, live, not terminating) pod was bound for."""
    return pod.job_id if pod.node_name and pod.live and not pod.terminating else None


def _ended_job_actions(view: BridgeView, jobs: dict[int, SlurmJob]) -> list[Action]:
    """Fail and delete the live pods bound to a job that no longer runs: the allocation is gone, so are they."""
    doomed: dict[int, list[Ref]] = {}
    for pod in _all_pods(view):
        if (job_id := _bound_job(pod)) is not None and _ended(jobs.get(job_id)):
            doomed.setdefault(job_id, []).append(pod.ref)
    return [
        DeletePods(tuple(refs), Reason.JOB_ENDED, _end_message(job_id, jobs.get(job_id)) + "; pod deleted")
        for job_id, refs in sorted(doomed.items())
    ]


def _release_actions(view: BridgeView) -> list[Action]:
    """Drop the finalizer from failed pods once they ended and their owner had ``RELEASE_AFTER`` to see it."""
    return [
        Release(pod.ref)
        for pod in _all_pods(view)
        if pod.held
        and not pod.live
        and (pod.disrupted_at is None or view.now - pod.disrupted_at >= RELEASE_AFTER)
    ]


def _orphan_job_actions(view: BridgeView) -> list[Action]:
    """Cancel live gangplane jobs whose PodGroup is gone (or being deleted, or replaced under the same name)."""
    alive = {g.ref.uid for g in view.groups if not g.deleting}
    actions: list[Action] = []
    for job in view.jobs:
        owner = parse_job_comment(job.comment)
        if owner is not None and owns(job, None, view.user) and _cancellable(job) and owner[2] not in alive:
            message = f"PodGroup {owner[0]}/{owner[1]} is gone; Slurm job {job.job_id} cancelled"
            actions.append(Cancel(job.job_id, Reason.POD_GROUP_DELETED, message))
    return actions


# -- one group ----------------------------------------------------------------------------------------------


def _group_jobs(group: GroupView, jobs: dict[int, SlurmJob], user: str) -> list[SlurmJob]:
    """Live jobs this bridge submitted for this group (comment marker and user), oldest first."""
    return [
        job
        for job in sorted(jobs.values(), key=lambda j: j.job_id)
        if not _ended(job) and owns(job, group.ref.uid, user)
    ]


def _foreign(group: GroupView, jobs: dict[int, SlurmJob], user: str) -> list[Action] | None:
    """A job id on the PodGroup naming a live job this bridge did not submit for it (written by someone
    else): never bound to, never cancelled — the annotation is dropped and the group says so."""
    job = jobs.get(group.job_id) if group.job_id is not None else None
    if job is None or _ended(job) or owns(job, group.ref.uid, user):
        return None
    message = (
        f"Slurm job {job.job_id} named on PodGroup {group.ref} was not submitted by gangplane for it "
        f"(comment {job.comment!r}, user {job.user or 'unknown'}); ignored"
    )
    assert group.job_id is not None
    # the condition first: once the job id is forgotten no later cycle would know to write it
    return [*_condition(group, "False", Reason.FOREIGN_JOB, message), ForgetJob(group.ref, group.job_id)]


def _group_actions(group: GroupView, view: BridgeView, jobs: dict[int, SlurmJob]) -> list[Action]:
    if (ignored := _foreign(group, jobs, view.user)) is not None:
        return ignored
    own = _group_jobs(group, jobs, view.user)
    job_id = group.job_id if group.job_id is not None else (own[0].job_id if own else None)
    extra = [
        Cancel(j.job_id, Reason.DUPLICATE_JOB, f"PodGroup {group.ref} already has Slurm job {job_id}")
        for j in own
        if j.job_id != job_id
    ]
    if job_id is None:
        return extra + _without_job(group, view)
    recorded = [] if group.job_id == job_id else [RecordJob(group.ref, job_id)]
    job = jobs.get(job_id)
    if _ended(job):
        message = _end_message(job_id, job)
        return [*extra, *_condition(group, "False", Reason.JOB_ENDED, message), ForgetJob(group.ref, job_id)]
    assert job is not None
    return extra + recorded + _with_job(group, job, view)


def _condition(group: GroupView, status: str, reason: Reason, message: str) -> list[Action]:
    wanted = ConditionView(status, reason, message)
    return [] if group.condition == wanted else [SetGroupCondition(group.ref, wanted)]


def _unschedulable(pods: Sequence[PodView], reason: Reason, message: str) -> list[Action]:
    wanted = ConditionView("False", reason, message)
    stale = tuple(p.ref for p in pods if p.scheduled != wanted)
    return [MarkUnschedulable(stale, reason, message)] if stale else []


def _waiting(group: GroupView, pods: Sequence[PodView], reason: Reason, message: str) -> list[Action]:
    return [*_condition(group, "False", reason, message), *_unschedulable(pods, reason, message)]


def _without_job(group: GroupView, view: BridgeView) -> list[Action]:
    pending = sorted((p for p in group.pods if p.pending), key=lambda p: p.ref.name)
    if not pending:
        return []
    if len(pending) < group.min_member:
        message = (
            f"{len(pending)} of minMember {group.min_member} pods are waiting; Slurm job not submitted yet"
        )
        return _waiting(group, pending, Reason.WAITING_FOR_PODS, message)
    spec = job_spec(group, pending, view.default_partition)
    problem = never_fits(spec, view.slurm_nodes)
    if problem is not None:
        return _waiting(group, pending, Reason.UNSCHEDULABLE, problem)
    rejection = view.rejections.get(group.ref.uid)
    if rejection is not None and rejection.spec == spec:
        return _waiting(
            group, pending, Reason.SUBMIT_REJECTED, f"Slurm rejected the job: {rejection.message}"
        )
    return [Submit(group.ref, spec)]


def _with_job(group: GroupView, job: SlurmJob, view: BridgeView) -> list[Action]:
    live = [p for p in group.pods if p.live]
    if not live:
        message = f"all pods finished; Slurm job {job.job_id} cancelled"
        return [Cancel(job.job_id, Reason.PODS_FINISHED, message)] if _cancellable(job) else []
    if job.state in PENDING_STATES:
        return _job_pending(group, job, live)
    if job.state in RUNNING_STATES:
        return _job_running(group, job, view)
    message = f"Slurm job {job.job_id} is {job.state}"
    return _waiting(group, [p for p in live if p.pending], Reason.JOB_PENDING, message)


def _job_pending(group: GroupView, job: SlurmJob, live: Sequence[PodView]) -> list[Action]:
    if len(live) < group.min_member:
        message = (
            f"only {len(live)} of minMember {group.min_member} pods left; Slurm job {job.job_id} cancelled"
        )
        return [
            Cancel(job.job_id, Reason.GROUP_SHRANK, message),
            *_condition(group, "False", Reason.GROUP_SHRANK, message),
        ]
    reason = f" ({job.reason})" if job.reason and job.reason != "None" else ""
    message = f"Slurm job {job.job_id} is pending{reason}"
    return _waiting(group, [p for p in live if p.pending], Reason.JOB_PENDING, message)


def _free_nodes(group: GroupView, job: SlurmJob, view: BridgeView) -> list[str]:
    """Allocated Slurm nodes that host no live pod of this group yet, in allocation order."""
    to_slurm = {gp: name for name, gp in view.node_names.items()}
    used = {to_slurm.get(p.node_name, p.node_name) for p in group.pods if p.live and p.node_name}
    return [n for n in job.nodes if n not in used]


def _job_running(group: GroupView, job: SlurmJob, view: BridgeView) -> list[Action]:
    pending = sorted((p for p in group.pods if p.pending), key=lambda p: p.ref.name)
    allocated = f"Slurm job {job.job_id} allocated {job.nodelist or ', '.join(job.nodes)}"
    if not pending:
        return _condition(group, "True", Reason.ALLOCATED, allocated)
    free = _free_nodes(group, job, view)
    unmapped = [n for n in free[: len(pending)] if n not in view.node_names]
    if unmapped:
        message = f"{allocated}, but Slurm node(s) {', '.join(unmapped)} match no Node"
        return _waiting(group, pending, Reason.NODE_NOT_MAPPED, message)
    binds: list[Action] = [
        Bind(pod.ref, view.node_names[node], node, job.job_id)
        for pod, node in zip(pending, free, strict=False)
    ]
    surplus = pending[len(free) :]
    if surplus:
        message = f"{allocated}; no allocated node is left for this pod"
        return binds + _waiting(group, surplus, Reason.JOB_PENDING, message)
    return binds + _condition(group, "True", Reason.ALLOCATED, allocated)


# -- pods without a PodGroup --------------------------------------------------------------------------------


def _loose_pod_actions(pods: Sequence[PodView]) -> list[Action]:
    actions: list[Action] = []
    for pod in pods:
        if pod.pending:
            message = (
                "slurm-bridge-scheduler in gangplane schedules pods of a coscheduling PodGroup "
                "(label scheduling.x-k8s.io/pod-group); this pod's PodGroup does not exist"
            )
            actions += _unschedulable([pod], Reason.NO_POD_GROUP, message)
    return actions


__all__ = ["decide"]
