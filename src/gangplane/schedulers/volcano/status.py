"""Closing a session: PodGroup phase and conditions, Queue status, and "why pending" per gang
(volcano.md §2 phase rule, §6 gang close, §3 queue status).

Status is recomputed from the session and written only when it changed. Volcano PodGroups have no status
subresource: the shell replaces ``status`` on the whole object.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from gangplane.api.scheduling import volcano as vc
from gangplane.clock import rfc3339
from gangplane.schedulers.base import PendingReason, Status, StatusWrite
from gangplane.schedulers.core.resources import ResourceIndex
from gangplane.schedulers.volcano.jobs import Job, TaskStatus
from gangplane.schedulers.volcano.kept import QueueSaid
from gangplane.schedulers.volcano.memo import Settled, revision
from gangplane.schedulers.volcano.session import Session
from gangplane.store.catalog import VOLCANO_PODGROUPS, VOLCANO_QUEUES

SCHEDULED = frozenset(
    {TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.ALLOCATED, TaskStatus.FAILED, TaskStatus.SUCCEEDED}
)
FINISHED = frozenset({TaskStatus.FAILED, TaskStatus.SUCCEEDED})
_SCHEDULED_NOW = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND, *FINISHED})  # upstream ``ScheduledStatus``
_PHASES = tuple(p.value for p in vc.PodGroupPhase)  # the Queue status counts, in order (read every pass)
_BUILT_IN = frozenset({vc.ROOT_QUEUE, vc.DEFAULT_QUEUE})
_COUNT_FIELDS = tuple(p.value.lower() for p in vc.PodGroupPhase)  # the Queue status count names, in order
_OPEN = vc.QueueState.OPEN.value
_NOT_ENOUGH_TASKS = vc.PodGroupConditionReason.NOT_ENOUGH_TASKS
_NOT_ENOUGH_RESOURCES = vc.PodGroupConditionReason.NOT_ENOUGH_RESOURCES


def why(session: Session, job: Job) -> str:
    """The plain-words reason a gang is not (fully) running, with numbers (only the count unless the
    session explains)."""
    missing = max(job.min_member - job.ready_count(), 0)
    head = f"{missing}/{len(job.tasks)} tasks in gang unschedulable"
    if not session.config.explain:
        return head
    reason = session.messages.get(job.key) or session.inqueue_reasons.get(job.key)
    return f"{head}: {reason}" if reason else head


class _Seen(NamedTuple):
    """A job's tasks counted in one walk: per status, the releasing ones still on a node, the scheduled
    ones (``SCHEDULED`` and those releasing on a node) and the finished ones."""

    counts: Counter[TaskStatus]
    releasing_on_node: int
    scheduled: int
    finished: int


def _seen(job: Job, statuses: Sequence[TaskStatus] | None = None) -> _Seen:
    """``statuses``: the tasks' statuses when the caller has them already."""
    counts, scheduled, finished = _counted(
        tuple(statuses) if statuses is not None else tuple([t.status for t in job.tasks])
    )
    on_node = (
        sum(1 for t in job.tasks if t.status == TaskStatus.RELEASING and t.pod.node_name)
        if TaskStatus.RELEASING in counts
        else 0
    )
    return _Seen(counts, on_node, scheduled + on_node, finished)


@lru_cache(maxsize=1024)
def _counted(statuses: tuple[TaskStatus, ...]) -> tuple[Counter[TaskStatus], int, int]:
    """The count per status, the scheduled and the finished ones, remembered by the statuses: jobs of a trace
    repeat few patterns (all pending, all running), pass after pass. The count is shared: only read."""
    counts = Counter(statuses)
    scheduled = sum(n for status, n in counts.items() if status in SCHEDULED)
    finished = sum(n for status, n in counts.items() if status in FINISHED)
    return counts, scheduled, finished


def phase(session: Session, job: Job, unschedulable: bool) -> str:
    return _phase(job, _seen(job), unschedulable)


def _phase(job: Job, seen: _Seen, unschedulable: bool) -> str:
    """The PodGroup phase: scheduled tasks are those in ``SCHEDULED`` and the releasing ones still on a
    node; the job is Completed when every scheduled task finished."""
    if unschedulable and TaskStatus.RUNNING in seen.counts:
        return vc.PodGroupPhase.UNKNOWN
    if job.tasks and seen.scheduled >= job.min_member:
        if seen.scheduled == seen.finished:
            return vc.PodGroupPhase.COMPLETED
        return vc.PodGroupPhase.RUNNING
    return vc.PodGroupPhase.INQUEUE if job.phase == vc.PodGroupPhase.INQUEUE else vc.PodGroupPhase.PENDING


def releasing_keeps_gang(job: Job, pipelined: bool) -> bool:
    """gang ``shouldSkipUnschedulableForReleasing``: an unready job whose scheduled tasks plus the releasing
    ones still on a node reach ``minMember``, with nothing pending or pipelined, is a gang shutting down, not
    an unschedulable one: its conditions are left as they are."""
    return _keeps_gang(job, _seen(job), pipelined)


def _keeps_gang(job: Job, seen: _Seen, pipelined: bool) -> bool:
    releasing, counts = seen.releasing_on_node, seen.counts
    if not releasing or pipelined or counts[TaskStatus.PENDING]:
        return False
    return sum(counts[s] for s in _SCHEDULED_NOW) + releasing >= job.min_member


def _condition(
    session: Session, job: Job, old: Sequence[Mapping[str, Any]], seen: _Seen
) -> dict[str, Any] | None:
    if not job.tasks:
        return None
    ready = job.ready()
    if not ready and _keeps_gang(job, seen, job.key in session.pipelined):
        return None
    if ready:
        kind, reason, message = vc.PodGroupConditionType.SCHEDULED, "tasks in gang are ready", ""
    else:
        invalid = job.valid_reason() is not None
        kind, message = vc.PodGroupConditionType.UNSCHEDULABLE, why(session, job)
        reason = str(_NOT_ENOUGH_TASKS if invalid else _NOT_ENOUGH_RESOURCES)
    for c in old:  # a held condition saying the same keeps its transition (compared field by field)
        if (
            c.get("type") == kind
            and c.get("status") == "True"
            and c.get("reason") == reason
            and c.get("message") == message
        ):
            return dict(c)
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "transitionID": f"cycle-{session.now:.3f}",
        "lastTransitionTime": rfc3339(session.now),
    }


def pod_group_status(session: Session, job: Job) -> dict[str, Any]:
    return _status(session, job, _seen(job))


def _status(session: Session, job: Job, seen: _Seen) -> dict[str, Any]:
    old_status = job.obj.get("status") or {}
    old_conditions = old_status.get("conditions") or ()
    cond = _condition(session, job, old_conditions, seen)
    conditions = [c for c in old_conditions if cond is None or c.get("type") != cond["type"]]
    conditions += [cond] if cond is not None else []
    counts = seen.counts
    unschedulable = cond is not None and cond["type"] == vc.PodGroupConditionType.UNSCHEDULABLE
    status = {
        **old_status,
        "phase": str(_phase(job, seen, unschedulable)),
        "running": counts.get(TaskStatus.RUNNING, 0),
        "succeeded": counts.get(TaskStatus.SUCCEEDED, 0),
        "failed": counts.get(TaskStatus.FAILED, 0),
    }
    if conditions:
        status["conditions"] = conditions
    return status


def _inputs(session: Session, job: Job, statuses: tuple[TaskStatus, ...]) -> tuple[object, ...]:
    """Everything a job's new status is computed from besides ``now`` (used only when it changes), or ``()``
    when its objects carry no resourceVersion."""
    if not job.revision:
        return ()
    said = (
        (session.messages.get(job.key), session.inqueue_reasons.get(job.key))
        if session.config.explain
        else ()
    )
    return (job.revision, job.phase, statuses, job.key in session.pipelined, said)


class Wrote(NamedTuple):
    """A PodGroup status a close wrote, with what it was computed from besides the stored status: the job
    as parsed (the same object: its spec and pods), its pods' resourceVersions, its phase, its tasks'
    statuses and whether it was pipelined; and the phase it then counted as were the status unchanged."""

    job: Job
    basis: tuple[object, ...]
    status: Mapping[str, Any]
    phase: str


def _basis(session: Session, job: Job, statuses: tuple[TaskStatus, ...]) -> tuple[object, ...]:
    return (job.revision[1:], job.phase, statuses, job.key in session.pipelined)


def _came_back(session: Session, job: Job, statuses: tuple[TaskStatus, ...], wrote: Wrote) -> bool:
    """Does the job now hold the status the last close wrote for it, all else as then? Then its status is
    computed again as that one (each part reads the same inputs, the condition found among the written
    ones) and equals the stored one: no write, and the phase noted then. Without "why pending" text only:
    that text reads the session."""
    return (
        wrote.job is job
        and not session.config.explain
        and wrote.basis == _basis(session, job, statuses)
        and job.obj.get("status") == wrote.status
    )


def pod_group_writes(
    session: Session,
    settled: dict[str, Settled],
    jobs: Iterable[Job] | None = None,
    wrote: tuple[Mapping[str, Wrote], dict[str, Wrote]] | None = None,
) -> tuple[list[StatusWrite], dict[str, str]]:
    """The PodGroup status writes, and the phase for the queue counts, of ``jobs`` (default: every job of
    the session), in order. A job whose status inputs are those of a session that left its status as it was
    (``settled``) is not recomputed. ``wrote``, where the caller keeps it: the writes of the last close, by
    job key, read; and this close's, filled. A job holding what the last close wrote for it, its inputs as
    they were then, is settled without computing its status again (its own write came back)."""
    writes, phases = [], {}
    last, now = wrote if wrote is not None else ({}, None)
    for job in session.jobs.values() if jobs is None else jobs:
        statuses = tuple([t.status for t in job.tasks])
        inputs = _inputs(session, job, statuses)
        if inputs and (kept := settled.get(job.key)) is not None and kept.inputs == inputs:
            phases[job.key] = kept.phase
            continue
        back = last.get(job.key) if inputs else None
        if back is not None and _came_back(session, job, statuses, back):
            phases[job.key] = back.phase
            settled[job.key] = Settled(inputs, back.phase)
            continue
        seen = _seen(job, statuses)
        phases[job.key] = _phase(job, seen, False)
        if job.synthetic:
            continue
        status, old = _status(session, job, seen), job.obj.get("status") or {}
        if status != old:
            writes.append(StatusWrite(VOLCANO_PODGROUPS, job.namespace, job.name, status, old))
            if now is not None and inputs:
                now[job.key] = Wrote(job, _basis(session, job, statuses), status, phases[job.key])
            phases[job.key] = str(status["phase"])
            settled.pop(job.key, None)
        elif inputs:
            settled[job.key] = Settled(inputs, phases[job.key])
    return writes, phases


def queue_writes(session: Session, phases: Mapping[str, str]) -> list[StatusWrite]:
    return queue_writes_of(session, Counter((j.queue, phases[j.key]) for j in session.jobs.values()))


def queue_writes_of(
    session: Session,
    per_queue: Mapping[tuple[str, str], int],
    said: dict[str, QueueSaid] | None = None,
    recounted: Collection[str] | None = None,
) -> list[StatusWrite]:
    """The Queue status writes from the count of jobs per (queue, phase). ``said`` keeps each queue's last
    answer by what it was computed from (the Queue's resourceVersion, the counts, what it holds): while
    those recur the answer is the same. ``recounted``, where the caller tracks it (a kept session): the
    queues whose counts may have moved since ``said`` was filled; any other queue whose object and
    allocation vector are the objects it was answered for answers the same without being read."""
    writes, attrs = [], session.book.attrs
    for name, obj in session.queue_objs.items():
        if name in _BUILT_IN and "uid" not in (obj.get("metadata") or {}):
            continue  # the built-in queue exists only in memory this cycle
        attr = attrs.get(name)
        allocated = None if attr is None else attr.allocated
        known = None if said is None else said.get(name)
        if (
            known is None
            or recounted is None
            or name in recounted
            or known.obj is not obj
            or (known.allocated is not allocated)
        ):
            known = _queue_answer(session, obj, per_queue, allocated, known)
            if said is not None and known.inputs[0]:
                said[name] = known
        if known.write is not None:
            writes.append(known.write)
    return writes


def _queue_answer(
    session: Session,
    obj: Mapping[str, Any],
    per_queue: Mapping[tuple[str, str], int],
    allocated: Any,
    known: QueueSaid | None,
) -> QueueSaid:
    """The queue's answer: ``known``'s write while its inputs recur; none when the Queue now holds the status
    ``known`` wrote and its counts and allocation did not move since (that status is what would be
    computed again); else computed."""
    name = obj["metadata"]["name"]
    counts = tuple([per_queue.get((name, p), 0) for p in _PHASES])
    raw = None if allocated is None else allocated.tobytes()
    inputs = (revision(obj), counts, raw)
    if known is not None and inputs[0] and known.inputs == inputs:
        return QueueSaid(inputs, known.write, obj, allocated)
    if (
        known is not None
        and known.write is not None
        and known.inputs[1:] == inputs[1:]
        and (obj.get("status") or {}) == known.write.status
    ):
        return QueueSaid(inputs, None, obj, allocated)  # its own write came back
    return QueueSaid(inputs, _queue_write(session, obj, counts, allocated, raw), obj, allocated)


def _queue_write(
    session: Session, obj: Mapping[str, Any], counts: tuple[int, ...], allocated: Any, raw: bytes | None
) -> StatusWrite | None:
    """``allocated``: the queue's allocation vector in the session's book and ``raw`` its bytes, both
    ``None`` when it has none."""
    name = obj["metadata"]["name"]
    old = dict(obj.get("status") or {})
    status = {
        **old,
        "state": old.get("state") or _OPEN,
        "allocated": {} if raw is None else _describe(session.index, allocated, raw),
        **dict(zip(_COUNT_FIELDS, counts, strict=True)),
    }
    return StatusWrite(VOLCANO_QUEUES, "", name, status, old) if status != old else None


def _describe(index: ResourceIndex, allocated: Any, raw: bytes) -> dict[str, str]:
    """The allocation (``raw``: its bytes) as quantities, a fresh dict each time: it goes into a status the
    store keeps, and the remembered one is never handed out."""
    return _described(index, allocated.dtype, allocated.shape, raw).copy()


@lru_cache(maxsize=256)
def _described(
    index: ResourceIndex, dtype: np.dtype[Any], shape: tuple[int, ...], raw: bytes
) -> dict[str, str]:
    """Quantities of an allocation given by its type, shape and bytes, remembered: a queue's allocation moves
    by whole jobs and comes back to amounts it held before, pass after pass (the index is keyed by its
    names, all that ``describe`` reads of it)."""
    row = np.frombuffer(raw, dtype=dtype).reshape(shape)
    return index.describe(row.round().astype("int64"))


def pending_reasons(session: Session) -> list[PendingReason]:
    bound = {b.pod_key for b in session.bindings}
    out = []
    for job in session.jobs.values():
        keys = tuple(
            t.pod.key for t in job.tasks if t.status == TaskStatus.PENDING and t.pod.key not in bound
        )
        if not keys:
            continue
        waiting = job.key in session.pipelined or job.valid_reason() is not None
        status = Status.WAIT if waiting else Status.UNSCHEDULABLE
        out.append(PendingReason(keys, status, why(session, job), group=job.key))
    return out


def left_out_reasons(session: Session, pending_keys: Mapping[str, str]) -> list[PendingReason]:
    """Pods of groups the session could not take (missing queue or PodGroup)."""
    grouped: dict[str, list[str]] = {}
    for pod_key, group in pending_keys.items():
        if group in session.left_out:
            grouped.setdefault(group, []).append(pod_key)
    return [
        PendingReason(
            tuple(keys), Status.UNSCHEDULABLE_AND_UNRESOLVABLE, session.left_out[group], group=group
        )
        for group, keys in sorted(grouped.items())
    ]
