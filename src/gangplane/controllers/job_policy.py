"""The Job controller's decisions as one pure function: ``plan(job, pods, now) -> JobPlan``.

A compact port of ``pkg/controller/job/job_controller.go`` ``syncJob``/``manageJob``:
- pods are active (not finished, not being deleted), succeeded or failed; a failed pod counts towards
  ``backoffLimit`` unless the pod failure policy says ``Ignore`` (``FailJob`` fails the Job at once);
- ``failed > backoffLimit`` -> ``Failed/BackoffLimitExceeded``; ``activeDeadlineSeconds`` past ``startTime`` ->
  ``Failed/DeadlineExceeded``; every completion reached -> ``Complete/CompletionsReached``; each terminal
  condition comes with its interim one (``FailureTarget``, ``SuccessCriteriaMet``) as on Kubernetes >= 1.31;
  a finished Job deletes its remaining active pods;
- suspended: active pods are deleted (not counted as failures), ``Suspended=True/JobSuspended``,
  ``startTime`` cleared; resumed: ``Suspended=False/JobResumed`` and ``startTime`` restarts;
- Indexed: one pod per index not yet completed, lowest first, at most ``parallelism`` active; extra pods
  for one index are deleted. NonIndexed: ``min(parallelism, completions - succeeded)`` pods.

Differences, on purpose: pods are replaced without the exponential back-off delay; failure counting does
not use the ``job-tracking`` finalizer, so ``failed`` is the larger of the recorded count and the failed pods
still present; ``FailIndex`` and ``backoffLimitPerIndex`` are not modelled (treated as ``Count``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from gangplane.clock import parse_rfc3339, rfc3339
from gangplane.controllers import job_pods as jp
from gangplane.controllers.objects import deleting, find_condition, name_of, spec_of, status_of
from gangplane.store.base import Object

_COMPLETE = ("CompletionsReached", "Reached expected number of succeeded pods")
_BACKOFF = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
_DEADLINE = ("DeadlineExceeded", "Job was active longer than specified deadline")
_SUSPENDED = ("JobSuspended", "Job suspended")
_RESUMED = ("JobResumed", "Job resumed")


@dataclass
class JobPlan:
    status: dict[str, Any]
    status_changed: bool = False
    create_pods: list[Object] = field(default_factory=list)
    delete_pods: list[Object] = field(default_factory=list)
    requeue_after: float | None = None


@dataclass
class _Pods:
    active: list[Object] = field(default_factory=list)
    succeeded: list[Object] = field(default_factory=list)
    failed: list[Object] = field(default_factory=list)


def _partition(pods: list[Object]) -> _Pods:
    out = _Pods()
    for pod in sorted(
        pods, key=lambda p: (str(p.get("metadata", {}).get("creationTimestamp", "")), name_of(p))
    ):
        phase = jp.phase(pod)
        if phase == "Succeeded":
            out.succeeded.append(pod)
        elif phase == "Failed":
            out.failed.append(pod)
        elif not deleting(pod):
            out.active.append(pod)
    return out


def finished(job: Object) -> bool:
    conditions = status_of(job).get("conditions") or []
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in conditions)


def parse_indexes(text: str) -> set[int]:
    """``completedIndexes`` ("1,3-5") -> {1, 3, 4, 5}."""
    out: set[int] = set()
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        out.update(range(int(first), int(last or first) + 1))
    return out


def format_indexes(indexes: set[int]) -> str:
    """The compressed interval form Kubernetes writes: consecutive runs become ``a-b``."""
    runs: list[list[int]] = []
    for i in sorted(indexes):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def set_job_condition(
    status: dict[str, Any], type_: str, value: str, reason_message: tuple[str, str], now: str
) -> bool:
    """Add or update a JobCondition; the transition time moves only when the status changes."""
    conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
    reason, message = reason_message
    old = find_condition(conditions, type_)
    if old is not None and (old.get("status"), old.get("reason"), old.get("message")) == (
        value,
        reason,
        message,
    ):
        return False
    since = old["lastTransitionTime"] if old is not None and old.get("status") == value else now
    new = {"type": type_, "status": value, "lastProbeTime": now, "lastTransitionTime": since,
           "reason": reason, "message": message}  # fmt: skip
    status["conditions"] = [new if c is old else c for c in conditions] if old else [*conditions, new]
    return True


@dataclass
class _Pass:
    job: Object
    pods: _Pods
    status: dict[str, Any]
    now: float
    result: JobPlan

    @property
    def stamp(self) -> str:
        return rfc3339(self.now)

    def condition(self, type_: str, value: str, reason_message: tuple[str, str]) -> None:
        self.result.status_changed |= set_job_condition(self.status, type_, value, reason_message, self.stamp)


def _counted_failures(p: _Pass) -> tuple[int, jp.FailureMatch | None]:
    counted, fail_job = 0, None
    for pod in p.pods.failed:
        match = jp.match_failure_policy(p.job, pod)
        if match is not None and match.action == "FailJob" and fail_job is None:
            fail_job = match
        if match is None or match.action != "Ignore":
            counted += 1
    return max(counted, int(p.status.get("failed") or 0)), fail_job


def _completed(p: _Pass) -> set[int]:
    completions = int(spec_of(p.job).get("completions") or 0)
    done = parse_indexes(str(p.status.get("completedIndexes") or ""))
    done |= {i for pod in p.pods.succeeded if (i := jp.pod_index(pod)) is not None}
    return {i for i in done if i < completions}


def _deadline_left(p: _Pass) -> float | None:
    deadline, start = spec_of(p.job).get("activeDeadlineSeconds"), p.status.get("startTime")
    if deadline is None or not start or spec_of(p.job).get("suspend"):
        return None
    return parse_rfc3339(str(start)) + float(deadline) - p.now


def _terminate(p: _Pass, type_: str, interim: str, reason_message: tuple[str, str]) -> None:
    p.result.delete_pods.extend(p.pods.active)
    p.condition(interim, "True", reason_message)
    p.condition(type_, "True", reason_message)
    if type_ == "Complete":
        p.status["completionTime"] = p.stamp


def _failure(p: _Pass, failed: int) -> tuple[str, str] | None:
    fail_job = _counted_failures(p)[1]
    if fail_job is not None:
        return ("PodFailurePolicy", fail_job.message)
    if failed > int(spec_of(p.job).get("backoffLimit", jp.DEFAULT_BACKOFF_LIMIT)):
        return _BACKOFF
    left = _deadline_left(p)
    if left is not None and left <= 0:
        return _DEADLINE
    return None


def _complete(p: _Pass, succeeded: int) -> bool:
    completions = spec_of(p.job).get("completions")
    if completions is None:
        return succeeded >= 1 and not p.pods.active
    return succeeded >= int(completions)


def _suspend_or_resume(p: _Pass) -> bool:
    """True when the Job is suspended (nothing more to do this pass)."""
    if spec_of(p.job).get("suspend"):
        p.result.delete_pods.extend(p.pods.active)
        p.condition("Suspended", "True", _SUSPENDED)
        p.status.pop("startTime", None)
        return True
    suspended = find_condition(p.status.get("conditions") or [], "Suspended")
    if suspended is not None and suspended.get("status") == "True":
        p.condition("Suspended", "False", _RESUMED)
        p.status["startTime"] = p.stamp
    p.status.setdefault("startTime", p.stamp)
    return False


def _manage_indexed(p: _Pass, done: set[int]) -> int:
    """Create pods for missing indexes, delete duplicates; returns the number of active pods afterwards."""
    spec = spec_of(p.job)
    completions, parallelism = int(spec.get("completions") or 0), int(spec.get("parallelism", 1))
    kept: dict[int, Object] = {}
    for pod in p.pods.active:
        index = jp.pod_index(pod)
        if index is None or index >= completions or index in done or index in kept:
            p.result.delete_pods.append(pod)
        else:
            kept[index] = pod
    missing = [i for i in range(completions) if i not in done and i not in kept]
    room = max(parallelism - len(kept), 0)
    p.result.create_pods.extend(jp.build_pod(p.job, i) for i in missing[:room])
    return len(kept) + min(room, len(missing))


def _manage_non_indexed(p: _Pass, succeeded: int) -> int:
    spec = spec_of(p.job)
    parallelism, completions = int(spec.get("parallelism", 1)), spec.get("completions")
    wanted = parallelism if completions is None else min(parallelism, int(completions) - succeeded)
    active = p.pods.active
    if len(active) > wanted:
        p.result.delete_pods.extend(active[wanted:])
    p.result.create_pods.extend(jp.build_pod(p.job, None) for _ in range(wanted - len(active)))
    return max(wanted, 0)


def _counts(p: _Pass, active: int, succeeded: int, failed: int, done: set[int]) -> None:
    ready = sum(jp.pod_ready(pod) for pod in p.pods.active if pod not in p.result.delete_pods)
    for key, value in (("active", active), ("succeeded", succeeded), ("failed", failed)):
        if value:
            p.status[key] = value
        else:
            p.status.pop(key, None)
    p.status["ready"] = ready
    if done:
        p.status["completedIndexes"] = format_indexes(done)


def plan(job: Object, pods: list[Object], now: float) -> JobPlan:
    """One pass of the Job controller over a Job and the pods it controls."""
    job = jp.defaulted_job(job)
    before = copy.deepcopy(status_of(job))
    p = _Pass(job, _partition(pods), copy.deepcopy(before), now, JobPlan(status={}))
    p.result.status = p.status
    if finished(job):
        p.result.delete_pods.extend(p.pods.active)
        return p.result
    failed = _counted_failures(p)[0]
    done = _completed(p) if jp.indexed(job) else set()
    succeeded = (
        len(done) if jp.indexed(job) else max(len(p.pods.succeeded), int(before.get("succeeded") or 0))
    )
    active = 0
    if (reason := _failure(p, failed)) is not None:
        _terminate(p, "Failed", "FailureTarget", reason)
    elif _complete(p, succeeded):
        _terminate(p, "Complete", "SuccessCriteriaMet", _COMPLETE)
    elif not _suspend_or_resume(p):
        active = _manage_indexed(p, done) if jp.indexed(job) else _manage_non_indexed(p, succeeded)
        left = _deadline_left(p)
        p.result.requeue_after = max(left, 0.0) if left is not None else None
    _counts(p, active, succeeded, failed, done)
    p.result.status_changed |= p.status != before
    return p.result
