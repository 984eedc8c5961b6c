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

- under ``restartPolicy: OnFailure`` container restarts of pending/running pods count too
  (``pastBackoffLimitOnFailure``); replacements wait out the pod failure back-off (``job_backoff.py``);
- ``backoffLimitPerIndex``: an index fails past its own limit or on a ``FailIndex`` rule; the Job fails with
  ``MaxFailedIndexesExceeded`` or, once every index is done, ``FailedIndexes``; ``successPolicy`` completes
  an Indexed Job early with ``SuccessPolicy``; ``ttlSecondsAfterFinished`` deletes a finished Job (the
  TTL-after-finished controller); ``podReplacementPolicy`` ``Failed`` (the default with a pod failure policy)
  waits for terminating pods to end before replacing them, and ``status.terminating`` counts them.

Differences, on purpose: failure counting does not use the ``job-tracking`` finalizer, so ``failed`` is the
larger of the recorded count and the failed pods still present (the embedded cluster keeps them until the
Job goes); ``FailureTarget`` and ``Failed`` are written in the same pass, since no pod finalizers need
removing in between.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from gangplane.clock import parse_rfc3339, rfc3339
from gangplane.controllers import job_backoff as jb
from gangplane.controllers import job_pods as jp
from gangplane.controllers.job_pods import format_indexes, parse_indexes
from gangplane.controllers.objects import deleting, find_condition, name_of, spec_of, status_of
from gangplane.store.base import Object

_COMPLETE = ("CompletionsReached", "Reached expected number of succeeded pods")
_BACKOFF = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
_DEADLINE = ("DeadlineExceeded", "Job was active longer than specified deadline")
_SUSPENDED = ("JobSuspended", "Job suspended")
_RESUMED = ("JobResumed", "Job resumed")
_MAX_FAILED_INDEXES = (
    "MaxFailedIndexesExceeded",
    "Job has exceeded the specified maximal number of failed indexes",
)
_FAILED_INDEXES = ("FailedIndexes", "Job has failed indexes")

__all__ = ["JobPlan", "finished", "format_indexes", "parse_indexes", "plan", "set_job_condition"]


@dataclass
class JobPlan:
    status: dict[str, Any]
    status_changed: bool = False
    create_pods: list[Object] = field(default_factory=list)
    delete_pods: list[Object] = field(default_factory=list)
    requeue_after: float | None = None
    delete_job: bool = False  # ``ttlSecondsAfterFinished`` ran out


@dataclass
class _Pods:
    active: list[Object] = field(default_factory=list)
    succeeded: list[Object] = field(default_factory=list)
    failed: list[Object] = field(default_factory=list)
    terminating: list[Object] = field(default_factory=list)  # being deleted, not yet terminal


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
        elif deleting(pod):
            out.terminating.append(pod)
        else:
            out.active.append(pod)
    return out


def only_replace_failed(job: Object) -> bool:
    """``podReplacementPolicy``: ``Failed`` (the default with a pod failure policy) waits for a terminating
    pod to end before replacing it; ``TerminatingOrFailed`` replaces it at once."""
    spec = spec_of(job)
    default = "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
    return bool(spec.get("podReplacementPolicy", default) == "Failed")


def finished(job: Object) -> bool:
    conditions = status_of(job).get("conditions") or []
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in conditions)


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
    actions: dict[str, jp.FailureMatch | None] = field(default_factory=dict)

    @property
    def stamp(self) -> str:
        return rfc3339(self.now)

    def condition(self, type_: str, value: str, reason_message: tuple[str, str]) -> None:
        self.result.status_changed |= set_job_condition(self.status, type_, value, reason_message, self.stamp)

    def match(self, pod: Object) -> jp.FailureMatch | None:
        """The pod failure policy rule a failed pod matches (computed once per pod and pass)."""
        key = name_of(pod)
        if key not in self.actions:
            self.actions[key] = jp.match_failure_policy(self.job, pod)
        return self.actions[key]

    def action(self, pod: Object) -> str | None:
        found = self.match(pod)
        return None if found is None else found.action

    def counted_failed(self) -> list[Object]:
        return [pod for pod in self.pods.failed if self.action(pod) != "Ignore"]

    @property
    def per_index(self) -> bool:
        return jp.indexed(self.job) and spec_of(self.job).get("backoffLimitPerIndex") is not None

    def index_failures(self) -> jb.IndexFailures:
        return jb.index_failures(self.job, self.pods.failed, self.action)


def _fail_job_match(p: _Pass) -> jp.FailureMatch | None:
    """``getFailJobMessage``: the first failed pod matching a ``FailJob`` rule."""
    for pod in p.pods.failed:
        found = p.match(pod)
        if found is not None and found.action == "FailJob":
            return found
    return None


def _completed(p: _Pass, failed_indexes: set[int]) -> set[int]:
    completions = int(spec_of(p.job).get("completions") or 0)
    done = parse_indexes(str(p.status.get("completedIndexes") or ""))
    done |= {i for pod in p.pods.succeeded if (i := jp.pod_index(pod)) is not None}
    return {i for i in done if i < completions and i not in failed_indexes}


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
    ttl = spec_of(p.job).get("ttlSecondsAfterFinished")
    if ttl is not None:
        p.result.requeue_after = float(ttl)  # the TTL-after-finished controller looks again then


def _failure(p: _Pass, failed: int, failed_indexes: set[int], done: set[int]) -> tuple[str, str] | None:
    """The ``syncJob`` order: a ``FailJob`` rule, the back-off limit (failed pods, or restarts under
    ``OnFailure``), the active deadline, then the per-index limits."""
    fail_job = _fail_job_match(p)
    if fail_job is not None:
        return ("PodFailurePolicy", fail_job.message)
    if failed > int(spec_of(p.job)["backoffLimit"]) or jb.past_backoff_limit_on_failure(p.job, p.pods.active):
        return _BACKOFF
    left = _deadline_left(p)
    if left is not None and left <= 0:
        return _DEADLINE
    if p.per_index:
        most = spec_of(p.job).get("maxFailedIndexes")
        if most is not None and len(failed_indexes) > int(most):
            return _MAX_FAILED_INDEXES
        if failed_indexes and len(failed_indexes) + len(done) >= int(spec_of(p.job).get("completions") or 0):
            return _FAILED_INDEXES
    return None


def _complete(p: _Pass, succeeded: int) -> bool:
    completions = spec_of(p.job).get("completions")
    if completions is None:
        return succeeded >= 1 and not p.pods.active
    return succeeded >= int(completions)


def success_policy_met(job: Object, done: set[int]) -> str | None:
    """``matchSuccessPolicy``: the first rule whose ``succeededIndexes`` all succeeded, or of which (or of
    all indexes, without ``succeededIndexes``) at least ``succeededCount`` did; its message, else None."""
    rules = (spec_of(job).get("successPolicy") or {}).get("rules") or []
    for i, rule in enumerate(rules):
        wanted = rule.get("succeededIndexes")
        hit = done & parse_indexes(str(wanted)) if wanted is not None else done
        count = rule.get("succeededCount")
        if (count is not None and len(hit) >= int(count)) or (
            count is None and wanted is not None and hit == parse_indexes(str(wanted))
        ):
            return f"Matched rules at index {i}"
    return None


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


def _wait(p: _Pass, seconds: float) -> None:
    if seconds > 0:
        current = p.result.requeue_after
        p.result.requeue_after = seconds if current is None else min(current, seconds)


def _index_backoff(p: _Pass, index: int) -> float:
    """Per-index back-off (``backoffLimitPerIndex``): failures of this index since it last started."""
    mine = [pod for pod in p.pods.failed if jp.pod_index(pod) == index]
    return jb.remaining(jb.backoff_record([], mine), p.now)


def _indexed_pod(p: _Pass, index: int, failures: jb.IndexFailures) -> Object:
    pod = jp.build_pod(p.job, index)
    if p.per_index:
        ignored = sum(1 for f in p.pods.failed if jp.pod_index(f) == index and p.action(f) == "Ignore")
        pod["metadata"]["annotations"] |= {
            jb.INDEX_FAILURE_COUNT: str(failures.counts.get(index, 0)),
            jb.INDEX_IGNORED_FAILURE_COUNT: str(ignored),
        }
    return pod


def _manage_indexed(p: _Pass, done: set[int], failures: jb.IndexFailures) -> int:
    """Create pods for missing indexes, delete duplicates and pods of failed indexes; returns the number of
    active pods afterwards."""
    spec = spec_of(p.job)
    completions, parallelism = int(spec.get("completions") or 0), int(spec.get("parallelism", 1))
    kept: dict[int, Object] = {}
    for pod in p.pods.active:
        index = jp.pod_index(pod)
        if (
            index is None
            or index >= completions
            or index in done
            or index in kept
            or index in failures.failed
        ):
            p.result.delete_pods.append(pod)
        else:
            kept[index] = pod
    waiting = {jp.pod_index(pod) for pod in p.pods.terminating} if only_replace_failed(p.job) else set()
    missing = [
        i
        for i in range(completions)
        if i not in done and i not in kept and i not in failures.failed | waiting
    ]
    room = max(parallelism - len(kept), 0)
    created = 0
    for index in missing[:room]:
        wait = _index_backoff(p, index) if p.per_index else 0.0
        if wait > 0:
            _wait(p, wait)
            continue
        p.result.create_pods.append(_indexed_pod(p, index, failures))
        created += 1
    return len(kept) + created


def _manage_non_indexed(p: _Pass, succeeded: int) -> int:
    spec = spec_of(p.job)
    parallelism, completions = int(spec.get("parallelism", 1)), spec.get("completions")
    wanted = parallelism if completions is None else min(parallelism, int(completions) - succeeded)
    active = p.pods.active
    if len(active) > wanted:
        p.result.delete_pods.extend(active[wanted:])
    waiting = len(p.pods.terminating) if only_replace_failed(p.job) else 0
    created = max(wanted - len(active) - waiting, 0)
    p.result.create_pods.extend(jp.build_pod(p.job, None) for _ in range(created))
    return min(len(active), max(wanted, 0)) + created


def _manage(p: _Pass, done: set[int], succeeded: int, failures: jb.IndexFailures) -> int:
    """``manageJob``: replacements wait out the Job's back-off (per index with ``backoffLimitPerIndex``)."""
    if not p.per_index:
        wait = jb.remaining(jb.backoff_record(p.pods.succeeded, p.pods.failed), p.now)
        if wait > 0 and len(p.pods.active) < int(spec_of(p.job).get("parallelism", 1)):
            _wait(p, wait)
            return len(p.pods.active)
    return _manage_indexed(p, done, failures) if jp.indexed(p.job) else _manage_non_indexed(p, succeeded)


def _counts(
    p: _Pass, active: int, succeeded: int, failed: int, done: set[int], failures: jb.IndexFailures
) -> None:
    ready = sum(jp.pod_ready(pod) for pod in p.pods.active if pod not in p.result.delete_pods)
    for key, value in (("active", active), ("succeeded", succeeded), ("failed", failed)):
        if value:
            p.status[key] = value
        else:
            p.status.pop(key, None)
    p.status["ready"] = ready
    p.status["terminating"] = len(p.pods.terminating)
    if done:
        p.status["completedIndexes"] = format_indexes(done)
    if p.per_index:
        p.status["failedIndexes"] = format_indexes(failures.failed)


def _after_finish(p: _Pass) -> JobPlan:
    """A finished Job deletes its leftover pods, and itself once ``ttlSecondsAfterFinished`` has passed."""
    p.result.delete_pods.extend(p.pods.active)
    ttl = spec_of(p.job).get("ttlSecondsAfterFinished")
    conditions = p.status.get("conditions") or []
    done = find_condition(conditions, "Complete") or find_condition(conditions, "Failed")
    if ttl is not None and done is not None and done.get("lastTransitionTime"):
        left = parse_rfc3339(str(done["lastTransitionTime"])) + float(ttl) - p.now
        p.result.delete_job = left <= 0
        p.result.requeue_after = left if left > 0 else None
    return p.result


def plan(job: Object, pods: list[Object], now: float) -> JobPlan:
    """One pass of the Job controller over a Job and the pods it controls."""
    job = jp.defaulted_job(job)
    before = copy.deepcopy(status_of(job))
    p = _Pass(job, _partition(pods), copy.deepcopy(before), now, JobPlan(status={}))
    p.result.status = p.status
    if finished(job):
        return _after_finish(p)
    failed = max(len(p.counted_failed()), int(before.get("failed") or 0))
    failures = p.index_failures() if p.per_index else jb.IndexFailures({}, set())
    done = _completed(p, failures.failed) if jp.indexed(job) else set()
    succeeded = (
        len(done) if jp.indexed(job) else max(len(p.pods.succeeded), int(before.get("succeeded") or 0))
    )
    active = 0
    if (reason := _failure(p, failed, failures.failed, done)) is not None:
        failed += len(p.pods.active)  # pods terminated by a failing Job count as failed (upstream)
        _terminate(p, "Failed", "FailureTarget", reason)
    elif _complete(p, succeeded):
        _terminate(p, "Complete", "SuccessCriteriaMet", _COMPLETE)
    elif jp.indexed(job) and (message := success_policy_met(job, done)) is not None:
        _terminate(p, "Complete", "SuccessCriteriaMet", ("SuccessPolicy", message))
    elif not _suspend_or_resume(p):
        active = _manage(p, done, succeeded, failures)
        left = _deadline_left(p)
        if left is not None:
            _wait(p, max(left, 0.001))
    _counts(p, active, succeeded, failed, done, failures)
    p.result.status_changed |= p.status != before
    return p.result
