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

- finished pods are counted through the ``batch.kubernetes.io/job-tracking`` finalizer and
  ``status.uncountedTerminatedPods`` (``job_tracking.py``); the terminal condition waits until nothing is
  uncounted, and a ``FailureTarget``/``SuccessCriteriaMet`` condition already written decides it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from gangplane.clock import parse_rfc3339, rfc3339
from gangplane.controllers import job_backoff as jb
from gangplane.controllers import job_pods as jp
from gangplane.controllers import job_tracking as jt
from gangplane.controllers.job_conditions import finished, set_job_condition, success_policy_met
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

__all__ = [
    "JobPlan",
    "finished",
    "format_indexes",
    "parse_indexes",
    "plan",
    "set_job_condition",
    "success_policy_met",
]


@dataclass
class JobPlan:
    status: dict[str, Any]
    status_changed: bool = False
    create_pods: list[Object] = field(default_factory=list)
    delete_pods: list[Object] = field(default_factory=list)
    requeue_after: float | None = None
    delete_job: bool = False  # ``ttlSecondsAfterFinished`` ran out
    remove_finalizers: list[Object] = field(default_factory=list)  # counted pods: drop job-tracking


@dataclass
class _Pods:
    active: list[Object] = field(default_factory=list)
    succeeded: list[Object] = field(default_factory=list)
    failed: list[Object] = field(default_factory=list)
    terminating: list[Object] = field(default_factory=list)  # being deleted, not yet terminal

    @property
    def all(self) -> list[Object]:
        return [*self.active, *self.succeeded, *self.failed, *self.terminating]


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


@dataclass
class _Pass:
    job: Object
    pods: _Pods
    status: dict[str, Any]
    now: float
    result: JobPlan
    counts: jt.Counts = field(default_factory=lambda: jt.Counts(0, 0))
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


_Terminal = tuple[str, tuple[str, str]]  # the terminal condition's type, reason and message


def _terminate(p: _Pass, type_: str, interim: str, reason_message: tuple[str, str]) -> _Terminal:
    """The interim condition now; the terminal one (``_finish``) once the pass's pods are counted."""
    p.result.delete_pods.extend(p.pods.active)
    jt.release(p.counts, [*p.pods.active, *p.pods.terminating])
    p.condition(interim, "True", reason_message)
    return type_, reason_message


def _finish(p: _Pass, type_: str, reason_message: tuple[str, str]) -> None:
    if p.counts.pending:
        return  # ``enactJobFinished`` waits until every finished pod is counted
    p.condition(type_, "True", reason_message)
    if type_ == "Complete":
        p.status["completionTime"] = p.stamp
    ttl = spec_of(p.job).get("ttlSecondsAfterFinished")
    if ttl is not None:
        p.result.requeue_after = float(ttl)  # the TTL-after-finished controller looks again then


def _failure(p: _Pass, failed: int, failed_indexes: set[int], done: set[int]) -> tuple[str, str] | None:
    """The ``syncJob`` order: a ``FailJob`` rule, the back-off limit (failed pods, or restarts under
    ``OnFailure``), the active deadline, then the per-index limits."""
    target = find_condition(p.status.get("conditions") or [], "FailureTarget")
    if target is not None and target.get("status") == "True":  # decided before its pods were counted
        return (str(target.get("reason")), str(target.get("message")))
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


def _in_range(job: Object, pod: Object) -> bool:
    """An Indexed Job counts a failed pod only with an index below ``completions``."""
    if not jp.indexed(job):
        return True
    index = jp.pod_index(pod)
    return index is not None and index < int(spec_of(job).get("completions") or 0)


def _success_criteria_met(p: _Pass, succeeded: int, done: set[int]) -> tuple[str, str] | None:
    """Why the Job completes: a ``SuccessCriteriaMet`` condition already written (its pods being counted),
    every completion, or an Indexed Job's success policy."""
    met = find_condition(p.status.get("conditions") or [], "SuccessCriteriaMet")
    if met is not None and met.get("status") == "True":
        return (str(met.get("reason")), str(met.get("message")))
    if _complete(p, succeeded):
        return _COMPLETE
    if jp.indexed(p.job) and (message := success_policy_met(p.job, done)) is not None:
        return ("SuccessPolicy", message)
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
    removing: list[Object] = []
    removed = False  # a pod without a valid index, or a duplicate (``appendDuplicatedIndexPodsForRemoval``)
    for pod in p.pods.active:
        index = jp.pod_index(pod)
        if index is None or index >= completions or index in kept:
            removing.append(pod)
            removed = True
        elif index in done or index in failures.failed:
            removing.append(pod)
        else:
            kept[index] = pod
    p.result.delete_pods.extend(removing[: jp.MAX_POD_CREATE_DELETE_PER_SYNC])
    if removed:  # ``manageJob``: deletions take precedence, so this pass creates nothing
        return len(kept)
    terminating = p.pods.terminating if jp.only_replace_failed(p.job) else []  # they still hold their place
    waiting = {jp.pod_index(pod) for pod in terminating}
    missing = [
        i
        for i in range(completions)
        if i not in done and i not in kept and i not in failures.failed | waiting
    ]
    room = min(max(parallelism - len(kept) - len(terminating), 0), jp.MAX_POD_CREATE_DELETE_PER_SYNC)
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
    if completions is None:  # a work queue: once a pod succeeded, what runs is left to finish (no more)
        wanted = len(p.pods.active) if succeeded > 0 else parallelism
    else:
        wanted = min(parallelism, int(completions) - succeeded)
    active = p.pods.active
    if len(active) > wanted:
        p.result.delete_pods.extend(active[wanted:][: jp.MAX_POD_CREATE_DELETE_PER_SYNC])
    waiting = len(p.pods.terminating) if jp.only_replace_failed(p.job) else 0
    created = min(max(wanted - len(active) - waiting, 0), jp.MAX_POD_CREATE_DELETE_PER_SYNC)
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


def _counts(p: _Pass, active: int, succeeded: int, done: set[int], failures: jb.IndexFailures) -> None:
    """The status counters; ``succeeded`` and ``failed`` as recorded, the rest in ``uncountedTerminatedPods``."""
    ready = sum(jp.pod_ready(pod) for pod in p.pods.active if pod not in p.result.delete_pods)
    recorded = succeeded if jp.indexed(p.job) else p.counts.succeeded
    p.status["uncountedTerminatedPods"] = p.counts.status()
    for key, value in (("active", active), ("succeeded", recorded), ("failed", p.counts.failed)):
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
    p.result.remove_finalizers = [pod for pod in p.pods.all if jt.tracked(pod)]  # orphans of a finished Job
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
    p.counts = jt.track(
        jt.flushed(before, pods),
        p.pods.all,
        indexed=jp.indexed(job),
        only_replace_failed=jp.only_replace_failed(job),
        counts_failure=lambda pod: p.action(pod) != "Ignore" and _in_range(job, pod),
    )
    failures = p.index_failures() if p.per_index else jb.IndexFailures({}, set())
    done = _completed(p, failures.failed) if jp.indexed(job) else set()
    succeeded = len(done) if jp.indexed(job) else p.counts.total_succeeded
    active, terminal = 0, None
    if (reason := _failure(p, p.counts.total_failed, failures.failed, done)) is not None:
        for pod in p.pods.active:  # pods terminated by a failing Job count as failed (upstream)
            p.counts.mark_failed(pod)
        terminal = _terminate(p, "Failed", "FailureTarget", reason)
    elif (met := _success_criteria_met(p, succeeded, done)) is not None:
        terminal = _terminate(p, "Complete", "SuccessCriteriaMet", met)
    elif not _suspend_or_resume(p):
        active = _manage(p, done, succeeded, failures)
        left = _deadline_left(p)
        if left is not None:
            _wait(p, max(left, 0.001))
    later, reached = jt.capped(p.counts, before, jt.new_completed_index(job, before))
    if terminal is not None and not reached:  # ``!reachedMaxUncountedPods && enactJobFinished``
        _finish(p, *terminal)
    done -= later
    _counts(p, active, len(done) if jp.indexed(job) else succeeded, done, failures)
    p.result.remove_finalizers = p.counts.remove_finalizers
    p.result.status_changed |= p.status != before
    return p.result
