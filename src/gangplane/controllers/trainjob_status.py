"""The TrainJob controller's pure decisions: which runtime kinds it serves, the runtime snapshot check, and the
next status (suspension, terminal conditions, deadline, and gangplane's ``gangplane.dev/Waiting``).

Upstream ``pkg/controller/trainjob_controller.go`` (reference/trainer-api.md §10): the ``Suspended`` condition
follows ``spec.suspend`` (``False/Resumed`` only after having been True); the status plugin copies the JobSet's
terminal conditions and ``jobsStatus``; a running, unsuspended TrainJob past ``activeDeadlineSeconds`` (from its
creation or its last resume) fails with ``DeadlineExceeded`` and loses its JobSet; ``Complete`` and ``Failed``
are terminal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import yaml

from gangplane.api import trainer as t
from gangplane.api.meta import Condition, find_condition, is_true, set_condition
from gangplane.clock import parse_rfc3339, rfc3339
from gangplane.controllers.pending import WAITING_CONDITION, PendingReason, running_count
from gangplane.runtime.render import SNAPSHOT_KEY
from gangplane.store.base import Object

RUNTIME_NOT_FOUND = "TrainingRuntimeNotFound"
RUNNING_EVENT = "AllPodsRunning"
"""The Normal event reason posted when a waiting TrainJob's pods all run."""
_SUPPORTED = {
    (t.TRAINING_RUNTIME_KIND, t.GROUP),
    (t.CLUSTER_TRAINING_RUNTIME_KIND, t.GROUP),
}
_SUSPENDED = (t.ConditionReason.SUSPENDED, "TrainJob is suspended")
_RESUMED = (t.ConditionReason.RESUMED, "TrainJob is resumed")
_DEADLINE = (t.ConditionReason.DEADLINE_EXCEEDED, "TrainJob exceeded its active deadline")
_MIN_REQUEUE = 1.0


class SnapshotError(Exception):
    """The runtime snapshot ConfigMap cannot be used for this TrainJob."""


def runtime_kind(job: t.TrainJob) -> tuple[str, str]:
    ref = job.spec.runtime_ref
    return ref.kind or t.CLUSTER_TRAINING_RUNTIME_KIND, ref.api_group or t.GROUP


def unsupported_runtime(job: t.TrainJob) -> Condition | None:
    """``Failed/TrainingRuntimeNotSupported`` for a runtime reference of a kind no runtime plugin serves."""
    kind, group = runtime_kind(job)
    if (kind, group) in _SUPPORTED:
        return None
    message = f"unsupported runtime: {kind}.{group}"
    return Condition(type=t.ConditionType.FAILED, status="True", reason=t.ConditionReason.RUNTIME_NOT_SUPPORTED,
                     message=message)  # fmt: skip


def runtime_missing(job: t.TrainJob) -> Condition:
    kind, _ = runtime_kind(job)
    message = f'{kind} "{job.spec.runtime_ref.name}" referenced by spec.runtimeRef does not exist'
    return Condition(type=t.ConditionType.FAILED, status="True", reason=RUNTIME_NOT_FOUND, message=message)


def runtime_from_snapshot(snapshot: Object, job: t.TrainJob) -> t.TrainingRuntime:
    """The runtime frozen in ``snapshot`` (KEP-2599), checked: controlled by this TrainJob, the ``runtime`` key
    present and parsable, and the same kind and name as ``spec.runtimeRef``."""
    refs = (snapshot.get("metadata") or {}).get("ownerReferences") or []
    if not any(r.get("controller") and r.get("uid") == job.metadata.uid for r in refs):
        raise SnapshotError("the runtime snapshot is not controlled by this TrainJob")
    text = (snapshot.get("data") or {}).get(SNAPSHOT_KEY)
    if not isinstance(text, str):
        raise SnapshotError(f"the runtime snapshot has no {SNAPSHOT_KEY!r} key")
    try:
        data = yaml.load(text, Loader=yaml.CSafeLoader)
        kind = data.get("kind") if isinstance(data, dict) else None
        cls = t.ClusterTrainingRuntime if kind == t.CLUSTER_TRAINING_RUNTIME_KIND else t.TrainingRuntime
        runtime = cls.model_validate(data)
    except (yaml.YAMLError, ValueError) as err:
        raise SnapshotError(f"the runtime snapshot cannot be parsed: {err}") from err
    if (runtime.kind, runtime.metadata.name) != (runtime_kind(job)[0], job.spec.runtime_ref.name):
        raise SnapshotError("the runtime snapshot does not match spec.runtimeRef")
    return runtime


def finished(job: t.TrainJob) -> bool:
    conditions = job.status.conditions if job.status else None
    return is_true(conditions, t.ConditionType.COMPLETE) or is_true(conditions, t.ConditionType.FAILED)


def _set(status: t.TrainJobStatus, type_: str, value: str, reason_message: tuple[str, str], now: str) -> None:
    reason, message = reason_message
    new = Condition(type=type_, status=value, reason=reason, message=message, last_transition_time=now)
    status.conditions = set_condition(list(status.conditions or []), new)


def fail(status: t.TrainJobStatus, condition: Condition, now: str) -> None:
    """Set a terminal ``Failed`` condition unless the TrainJob already finished."""
    conditions = status.conditions
    if is_true(conditions, t.ConditionType.COMPLETE) or is_true(conditions, t.ConditionType.FAILED):
        return
    stamped = condition.model_copy(update={"last_transition_time": condition.last_transition_time or now})
    status.conditions = set_condition(list(conditions or []), stamped)


def suspension(job: t.TrainJob, status: t.TrainJobStatus, now: str) -> None:
    """``Suspended=True/Suspended`` while suspended; ``False/Resumed`` once after having been suspended."""
    if job.spec.suspend:
        _set(status, t.ConditionType.SUSPENDED, "True", _SUSPENDED, now)
    elif is_true(status.conditions, t.ConditionType.SUSPENDED):
        _set(status, t.ConditionType.SUSPENDED, "False", _RESUMED, now)


@dataclass(frozen=True)
class Deadline:
    exceeded: bool = False
    requeue_after: float | None = None


def deadline(job: t.TrainJob, status: t.TrainJobStatus, now: float) -> Deadline:
    """``activeDeadlineSeconds`` counted from creation or the last resume; ignored when finished or suspended."""
    seconds = job.spec.active_deadline_seconds
    done = is_true(status.conditions, t.ConditionType.COMPLETE) or is_true(
        status.conditions, t.ConditionType.FAILED
    )
    if not seconds or done or job.spec.suspend:
        return Deadline()
    resumed = find_condition(status.conditions, t.ConditionType.SUSPENDED)
    since = resumed.last_transition_time if resumed is not None and resumed.status == "False" else None
    start = since or job.metadata.creation_timestamp
    if not start:
        return Deadline()
    left = parse_rfc3339(start) + seconds - now
    if left <= 0:
        _set(status, t.ConditionType.FAILED, "True", _DEADLINE, rfc3339(now))
        return Deadline(exceeded=True)
    return Deadline(requeue_after=max(left, _MIN_REQUEUE))


def next_status(
    job: t.TrainJob, from_children: t.TrainJobStatus | None, failure: Condition | None, now: float
) -> tuple[t.TrainJobStatus, Deadline]:
    """The status to write: the status plugin's view (or the current status), then failure, suspension and
    deadline. A prior terminal condition is never dropped."""
    current = job.status.model_copy(deep=True) if job.status else t.TrainJobStatus()
    status = from_children.model_copy(deep=True) if from_children is not None else current
    for kept in (t.ConditionType.COMPLETE, t.ConditionType.FAILED):
        prior = find_condition(current.conditions, kept)
        if prior is not None and prior.status == "True" and not is_true(status.conditions, kept):
            status.conditions = set_condition(list(status.conditions or []), prior)
    stamp = rfc3339(now)
    if failure is not None:
        fail(status, failure, stamp)
    suspension(job, status, stamp)
    return status, deadline(job, status, now)


# ---------------------------------------------------------------- gangplane.dev/Waiting (controllers/pending.py)


@dataclass(frozen=True, slots=True)
class WaitingEvent:
    """An event to post on the TrainJob: ``type`` Normal or Warning, CamelCase ``reason``."""

    type: str
    reason: str
    message: str


def set_waiting(status: t.TrainJobStatus, reason: PendingReason | None, now: str) -> None:
    """Put the ``gangplane.dev/Waiting`` condition first in ``status.conditions`` (``True``, ``reason``,
    ``message``), or remove it when ``reason`` is ``None``. The transition time is kept while it stays True
    (``meta.SetStatusCondition``), so a changed reason or message is no new transition."""
    current = list(status.conditions or [])
    old = find_condition(current, WAITING_CONDITION)
    others = [c for c in current if c.type != WAITING_CONDITION]
    if reason is None:
        if old is not None:
            status.conditions = others or None
        return
    since = old.last_transition_time if old is not None and old.status == "True" else now
    new = Condition(
        type=WAITING_CONDITION,
        status="True",
        reason=str(reason.reason),
        message=reason.message,
        last_transition_time=since,
    )
    status.conditions = [new, *others]


def waiting_event(
    old: Condition | None, new: PendingReason | None, pods: Sequence[Object]
) -> WaitingEvent | None:
    """The event for a change of waiting reason or message: the new one when it differs from ``old``'s, or
    ``AllPodsRunning`` when a waiting TrainJob's pods now all run; ``None`` when nothing worth saying changed."""
    if new is not None:
        if old is not None and old.status == "True" and not new.news_since(old.reason, old.message):
            return None
        return WaitingEvent(new.event_type, str(new.reason), new.message)
    running = running_count(pods)
    if old is None or old.status != "True" or running == 0:
        return None
    return WaitingEvent("Normal", RUNNING_EVENT, f"all {running} pods running")


def waiting(status: t.TrainJobStatus | None) -> Condition | None:
    """The current ``gangplane.dev/Waiting`` condition of a status, if any."""
    return find_condition(status.conditions if status else None, WAITING_CONDITION)


def status_finished(status: t.TrainJobStatus) -> bool:
    conditions = status.conditions
    return is_true(conditions, t.ConditionType.COMPLETE) or is_true(conditions, t.ConditionType.FAILED)
