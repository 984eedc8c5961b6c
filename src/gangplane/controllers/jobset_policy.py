"""The JobSet controller's decisions, as one pure function: ``plan(jobset, jobs, ...) -> JobSetPlan``.

Follows ``sigs.k8s.io/jobset`` ``pkg/controllers/jobset_controller.go`` ``reconcile`` step for step: child Jobs
are bucketed by restart attempt and outcome; the replicated-job counters are recomputed; a finished JobSet only
cleans up; otherwise Jobs of earlier restart attempts are deleted, then the failure policy
(``failure_policy.go``), then the success policy (``success_policy.go``), then the headless Service, Job
creation in spec order honouring ``dependsOn`` (``depends_on.go``) and the InOrder startup policy
(``startup_policy.go``), and last suspend or resume. The shell performs the writes and at most one status
write per pass.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from gangplane.api.jobset import REPLICATED_JOB_NAME_LABEL
from gangplane.clock import parse_rfc3339, rfc3339
from gangplane.controllers import jobset_build as b
from gangplane.controllers.objects import (
    condition_true,
    find_condition,
    labels_of,
    name_of,
    spec_of,
    status_of,
)
from gangplane.store.base import Object

# Condition types and reasons/messages (``api/jobset/v1alpha2`` and ``pkg/constants/constants.go``).
COMPLETED, FAILED, SUSPENDED = "Completed", "Failed", "Suspended"
STARTUP_IN_PROGRESS, STARTUP_COMPLETED = "StartupPolicyInProgress", "StartupPolicyCompleted"
_COMPLETED = (COMPLETED, "True", "AllJobsCompleted", "jobset completed successfully")
_SUSPENDED = (SUSPENDED, "True", "SuspendedJobs", "jobset is suspended")
_RESUMED = (SUSPENDED, "False", "ResumeJobs", "jobset is resumed")
_IN_PROGRESS = (
    STARTUP_IN_PROGRESS,
    "True",
    "InOrderStartupPolicyInProgress",
    "in order startup policy is in progress",
)
_STARTED = (
    STARTUP_COMPLETED,
    "True",
    "InOrderStartupPolicyCompleted",
    "in order startup policy has completed",
)
_FAILED_JOBS = ("FailedJobs", "jobset failed due to one or more job failures")
_MAX_RESTARTS = ("ReachedMaxRestarts", "jobset failed due to reaching max number of restarts")
_FAIL_ACTION = ("FailJobSetFailurePolicyAction", "applying FailJobSet failure policy action")


@dataclass
class Children:
    """Child Jobs of the current restart attempt by outcome, plus those of earlier attempts."""

    active: list[Object] = field(default_factory=list)
    successful: list[Object] = field(default_factory=list)
    failed: list[Object] = field(default_factory=list)
    previous: list[Object] = field(default_factory=list)

    def names(self) -> set[str]:
        return {name_of(j) for j in (*self.active, *self.successful, *self.failed, *self.previous)}


@dataclass
class JobSetPlan:
    """What one reconcile pass does: Job writes in order, then (if changed) the one status write."""

    status: dict[str, Any]
    status_changed: bool = False
    delete_jobs: list[Object] = field(default_factory=list)
    create_service: Object | None = None
    create_jobs: list[Object] = field(default_factory=list)
    update_jobs: list[Object] = field(default_factory=list)
    delete_jobset: bool = False
    requeue_after: float | None = None


def job_finished(job: Object) -> str | None:
    """``JobFinished``: ``Complete`` or ``Failed`` when that condition is True."""
    for cond in status_of(job).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None


def classify(jobs: list[Object], attempt: int) -> Children:
    children = Children()
    for job in sorted(jobs, key=name_of):
        label = labels_of(job).get(b.RESTART_ATTEMPT_LABEL, "")
        if not label.isdigit() or int(label) < attempt:
            children.previous.append(job)
            continue
        bucket = {"Complete": children.successful, "Failed": children.failed}.get(job_finished(job) or "")
        (bucket if bucket is not None else children.active).append(job)
    return children


def _pods_expected(job: Object) -> int:
    spec = spec_of(job)
    count = int(spec.get("parallelism", 1))
    completions = spec.get("completions")
    return min(count, int(completions)) if completions is not None else count


def replicated_job_statuses(jobset: Object, children: Children) -> list[dict[str, Any]]:
    """``calculateReplicatedJobStatuses``, in spec order."""
    counts = {
        str(r["name"]): dict.fromkeys(("ready", "succeeded", "failed", "active", "suspended"), 0)
        for r in b.replicated_jobs(jobset)
    }
    for job in children.active:
        row = counts.get(labels_of(job).get(REPLICATED_JOB_NAME_LABEL, ""))
        if row is None:
            continue
        status = status_of(job)
        row["ready"] += int(status.get("succeeded", 0)) + int(status.get("ready", 0)) >= _pods_expected(job)
        row["active"] += int(status.get("active", 0)) > 0
        row["suspended"] += bool(spec_of(job).get("suspend"))
    for bucket, key in ((children.successful, "succeeded"), (children.failed, "failed")):
        for job in bucket:
            row = counts.get(labels_of(job).get(REPLICATED_JOB_NAME_LABEL, ""))
            if row is not None:
                row[key] += 1
    return [{"name": name, **row} for name, row in counts.items()]


def dependency_reached(
    rjob: dict[str, Any], replicas: dict[str, int], statuses: list[dict[str, Any]]
) -> bool:
    """``dependencyReachedStatus``: every ``dependsOn`` entry reached Ready (ready + failed + succeeded Jobs
    equal the replicas) or Complete (succeeded Jobs equal the replicas)."""
    by_name = {s["name"]: s for s in statuses}
    for dep in rjob.get("dependsOn") or []:
        status, want = by_name.get(dep.get("name")), replicas.get(dep.get("name"), 0)
        if status is None:
            return False
        done = (
            status["succeeded"]
            if dep.get("status") == "Complete"
            else (status["ready"] + status["failed"] + status["succeeded"])
        )
        if done != want:
            return False
    return True


def update_condition(status: dict[str, Any], cond: tuple[str, str, str, str], now: str) -> bool:
    """``updateCondition``: add a True condition, or flip the status of an existing one (identical status is a
    no-op, even with another reason); StartupPolicyInProgress and StartupPolicyCompleted exclude each other."""
    type_, value, reason, message = cond
    conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
    new = {"type": type_, "status": value, "reason": reason, "message": message, "lastTransitionTime": now}
    changed = False
    exclusive = {STARTUP_IN_PROGRESS, STARTUP_COMPLETED}
    for i, current in enumerate(conditions):
        if current.get("type") == type_:
            if current.get("status") != value:
                conditions[i], changed = new, True
        elif {current.get("type"), type_} == exclusive and current.get("status") == value == "True":
            conditions[i] = {**current, "status": "False"}
            changed = True
    if find_condition(conditions, type_) is None and value == "True":
        conditions.append(new)
        changed = True
    if not conditions:
        status.pop("conditions")
    return changed


def finished(jobset: Object) -> bool:
    return condition_true(jobset, COMPLETED) or condition_true(jobset, FAILED)


def _first_failed(jobs: list[Object]) -> Object:
    def failed_at(job: Object) -> str:
        cond = find_condition(status_of(job).get("conditions") or [], "Failed") or {}
        return str(cond.get("lastTransitionTime") or "")

    return min(jobs, key=lambda j: (failed_at(j), name_of(j)))


def rule_applies(rule: dict[str, Any], job: Object) -> bool:
    """``ruleIsApplicable``: the Job's failure reason is among ``onJobFailureReasons``, its failure message
    matches one of ``onJobFailureMessagePatterns`` and its replicated job is among ``targetReplicatedJobs``
    (an empty list admits any); a Job without a replicated job matches no rule."""
    cond = find_condition(status_of(job).get("conditions") or [], "Failed") or {}
    reasons, targets = rule.get("onJobFailureReasons") or [], rule.get("targetReplicatedJobs") or []
    patterns = rule.get("onJobFailureMessagePatterns") or []
    rjob = labels_of(job).get(REPLICATED_JOB_NAME_LABEL, "")
    if (reasons and cond.get("reason") not in reasons) or (targets and rjob not in targets) or not rjob:
        return False
    return not patterns or any(_searches(str(p), str(cond.get("message") or "")) for p in patterns)


def _searches(pattern: str, text: str) -> bool:
    """Go's ``regexp.MatchString``: the pattern found anywhere in ``text``; one Python cannot compile (RE2
    and Python differ at the edges) matches nothing."""
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False


def first_failed_rule_and_job(
    rules: list[dict[str, Any]], failed: list[Object]
) -> tuple[dict[str, Any] | None, Object | None]:
    """``findFirstFailedPolicyRuleAndJob``: the first rule some failed Job matches, with the earliest failed
    of the Jobs it matches; (None, None) when no rule matches."""
    for rule in rules:
        matching = [j for j in failed if rule_applies(rule, j)]
        if matching:
            return rule, _first_failed(matching)
    return None, None


def _fail(status: dict[str, Any], reason_message: tuple[str, str], job: Object, now: str) -> bool:
    reason, message = reason_message
    text = f"{message} (first failed job: {name_of(job)})"
    changed = update_condition(status, (FAILED, "True", reason, text), now)
    status["terminalState"] = FAILED
    return changed


def apply_failure_policy(jobset: Object, failed: list[Object], status: dict[str, Any], now: str) -> bool:
    """``executeFailurePolicy``: fail the JobSet, or count a restart (the next pass recreates the Jobs)."""
    policy = spec_of(jobset).get("failurePolicy")
    if not isinstance(policy, dict):
        return _fail(status, _FAILED_JOBS, _first_failed(failed), now)
    rule, matched = first_failed_rule_and_job(list(policy.get("rules") or []), failed)
    action = str(rule.get("action")) if rule is not None else "RestartJobSet"
    job = matched if matched is not None else _first_failed(failed)
    if action == "FailJobSet":
        return _fail(status, _FAIL_ACTION, job, now)
    counted = action == "RestartJobSet"
    if counted and int(status.get("restartsCountTowardsMax") or 0) >= int(policy.get("maxRestarts") or 0):
        return _fail(status, _MAX_RESTARTS, job, now)
    status["restarts"] = int(status.get("restarts") or 0) + 1
    if counted:
        status["restartsCountTowardsMax"] = int(status.get("restartsCountTowardsMax") or 0) + 1
    return True


def success_reached(jobset: Object, successful: list[Object]) -> bool:
    """``executeSuccessPolicy``: All -> every Job of the target replicated jobs succeeded; Any -> one did."""
    policy = spec_of(jobset).get("successPolicy") or {}
    targets = policy.get("targetReplicatedJobs") or []

    def targeted(rjob_name: str) -> bool:
        return not targets or rjob_name in targets

    done = sum(targeted(labels_of(j).get(REPLICATED_JOB_NAME_LABEL, "")) for j in successful)
    if policy.get("operator") == "Any":
        return done >= 1
    wanted = sum(b.replicas_of(r) for r in b.replicated_jobs(jobset) if targeted(str(r["name"])))
    return done >= wanted


def _in_order(jobset: Object) -> bool:
    return (spec_of(jobset).get("startupPolicy") or {}).get("startupPolicyOrder") == "InOrder"


def _all_started(rjob: dict[str, Any], statuses: list[dict[str, Any]]) -> bool:
    row = next((s for s in statuses if s["name"] == rjob["name"]), None)
    return row is not None and b.replicas_of(rjob) == row["failed"] + row["ready"] + row["succeeded"]


@dataclass
class _Pass:
    jobset: Object
    children: Children
    statuses: list[dict[str, Any]]
    plan: JobSetPlan
    now: str

    def condition(self, cond: tuple[str, str, str, str]) -> None:
        if update_condition(self.plan.status, cond, self.now):
            self.plan.status_changed = True


def _create_jobs(p: _Pass) -> None:
    """``reconcileReplicatedJobs``."""
    js, blocking = p.jobset, (spec_of(p.jobset).get("failurePolicy") or {}).get("restartStrategy")
    existing, replicas = p.children.names(), {str(r["name"]): b.replicas_of(r) for r in b.replicated_jobs(js)}
    in_order = not b.suspended(js) and _in_order(js)
    for rjob in b.replicated_jobs(js):
        if not dependency_reached(rjob, replicas, p.statuses):
            continue
        if in_order and _all_started(rjob, p.statuses):
            continue
        if not (blocking == "BlockingRecreate" and p.children.previous):
            for index in range(b.replicas_of(rjob)):
                if b.job_name(name_of(js), rjob["name"], index) not in existing:
                    p.plan.create_jobs.append(b.build_job(js, rjob, index))
        if in_order:
            p.condition(_IN_PROGRESS)
            return
    if in_order:
        p.condition(_STARTED)


def _suspend_or_resume(p: _Pass) -> None:
    js = p.jobset
    if b.suspended(js):
        for job in p.children.active:
            if not spec_of(job).get("suspend"):
                p.plan.update_jobs.append(_with_spec(job, suspend=True))
        p.condition(_SUSPENDED)
        return
    replicas = {str(r["name"]): b.replicas_of(r) for r in b.replicated_jobs(js)}
    for rjob in b.replicated_jobs(js):
        if not dependency_reached(rjob, replicas, p.statuses):
            continue
        if _in_order(js) and _all_started(rjob, p.statuses):
            continue
        for job in p.children.active:
            if labels_of(job).get(REPLICATED_JOB_NAME_LABEL) == rjob["name"] and spec_of(job).get("suspend"):
                p.plan.update_jobs.append(
                    _with_spec(job, suspend=False, template=b.resumed_template(job, rjob))
                )
        if _in_order(js):
            p.condition(_IN_PROGRESS)
            return
    p.condition(_RESUMED)


def _with_spec(job: Object, **changes: Any) -> Object:
    out = copy.deepcopy(job)
    out["spec"] = {**spec_of(out), **changes}
    return out


def _ttl(jobset: Object, now: float) -> tuple[bool, float | None]:
    """``executeTTLAfterFinishedPolicy``: (delete now, seconds until deletion)."""
    ttl = spec_of(jobset).get("ttlSecondsAfterFinished")
    conditions = status_of(jobset).get("conditions") or []
    done = find_condition(conditions, COMPLETED) or find_condition(conditions, FAILED)
    if ttl is None or done is None or not done.get("lastTransitionTime"):
        return False, None
    left = parse_rfc3339(str(done["lastTransitionTime"])) + float(ttl) - now
    return (True, None) if left <= 0 else (False, left)


def plan(jobset: Object, jobs: list[Object], *, service_exists: bool, now: float) -> JobSetPlan:
    """Everything one pass of the JobSet controller does, given the JobSet (stored form) and its Jobs."""
    js = b.defaulted(jobset)
    children = classify(jobs, b.restarts(js))
    statuses = replicated_job_statuses(js, children)
    status = copy.deepcopy(status_of(js))
    result = JobSetPlan(status=status, status_changed=status.get("replicatedJobsStatus") != statuses)
    status["replicatedJobsStatus"] = statuses
    p = _Pass(js, children, statuses, result, rfc3339(now))
    if finished(js):
        result.delete_jobs = list(children.active)
        result.delete_jobset, result.requeue_after = _ttl(js, now)
        return result
    result.delete_jobs = [j for j in children.previous if not j.get("metadata", {}).get("deletionTimestamp")]
    if children.failed:
        result.status_changed |= apply_failure_policy(js, children.failed, status, p.now)
        return result
    if children.successful and success_reached(js, children.successful):
        p.condition(_COMPLETED)
        status["terminalState"] = COMPLETED
        return result
    if b.dns_hostnames_enabled(js) and not service_exists:
        result.create_service = b.headless_service(js)
    _create_jobs(p)
    _suspend_or_resume(p)
    return result
