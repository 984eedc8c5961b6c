"""The JobSet failure policy, ported from kubernetes-sigs/jobset ``pkg/controllers/failure_policy_test.go``
(case names kept): ``TestFailurePolicyRuleIsApplicable``, ``TestFindFirstFailedPolicyRuleAndJob``,
``TestFindFirstFailedJob`` (the cases with a failed condition: the controller only hands it Jobs that
failed) and ``TestApplyFailurePolicyRuleAction``."""

from __future__ import annotations

from typing import Any

import pytest

from gangplane.api.jobset import REPLICATED_JOB_NAME_LABEL
from gangplane.clock import rfc3339
from gangplane.controllers import jobset_policy as jsp

NOW = 1_767_225_600.0
HOUR = 3600.0
BACKOFF, DEADLINE, INDEXES = "BackoffLimitExceeded", "DeadlineExceeded", "FailedIndexes"


def failed_job(
    name: str = "test-job", rjob: str = "test-replicated-job-1", reason: str = "", message: str = "",
    ago: float = 0.0,
) -> dict[str, Any]:  # fmt: skip
    cond = {"type": "Failed", "status": "True", "reason": reason, "message": message,
            "lastTransitionTime": rfc3339(NOW - ago)}  # fmt: skip
    meta = {"name": name, "namespace": "default", "labels": {REPLICATED_JOB_NAME_LABEL: rjob} if rjob else {}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "status": {"conditions": [cond]}}


def rule(action: str = "RestartJobSet", **fields: Any) -> dict[str, Any]:
    return {"action": action, **fields}


# TestFailurePolicyRuleIsApplicable: (rule fields, parent replicated job, reason, message) -> applies
RULE_IS_APPLICABLE = {
    "a job has failed and the failure policy rule matches all possible parent replicated jobs and matches all "
    "possible job failure reasons": (
        {"onJobFailureReasons": [], "targetReplicatedJobs": []}, "test-replicated-job-1", BACKOFF, "", True),
    "a job has failed and the failure policy rule matches all possible parent replicated jobs and matches the "
    "job failure reason": (
        {"onJobFailureReasons": [BACKOFF], "targetReplicatedJobs": []}, "test-replicated-job-1", BACKOFF, "", True),
    "a job has failed and the failure policy rule matches all possible parent replicated jobs and does not "
    "match the job failure reason": (
        {"onJobFailureReasons": [BACKOFF], "targetReplicatedJobs": []}, "test-replicated-job-1", DEADLINE, "",
        False),
    "a job has failed and the failure policy rule matches the parent replicatedJob and matches all possible "
    "job failure reasons": (
        {"onJobFailureReasons": [], "targetReplicatedJobs": ["test-replicated-job-1"]}, "test-replicated-job-1",
        BACKOFF, "", True),
    "a job has failed and the failure policy rule matches the parent replicatedJob and matches the job "
    "failure reason": (
        {"onJobFailureReasons": [BACKOFF], "targetReplicatedJobs": ["test-replicated-job-1"]},
        "test-replicated-job-1", BACKOFF, "", True),
    "a job has failed and the failure policy rule matches the parent replicatedJob and does not match the job "
    "failure reason": (
        {"onJobFailureReasons": [BACKOFF], "targetReplicatedJobs": ["test-replicated-job-1"]},
        "test-replicated-job-1", DEADLINE, "", False),
    "a job has failed and the failure policy rule does not match the parent replicatedJob and matches all "
    "possible job failure reasons": (
        {"onJobFailureReasons": [], "targetReplicatedJobs": ["test-replicated-job-1"]}, "test-replicated-job-2",
        BACKOFF, "", False),
    "a job has failed and the failure policy rule does not match the parent replicatedJob and matches the job "
    "failure reason": (
        {"onJobFailureReasons": [BACKOFF], "targetReplicatedJobs": ["test-replicated-job-1"]},
        "test-replicated-job-2", BACKOFF, "", False),
    "a job has failed and the failure policy rule does not match the parent replicatedJob and does not match "
    "the job failure reason": (
        {"onJobFailureReasons": [BACKOFF], "targetReplicatedJobs": ["test-replicated-job-1"]},
        "test-replicated-job-2", DEADLINE, "", False),
    "a job has failed and the failure policy rule matches the job failure message pattern": (
        {"onJobFailureMessagePatterns": ["^job failed because.*"]}, "test-replicated-job-1", "",
        "job failed because of a bug", True),
    "a job has failed and the failure policy rule does not match the job failure message pattern": (
        {"onJobFailureMessagePatterns": ["^job failed because.*"]}, "test-replicated-job-1", "",
        "another error message", False),
    "a job has failed and the failure policy rule matches both the job failure reason and message pattern": (
        {"onJobFailureReasons": [BACKOFF], "onJobFailureMessagePatterns": [".*bug.*"]}, "test-replicated-job-1",
        BACKOFF, "job failed because of a bug", True),
    "a job has failed and the failure policy rule matches the job failure reason but not the message pattern": (
        {"onJobFailureReasons": [BACKOFF], "onJobFailureMessagePatterns": [".*bug.*"]}, "test-replicated-job-1",
        BACKOFF, "job failed due to something else", False),
}  # fmt: skip


@pytest.mark.parametrize("name", list(RULE_IS_APPLICABLE))
def test_failure_policy_rule_is_applicable(name: str) -> None:
    fields, rjob, reason, message, applies = RULE_IS_APPLICABLE[name]
    assert jsp.rule_applies(rule(**fields), failed_job(rjob=rjob, reason=reason, message=message)) is applies


def test_a_job_without_a_replicated_job_matches_no_rule() -> None:
    assert not jsp.rule_applies(rule(), failed_job(rjob="", reason=BACKOFF))


def test_a_pattern_python_cannot_compile_matches_nothing() -> None:
    assert not jsp.rule_applies(rule(onJobFailureMessagePatterns=["(unclosed"]), failed_job(message="x"))


JOB1 = failed_job("job1", "test-replicatedJob", BACKOFF, ago=6 * HOUR)
JOB1_EARLIER = failed_job("job1DupEarlierFailure", "test-replicatedJob", BACKOFF, ago=12 * HOUR)
JOB2 = failed_job("job2", "test-replicatedJob", DEADLINE, ago=3 * HOUR)
JOB3 = failed_job("job3", "test-replicatedJob", INDEXES, ago=1 * HOUR)
RULE1, RULE2, RULE3 = (rule(onJobFailureReasons=[r]) for r in (BACKOFF, DEADLINE, INDEXES))
UNMATCHED = rule(targetReplicatedJobs=["fakeReplicatedJobName"])

# TestFindFirstFailedPolicyRuleAndJob: (rules, failed jobs) -> (rule, job)
FIRST_FAILED_RULE_AND_JOB = {
    "There are 0 failed jobs and there are 0 failure policy rules": ([], [], None, None),
    "There is 1 failed job and there are 0 failure policy rules": ([], [JOB1], None, None),
    "There is 1 failed job, there is 1 failure policy rule, and the failure policy rule does not match the job": (
        [RULE2], [JOB1], None, None),
    "There is 1 failed job, there are 3 failure policy rules, and the failed job matches the first failure "
    "policy rule": ([RULE1, RULE2, RULE3], [JOB1], RULE1, JOB1),
    "There is 1 failed job, there are 3 failure policy rules, the failed job does not match the first failure "
    "policy rule, and the failed job matches the second failure policy rule": (
        [RULE1, RULE2, RULE3], [JOB2], RULE2, JOB2),
    "There is 1 failed job, there are 3 failure policy rules, the failed job does not match the first nor "
    "second failure policy rules, and the failed job matches the third failure policy rule": (
        [RULE1, RULE2, RULE3], [JOB3], RULE3, JOB3),
    "There are 2 failed jobs and there are 0 failure policy rules": ([], [JOB1, JOB2], None, None),
    "There are 2 failed jobs, the second job failed before the first job, there is 1 failure policy rule, and "
    "the failure policy rule does not match any of the jobs": ([RULE2], [JOB1, JOB1_EARLIER], None, None),
    "There are 2 failed jobs, the second job failed before the first job, there is 1 failure policy rule, and "
    "the failure policy rule matches both jobs": ([RULE1], [JOB1, JOB1_EARLIER], RULE1, JOB1_EARLIER),
    "There are 2 failed jobs, the second job failed before the first job, there are 2 failure policy rules, "
    "the first failure policy does not match any of the jobs, and the second failure policy rule matches both "
    "jobs": ([UNMATCHED, RULE1], [JOB1, JOB1_EARLIER], RULE1, JOB1_EARLIER),
}  # fmt: skip


@pytest.mark.parametrize("name", list(FIRST_FAILED_RULE_AND_JOB))
def test_find_first_failed_policy_rule_and_job(name: str) -> None:
    rules, failed, want_rule, want_job = FIRST_FAILED_RULE_AND_JOB[name]
    assert jsp.first_failed_rule_and_job(rules, failed) == (want_rule, want_job)


def test_find_first_failed_job() -> None:
    """ "Single failed job" and "Multiple failed jobs, earliest first"."""
    early, late = failed_job("job2", ago=5 * HOUR), failed_job("job1", ago=3 * HOUR)
    assert jsp.first_failed_rule_and_job([rule()], [late]) == (rule(), late)
    assert jsp.first_failed_rule_and_job([rule()], [late, early]) == (rule(), early)


# TestApplyFailurePolicyRuleAction: (action, maxRestarts, status before) -> (restarts, counted, failed reason)
APPLY_ACTION = {
    "FailJobSet action": ("FailJobSet", 0, {}, (0, 0, "FailJobSetFailurePolicyAction")),
    "RestartJobSet when restarts < maxRestarts increments restarts count and counts towards max": (
        "RestartJobSet", 5, {"restarts": 1, "restartsCountTowardsMax": 1}, (2, 2, None)),
    "RestartJobSet action when restarts >= maxRestarts fails the jobset": (
        "RestartJobSet", 2, {"restarts": 2, "restartsCountTowardsMax": 2}, (2, 2, "ReachedMaxRestarts")),
    "RestartJobSetAndIgnoreMaxRestarts action does not count toward max restarts": (
        "RestartJobSetAndIgnoreMaxRestarts", 1, {"restarts": 1, "restartsCountTowardsMax": 1}, (2, 1, None)),
}  # fmt: skip


@pytest.mark.parametrize("name", list(APPLY_ACTION))
def test_apply_failure_policy_rule_action(name: str) -> None:
    action, max_restarts, before, (restarts, counted, reason) = APPLY_ACTION[name]
    jobset = {"metadata": {"name": "test-js", "namespace": "default"},
              "spec": {"failurePolicy": {"maxRestarts": max_restarts, "rules": [rule(action)]}}}  # fmt: skip
    status = dict(before)
    assert jsp.apply_failure_policy(jobset, [failed_job("failed-job")], status, rfc3339(NOW))
    assert (status.get("restarts", 0), status.get("restartsCountTowardsMax", 0)) == (restarts, counted)
    failed = [c for c in status.get("conditions") or [] if c["type"] == "Failed" and c["status"] == "True"]
    assert [c["reason"] for c in failed] == ([reason] if reason else [])
    assert status.get("terminalState") == ("Failed" if reason else None)
