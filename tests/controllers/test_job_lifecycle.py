"""Table tests for the Job controller's failure handling, ported from upstream's tables (cited per test):
``pkg/controller/job/job_controller_test.go``, ``backoff_utils_test.go``, ``success_policy_test.go`` and
``pkg/controller/ttlafterfinished/ttlafterfinished_controller_test.go``."""

from __future__ import annotations

from typing import Any

import pytest
from job_passes import settle_plan

from gangplane.clock import rfc3339
from gangplane.controllers import job_backoff as jb
from gangplane.controllers import job_pods as jp
from gangplane.controllers import job_policy as p

NOW = 1_767_225_600.0


def job(completions: int = 1, parallelism: int = 1, policy: str = "Never", **spec: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "c"}], "restartPolicy": policy}}
    body = {"parallelism": parallelism, "completions": completions, "template": template, **spec}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": "u"}, "spec": body}  # fmt: skip


def pod(owner: dict[str, Any], index: int | None, phase: str, n: int = 0, **status: Any) -> dict[str, Any]:
    built = jp.build_pod(jp.defaulted_job(owner), index)
    built["metadata"]["name"] = f"{built['metadata'].pop('generateName')}{n:05d}"
    built["metadata"]["creationTimestamp"] = rfc3339(NOW - 100 + n)
    built["status"] = {"phase": phase, **status}
    return built


def exited(code: int, at: float = NOW - 100) -> dict[str, Any]:
    return {"name": "c", "state": {"terminated": {"exitCode": code, "finishedAt": rfc3339(at)}}}


def reasons(decided: p.JobPlan) -> dict[str, str]:
    return {c["type"]: c["reason"] for c in decided.status.get("conditions", []) if c["status"] == "True"}


# job_controller_test.go TestJobBackoffForOnFailure:
# (parallelism, completions, backoffLimit, restartCounts, phase) -> (active, failed, reason)
ON_FAILURE = {
    "backoffLimit 0 should have 1 pod active": ((1, 1, 0, [0], "Running"), (1, 0, None)),
    "backoffLimit 1 with restartCount 0 should have 1 pod active": ((1, 1, 1, [0], "Running"), (1, 0, None)),
    "backoffLimit 1 with restartCount 1 and podRunning should have 0 pod active": (
        (1, 1, 1, [1], "Running"), (0, 1, "BackoffLimitExceeded")),
    "backoffLimit 1 with restartCount 1 and podPending should have 0 pod active": (
        (1, 1, 1, [1], "Pending"), (0, 1, "BackoffLimitExceeded")),
    "too many job failures with podRunning - single pod": (
        (1, 5, 2, [2], "Running"), (0, 1, "BackoffLimitExceeded")),
    "too many job failures with podPending - single pod": (
        (1, 5, 2, [2], "Pending"), (0, 1, "BackoffLimitExceeded")),
    "too many job failures with podRunning - multiple pods": (
        (2, 5, 2, [1, 1], "Running"), (0, 2, "BackoffLimitExceeded")),
    "too many job failures with podPending - multiple pods": (
        (2, 5, 2, [1, 1], "Pending"), (0, 2, "BackoffLimitExceeded")),
    "not enough failures": ((2, 5, 3, [1, 1], "Running"), (2, 0, None)),
}  # fmt: skip


@pytest.mark.parametrize(("given", "want"), ON_FAILURE.values(), ids=ON_FAILURE.keys())
def test_on_failure_restarts_count_towards_the_backoff_limit(
    given: tuple[int, int, int, list[int], str], want: tuple[int, int, str | None]
) -> None:
    parallelism, completions, limit, restarts, phase = given
    owner = job(completions, parallelism, "OnFailure", backoffLimit=limit, completionMode="NonIndexed")
    pods = [pod(owner, None, phase, i, containerStatuses=[{"name": "c", "restartCount": r}])
            for i, r in enumerate(restarts)]  # fmt: skip
    decided = settle_plan(owner, pods, NOW)
    active, failed, reason = want
    assert (decided.status.get("active", 0), decided.status.get("failed", 0)) == (active, failed)
    assert reasons(decided).get("Failed") == reason
    if reason:
        assert reasons(decided)["FailureTarget"] == reason and decided.delete_pods == pods


def test_restarts_do_not_count_under_restart_policy_never() -> None:
    owner = job(policy="Never", backoffLimit=1)
    running = pod(owner, None, "Running", containerStatuses=[{"name": "c", "restartCount": 5}])
    assert "Failed" not in reasons(settle_plan(owner, [running], NOW))


# backoff_utils_test.go TestGetRemainingBackoffTime (base 5 s, cap 700 s):
# (failures after last success, seconds since the failure) -> seconds left
REMAINING = {
    "no failures": (0, 0, 0),
    "one failure; current time and failure time are same": (1, 0, 5),
    "one failure; current time == 1 second + failure time": (1, 1, 4),
    "one failure; current time == expected backoff time": (1, 5, 0),
    "one failure; current time == expected backoff time + 1 Second": (1, 6, 0),
    "three failures; current time and failure time are same": (3, 0, 20),
    "eight failures; current time and failure time are same; backoff not exceeding maxBackoff": (8, 0, 640),
    "nine failures; current time and failure time are same; backoff exceeding maxBackoff": (9, 0, 700),
}


@pytest.mark.parametrize(("failures", "elapsed", "left"), REMAINING.values(), ids=REMAINING.keys())
def test_remaining_backoff(failures: int, elapsed: float, left: float) -> None:
    record = jb.BackoffRecord(failures, NOW if failures else None)
    assert jb.remaining(record, NOW + elapsed, base=5, cap=700) == left


def test_backoff_counts_failures_after_the_last_success_with_upstream_defaults() -> None:
    owner = job(completions=3, completionMode="NonIndexed")
    ok = pod(owner, None, "Succeeded", 0, containerStatuses=[exited(0, NOW - 50)])
    old = pod(owner, None, "Failed", 1, containerStatuses=[exited(1, NOW - 60)])
    new = [pod(owner, None, "Failed", 2 + i, containerStatuses=[exited(1, NOW - 5)]) for i in range(3)]
    record = jb.backoff_record([ok], [old, *new])
    assert record == jb.BackoffRecord(3, NOW - 5)
    assert jb.remaining(record, NOW) == 35  # 10 s * 2**2 - 5 s
    assert jb.remaining(jb.BackoffRecord(12, NOW), NOW) == jb.MAX_POD_FAILURE_BACKOFF
    decided = settle_plan(owner, [ok, old, *new], NOW)
    assert decided.create_pods == [] and decided.requeue_after == 35


# backoff_utils_test.go TestGetFinishedTime (the order of the sources of a pod's finish time)
def test_finished_time_prefers_containers_then_ready_false_then_deletion() -> None:
    owner = job()
    assert jb.finished_at(pod(owner, None, "Failed", containerStatuses=[exited(1, NOW - 3)])) == NOW - 3
    ready_false = {"type": "Ready", "status": "False", "lastTransitionTime": rfc3339(NOW - 7)}
    assert jb.finished_at(pod(owner, None, "Failed", conditions=[ready_false])) == NOW - 7
    deleted = pod(owner, None, "Failed")
    deleted["metadata"]["deletionTimestamp"] = rfc3339(NOW - 9)
    assert jb.finished_at(deleted) == NOW - 9


DISRUPTED = {"type": "DisruptionTarget", "status": "True"}

# job_controller_test.go TestSyncJobWithJobPodFailurePolicy: (rules, container exit, pod conditions, phase)
# -> (Failed reason or None, failed count)
POD_FAILURE_POLICY = {
    "fail job based on OnExitCodes": (
        [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [5, 6, 7]}}], 5, [], "Failed",
        ("PodFailurePolicy", 1)),
    "running pod should not result in job fail based on OnExitCodes": (
        [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [5, 6, 7]}}], None, [], "Running",
        (None, 0)),
    "default handling for pod failure if the container matching the exit codes does not match the "
    "containerName restriction": (
        [{"action": "FailJob", "onExitCodes": {"containerName": "other", "operator": "In", "values": [5]}}],
        5, [], "Failed", ("BackoffLimitExceeded", 1)),
    "ignore pod failure based on OnPodConditions": (
        [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}], 137, [DISRUPTED], "Failed",
        (None, 0)),
    "fail job based on OnPodConditions": (
        [{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]}], 137, [DISRUPTED], "Failed",
        ("PodFailurePolicy", 1)),
    "count pod failure based on OnExitCodes; both rules are matching, the first is executed only": (
        [{"action": "Count", "onExitCodes": {"operator": "In", "values": [1, 2]}},
         {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [2, 3]}}], 2, [], "Failed",
        ("BackoffLimitExceeded", 1)),
    "gangplane: exit code 0 never matches NotIn": (
        [{"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [3]}}], 0, [], "Failed",
        ("BackoffLimitExceeded", 1)),
}  # fmt: skip


@pytest.mark.parametrize(
    ("rules", "code", "conditions", "phase", "want"),
    POD_FAILURE_POLICY.values(),
    ids=POD_FAILURE_POLICY.keys(),
)
def test_pod_failure_policy(
    rules: list[Any], code: int | None, conditions: list[Any], phase: str, want: tuple[str | None, int]
) -> None:
    owner = job(backoffLimit=0, podFailurePolicy={"rules": rules}, completionMode="NonIndexed")
    statuses = [exited(code)] if code is not None else [{"name": "c", "state": {"running": {}}}]
    decided = settle_plan(
        owner, [pod(owner, None, phase, containerStatuses=statuses, conditions=conditions)], NOW
    )
    reason, failed = want
    assert reasons(decided).get("Failed") == reason
    assert decided.status.get("failed", 0) == failed


def test_ignored_disruption_is_replaced_without_counting() -> None:
    owner = job(backoffLimit=0, podFailurePolicy={"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]})  # fmt: skip
    evicted = pod(owner, None, "Failed", containerStatuses=[exited(137, NOW - 30)], conditions=[DISRUPTED])
    decided = settle_plan(owner, [evicted], NOW)
    assert (
        len(decided.create_pods) == 1 and "failed" not in decided.status and "Failed" not in reasons(decided)
    )


# job_controller_test.go TestSyncJobWithJobBackoffLimitPerIndex
def per_index(**spec: Any) -> dict[str, Any]:
    return job(completions=2, parallelism=2, completionMode="Indexed", backoffLimitPerIndex=1, **spec)


def test_per_index_single_failed_pod_is_replaced_after_its_backoff_with_its_failure_count() -> None:
    owner = per_index()
    failed = pod(owner, 0, "Failed", containerStatuses=[exited(1, NOW - 4)])
    running = pod(owner, 1, "Running", 1)
    early = settle_plan(owner, [failed, running], NOW)
    assert early.create_pods == [] and early.requeue_after == 6 and early.status["failedIndexes"] == ""
    later = settle_plan(owner, [failed, running], NOW + 6)
    [replacement] = later.create_pods
    assert replacement["metadata"]["annotations"][jb.INDEX_FAILURE_COUNT] == "1"
    assert "Failed" not in reasons(later)


def test_per_index_exceeding_the_limit_fails_the_index_and_the_job_continues() -> None:
    owner = per_index()
    fails = [pod(owner, 0, "Failed", i, containerStatuses=[exited(1)]) for i in range(2)]
    decided = settle_plan(owner, [*fails, pod(owner, 1, "Running", 5)], NOW)
    assert decided.status["failedIndexes"] == "0" and decided.create_pods == [] and not reasons(decided)
    done = pod(owner, 1, "Succeeded", 5)
    finished = settle_plan({**owner, "status": decided.status}, [*fails, done], NOW)
    assert reasons(finished) == {"FailureTarget": "FailedIndexes", "Failed": "FailedIndexes"}


def test_per_index_fail_index_action_and_max_failed_indexes() -> None:
    rules = [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}}]
    owner = per_index(maxFailedIndexes=0, podFailurePolicy={"rules": rules})
    decided = settle_plan(owner, [pod(owner, 0, "Failed", containerStatuses=[exited(3)])], NOW)
    assert decided.status["failedIndexes"] == "0"
    assert reasons(decided)["Failed"] == "MaxFailedIndexesExceeded"


def test_per_index_defaults_backoff_limit_to_max_int32() -> None:
    assert jp.defaulted_job(per_index())["spec"]["backoffLimit"] == 2**31 - 1


# success_policy_test.go TestMatchSuccessPolicy: (rules, succeeded indexes) -> message
SUCCESS_POLICY = {
    "rules.succeededIndexes is specified; succeededIndexes matched rules": (
        [{"succeededIndexes": "0-2"}], {0, 1, 2}, "Matched rules at index 0"),
    "rules.succeededIndexes is specified; succeededIndexes didn't match rules": (
        [{"succeededIndexes": "3"}], {0, 1, 2}, None),
    "rules.succeededCount is specified; succeededIndexes matched rules": (
        [{"succeededCount": 2}], {0, 1}, "Matched rules at index 0"),
    "rules.succeededCount is specified; succeededIndexes didn't match rules": (
        [{"succeededCount": 3}], {0, 1}, None),
    "gangplane: multiple rules; the second matched": (
        [{"succeededIndexes": "5"}, {"succeededIndexes": "1-3", "succeededCount": 2}], {0, 2, 3},
        "Matched rules at index 1"),
}  # fmt: skip


@pytest.mark.parametrize(("rules", "done", "message"), SUCCESS_POLICY.values(), ids=SUCCESS_POLICY.keys())
def test_success_policy(rules: list[Any], done: set[int], message: str | None) -> None:
    owner = job(completions=10, parallelism=10, completionMode="Indexed", successPolicy={"rules": rules})
    assert p.success_policy_met(owner, done) == message


def test_success_policy_completes_the_job_and_deletes_the_rest() -> None:
    owner = job(completions=3, parallelism=3, completionMode="Indexed",
                successPolicy={"rules": [{"succeededIndexes": "0"}]})  # fmt: skip
    running = pod(owner, 1, "Running", 1)
    decided = settle_plan(owner, [pod(owner, 0, "Succeeded"), running], NOW)
    assert reasons(decided) == {"SuccessCriteriaMet": "SuccessPolicy", "Complete": "SuccessPolicy"}
    assert decided.delete_pods == [running]


# ttlafterfinished_controller_test.go TestTimeLeft: (condition, finished ago, ttl) -> (delete, requeue)
TTL = {
    "Error case: Job unfinished": (None, 0, 10, (False, None)),
    "Error case: Job completed now, no TTL": ("Complete", 0, None, (False, None)),
    "Job completed now, 0s TTL": ("Complete", 0, 0, (True, None)),
    "Job completed now, 10s TTL": ("Complete", 0, 10, (False, 10)),
    "Job completed 10s ago, 15s TTL": ("Complete", 10, 15, (False, 5)),
    "Job failed 10s ago, 15s TTL": ("Failed", 10, 15, (False, 5)),
}


@pytest.mark.parametrize(("cond", "ago", "ttl", "want"), TTL.values(), ids=TTL.keys())
def test_ttl_after_finished(
    cond: str | None, ago: float, ttl: int | None, want: tuple[bool, float | None]
) -> None:
    owner = job(**({} if ttl is None else {"ttlSecondsAfterFinished": ttl}))
    if cond:
        owner["status"] = {"conditions": [
            {"type": cond, "status": "True", "lastTransitionTime": rfc3339(NOW - ago)}]}  # fmt: skip
    decided = settle_plan(owner, [], NOW)
    assert (decided.delete_job, decided.requeue_after if cond else None) == want


# job_controller_test.go TestSyncJobWithJobPodReplacementPolicy-style cases: (policy, pod failure policy,
# indexed) -> replacements created while the only pod is still terminating
REPLACEMENT = {
    "TerminatingOrFailed replaces a terminating pod at once": ("TerminatingOrFailed", None, False, 1),
    "Failed waits for the terminating pod to fail": ("Failed", None, False, 0),
    "Failed is the default with a pod failure policy": (None, {"rules": []}, False, 0),
    "Failed waits per index for an Indexed Job": ("Failed", None, True, 0),
    "TerminatingOrFailed replaces the index at once": ("TerminatingOrFailed", None, True, 1),
}


@pytest.mark.parametrize(
    ("policy", "pfp", "is_indexed", "created"), REPLACEMENT.values(), ids=REPLACEMENT.keys()
)
def test_pod_replacement_policy(policy: str | None, pfp: Any, is_indexed: bool, created: int) -> None:
    spec: dict[str, Any] = {"completionMode": "Indexed" if is_indexed else "NonIndexed"}
    if policy:
        spec["podReplacementPolicy"] = policy
    if pfp is not None:
        spec["podFailurePolicy"] = pfp
    owner = job(**spec)
    terminating = pod(owner, 0 if is_indexed else None, "Running")
    terminating["metadata"]["deletionTimestamp"] = rfc3339(NOW)
    decided = settle_plan(owner, [terminating], NOW)
    assert len(decided.create_pods) == created and decided.status["terminating"] == 1
