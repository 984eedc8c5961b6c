"""Table tests for the Job controller's pure decisions and pod construction."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from job_passes import settle_plan

from gangplane.clock import rfc3339
from gangplane.controllers import job_pods as jp
from gangplane.controllers import job_policy as p

NOW = 1_767_225_600.0


def job(
    completions: int | None = 3, parallelism: int = 3, *, indexed: bool = True, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"parallelism": parallelism, "template": {
        "metadata": {"labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}}  # fmt: skip
    if completions is not None:
        body["completions"] = completions
    if indexed:
        body["completionMode"] = "Indexed"
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "ns", "uid": "j-uid"}, "spec": {**body, **spec}}  # fmt: skip


def pod(
    owner: dict[str, Any], index: int | None, phase: str = "Running", n: int = 0, **status: Any
) -> dict[str, Any]:
    built = jp.build_pod(jp.defaulted_job(owner), index)
    built["metadata"]["name"] = f"{built['metadata'].pop('generateName')}{n:05d}"
    built["metadata"]["creationTimestamp"] = rfc3339(NOW + n)
    built["status"] = {"phase": phase, **status}
    return built


def indexes(pods: list[dict[str, Any]]) -> list[int | None]:
    return [jp.pod_index(x) for x in pods]


def test_pod_carries_index_hostname_env_labels_and_owner() -> None:
    built = jp.build_pod(jp.defaulted_job(job()), 2)
    meta = built["metadata"]
    assert meta["generateName"] == "j-2-"
    assert meta["labels"] == {"app": "x", jp.CONTROLLER_UID_LABEL: "j-uid", jp.JOB_NAME_LABEL: "j",
                              "controller-uid": "j-uid", "job-name": "j",
                              "batch.kubernetes.io/job-completion-index": "2"}  # fmt: skip
    assert meta["annotations"] == {"batch.kubernetes.io/job-completion-index": "2"}
    assert meta["ownerReferences"] == [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "j-uid",
                                        "controller": True, "blockOwnerDeletion": True}]  # fmt: skip
    assert built["spec"]["hostname"] == "j-2"
    assert built["spec"]["containers"][0]["env"][0]["name"] == "JOB_COMPLETION_INDEX"


def test_non_indexed_pod_has_plain_generate_name() -> None:
    built = jp.build_pod(jp.defaulted_job(job(indexed=False)), None)
    assert built["metadata"]["generateName"] == "j-"
    assert "hostname" not in built["spec"]


def test_indexed_job_creates_missing_indexes_up_to_parallelism() -> None:
    owner = job(completions=4, parallelism=2)
    decided = settle_plan(owner, [pod(owner, 0, "Succeeded")], NOW)
    assert indexes(decided.create_pods) == [1, 2]
    assert decided.status["active"] == 2 and decided.status["succeeded"] == 1
    assert decided.status["completedIndexes"] == "0"
    assert decided.status["startTime"] == rfc3339(NOW)


def test_one_pass_creates_or_deletes_at_most_500_pods() -> None:
    """``MaxPodCreateDeletePerSync``: the rest are left to the passes the pod events requeue."""
    wide = job(completions=None, parallelism=800, indexed=False)
    assert len(settle_plan(wide, [], NOW).create_pods) == 500
    indexed = job(completions=800, parallelism=800)
    assert indexes(settle_plan(indexed, [], NOW).create_pods) == list(range(500))
    narrow = job(completions=None, parallelism=100, indexed=False)
    running = [pod(narrow, None, n=i) for i in range(700)]
    assert len(settle_plan(narrow, running, NOW).delete_pods) == 500
    unindexed = [pod(indexed, None, n=i) for i in range(700)]  # no valid index: all to go, 500 a pass
    assert len(settle_plan(indexed, unindexed, NOW).delete_pods) == 500


# job_controller_test.go TestSyncJob, the Indexed cases with pods to remove: (name, parallelism,
# completions, pods as (index or None, phase), deletions, active, succeeded, completedIndexes). Only one of
# creations and deletions happens in a pass, so none of them creates a pod.
INDEXED_REMOVALS = [
    ("indexed job some pods without index", 2, 5,
     [(None, "Running"), (None, "Succeeded"), (None, "Failed"), (None, "Running"), (None, "Succeeded"),
      (None, "Failed"), (None, "Pending"), (0, "Succeeded"), (1, "Running"), (2, "Running")], 3, 2, 1, "0"),
    ("indexed job repeated indexes", 5, 5,
     [(None, "Succeeded"), (None, "Failed"), (None, "Running"), (0, "Succeeded"), (1, "Running"),
      (2, "Running"), (2, "Pending")], 2, 2, 1, "0"),
    ("indexed job with indexes outside of range", 2, 5,
     [(0, "Succeeded"), (5, "Running"), (6, "Succeeded"), (7, "Pending"), (8, "Failed")], 2, 0, 1, "0"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "parallelism", "completions", "pods", "deletions", "active", "succeeded", "completed"),
    INDEXED_REMOVALS,
)
def test_indexed_removals_come_before_creations(
    name: str, parallelism: int, completions: int, pods: list[tuple[int | None, str]],
    deletions: int, active: int, succeeded: int, completed: str,
) -> None:  # fmt: skip
    owner = job(completions=completions, parallelism=parallelism)
    made = [pod(owner, index, phase, n=i) for i, (index, phase) in enumerate(pods)]
    decided = settle_plan(owner, made, NOW)
    assert (len(decided.delete_pods), decided.create_pods) == (deletions, [])
    assert decided.status.get("active", 0) == active and decided.status.get("succeeded", 0) == succeeded
    assert decided.status.get("failed", 0) == 0 and decided.status["completedIndexes"] == completed


def test_duplicate_pods_for_one_index_are_deleted() -> None:
    owner = job(completions=1, parallelism=1)
    first, second = pod(owner, 0, n=1), pod(owner, 0, n=2)
    decided = settle_plan(owner, [second, first], NOW)
    assert decided.delete_pods == [second] and decided.create_pods == []


def test_failed_pod_is_replaced_after_the_backoff_until_the_backoff_limit() -> None:
    owner = job(completions=2, parallelism=2, backoffLimit=1)
    failed = pod(owner, 0, "Failed")
    waiting = settle_plan(owner, [failed, pod(owner, 1, n=1)], NOW + 4)
    assert waiting.create_pods == [] and waiting.requeue_after == 6 and waiting.status["failed"] == 1
    decided = settle_plan(owner, [failed, pod(owner, 1, n=1)], NOW + 10)
    assert indexes(decided.create_pods) == [0] and decided.status["failed"] == 1
    second = pod(owner, 0, "Failed", n=2)
    decided = settle_plan(owner, [failed, second, pod(owner, 1, n=1)], NOW)
    conds = {c["type"]: c["reason"] for c in decided.status["conditions"]}
    assert conds == {"FailureTarget": "BackoffLimitExceeded", "Failed": "BackoffLimitExceeded"}
    assert indexes(decided.delete_pods) == [1] and decided.create_pods == []
    assert "active" not in decided.status


@pytest.mark.parametrize(
    ("rule", "exit_code", "outcome"),
    [
        ({"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}, 42, "PodFailurePolicy"),
        (
            {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [42]}},
            42,
            "BackoffLimitExceeded",
        ),
        ({"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1]}}, 1, None),
        ({"action": "Count", "onExitCodes": {"operator": "In", "values": [1]}}, 1, "BackoffLimitExceeded"),
    ],
    ids=["fail-job", "not-in-miss", "ignore", "count"],
)
def test_pod_failure_policy(rule: dict[str, Any], exit_code: int, outcome: str | None) -> None:
    owner = job(completions=1, parallelism=1, backoffLimit=0, podFailurePolicy={"rules": [rule]})
    failed = pod(owner, 0, "Failed",
                 containerStatuses=[{"name": "c", "state": {"terminated": {"exitCode": exit_code}}}])  # fmt: skip
    decided = settle_plan(owner, [failed], NOW)
    failed_cond = next((c for c in decided.status.get("conditions", []) if c["type"] == "Failed"), None)
    assert (failed_cond["reason"] if failed_cond else None) == outcome
    if outcome == "PodFailurePolicy":
        assert failed_cond is not None
        assert failed_cond["message"] == (
            "Container c for pod ns/j-0-00000 failed with exit code 42 matching FailJob rule at index 0"
        )


def test_completion_deletes_leftover_pods_and_stamps_completion_time() -> None:
    owner = job(completions=2, parallelism=2)
    decided = settle_plan(owner, [pod(owner, 0, "Succeeded"), pod(owner, 1, "Succeeded", n=1)], NOW)
    assert {c["type"] for c in decided.status["conditions"]} == {"SuccessCriteriaMet", "Complete"}
    assert decided.status["completionTime"] == rfc3339(NOW) and decided.status["completedIndexes"] == "0,1"


def test_zero_completions_complete_at_once() -> None:
    decided = settle_plan(job(completions=0, parallelism=0), [], NOW)
    assert any(c["type"] == "Complete" for c in decided.status["conditions"])


def test_suspend_deletes_active_pods_without_counting_failures_and_resume_restarts_the_clock() -> None:
    owner = job(completions=2, parallelism=2, suspend=True)
    owner["status"] = {"startTime": rfc3339(NOW - 100), "active": 2}
    running = [pod(owner, 0), pod(owner, 1, n=1)]
    decided = settle_plan(owner, running, NOW)
    assert decided.delete_pods == running and decided.create_pods == []
    assert "startTime" not in decided.status and "failed" not in decided.status
    assert decided.status["conditions"][0]["reason"] == "JobSuspended"
    resumed = {**owner, "spec": {**owner["spec"], "suspend": False}, "status": decided.status}
    decided = settle_plan(resumed, [], NOW + 5)
    assert len(decided.create_pods) == 2
    assert decided.status["conditions"][0]["reason"] == "JobResumed"
    assert decided.status["startTime"] == rfc3339(NOW + 5)


def test_active_deadline_fails_the_job_and_requeues_before() -> None:
    owner = job(completions=1, parallelism=1, activeDeadlineSeconds=30)
    owner["status"] = {"startTime": rfc3339(NOW)}
    assert settle_plan(owner, [pod(owner, 0)], NOW + 10).requeue_after == 20
    decided = settle_plan(owner, [pod(owner, 0)], NOW + 30)
    assert decided.status["conditions"][-1]["reason"] == "DeadlineExceeded"
    assert len(decided.delete_pods) == 1


def test_ready_counts_ready_active_pods() -> None:
    owner = job(completions=2, parallelism=2)
    ready = pod(owner, 0, conditions=[{"type": "Ready", "status": "True"}])
    assert settle_plan(owner, [ready, pod(owner, 1, n=1)], NOW).status["ready"] == 1


def test_non_indexed_job_runs_parallelism_pods_until_completions() -> None:
    owner = job(completions=3, parallelism=2, indexed=False)
    assert len(settle_plan(owner, [], NOW).create_pods) == 2
    done = [pod(owner, None, "Succeeded", n=i) for i in range(2)]
    decided = settle_plan(owner, done, NOW)
    assert len(decided.create_pods) == 1 and decided.status["succeeded"] == 2


def test_finished_job_only_deletes_leftover_pods() -> None:
    owner = job(completions=1, parallelism=1)
    owner["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    leftover = pod(owner, 0)
    decided = settle_plan(owner, [leftover], NOW)
    assert decided.delete_pods == [leftover] and not decided.status_changed


@given(st.sets(st.integers(min_value=0, max_value=200)))
def test_completed_indexes_round_trip(values: set[int]) -> None:
    text = p.format_indexes(values)
    assert p.parse_indexes(text) == values
    assert "--" not in text and (not values or text[0].isdigit())
