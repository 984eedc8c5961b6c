"""Table tests for the JobSet controller's pure decisions."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from gangplane.controllers import jobset_build as b
from gangplane.controllers import jobset_policy as p

NOW = 1_767_225_600.0


def rjob(name: str, replicas: int = 1, **extra: Any) -> dict[str, Any]:
    pod = {"containers": [{"name": "c", "image": "busybox"}]}
    return {"name": name, "replicas": replicas, "template": {"spec": {"parallelism": 2, "completions": 2,
            "template": {"spec": pod}}}, **extra}  # fmt: skip


def jobset(*rjobs: dict[str, Any], status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    obj = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "ns", "uid": "js-uid"},
        "spec": {"replicatedJobs": list(rjobs), **spec},
    }
    if status is not None:
        obj["status"] = status
    return obj


def child(js: dict[str, Any], rjob_name: str, index: int, *, outcome: str | None = None,
          attempt: int = 0, **status: Any) -> dict[str, Any]:  # fmt: skip
    js_def = b.defaulted(js)
    rj = next(r for r in js_def["spec"]["replicatedJobs"] if r["name"] == rjob_name)
    job = b.build_job(js_def, rj, index)
    job["metadata"]["labels"][b.RESTART_ATTEMPT_LABEL] = str(attempt)
    job["status"] = dict(status)
    if outcome is not None:
        job["status"]["conditions"] = [
            {"type": outcome, "status": "True", "reason": "BackoffLimitExceeded", "lastTransitionTime": "t"}
        ]
    return job


def test_job_names_labels_and_owner_follow_jobset() -> None:
    js = b.defaulted(jobset(rjob("a", 2), rjob("b", 3), coordinator={"replicatedJob": "a"}))
    job = b.build_job(js, js["spec"]["replicatedJobs"][1], 2)
    labels = job["metadata"]["labels"]
    assert job["metadata"]["name"] == "js-b-2"
    assert labels == job["metadata"]["annotations"]
    assert labels[b.JOB_KEY_LABEL] == hashlib.sha1(b"ns/js-b-2").hexdigest()
    assert labels[b.GLOBAL_REPLICAS_LABEL] == "5"
    assert labels[b.JOB_GLOBAL_INDEX_LABEL] == "4"
    assert labels[b.REPLICATED_JOB_REPLICAS_LABEL] == "3"
    assert labels[b.COORDINATOR_KEY] == "js-a-0-0.js"
    assert job["spec"]["template"]["metadata"]["labels"] == labels
    assert job["spec"]["template"]["spec"]["subdomain"] == "js"
    assert job["spec"]["completionMode"] == "Indexed"
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert job["spec"]["suspend"] is False
    assert job["metadata"]["ownerReferences"][0]["uid"] == "js-uid"


def test_dns_hostnames_off_means_no_subdomain_and_no_service() -> None:
    js = jobset(rjob("a"), network={"enableDNSHostnames": False})
    decided = p.plan(js, [], service_exists=False, now=NOW)
    assert decided.create_service is None
    assert "subdomain" not in decided.create_jobs[0]["spec"]["template"]["spec"]


def test_headless_service_uses_the_subdomain() -> None:
    svc = b.headless_service(b.defaulted(jobset(rjob("a"), network={"subdomain": "net"})))
    assert svc["metadata"]["name"] == "net"
    assert svc["spec"] == {"clusterIP": "None", "selector": {"jobset.sigs.k8s.io/jobset-name": "js"},
                           "publishNotReadyAddresses": True}  # fmt: skip


def test_classify_by_attempt_and_outcome() -> None:
    js = jobset(rjob("a", 4))
    jobs = [child(js, "a", 0), child(js, "a", 1, outcome="Complete"), child(js, "a", 2, outcome="Failed"),
            child(js, "a", 3, attempt=0)]  # fmt: skip
    children = p.classify([*jobs[:3], child(js, "a", 3, attempt=1)], attempt=1)
    assert len(children.previous) == 3 and len(children.active) == 1
    children = p.classify(jobs, attempt=0)
    assert [len(x) for x in (children.active, children.successful, children.failed)] == [2, 1, 1]


def test_replicated_job_statuses_count_jobs() -> None:
    js = jobset(rjob("a", 3), rjob("b"))
    jobs = [child(js, "a", 0, ready=2, active=2), child(js, "a", 1, ready=1, active=2),
            child(js, "a", 2, outcome="Complete")]  # fmt: skip
    jobs[1]["spec"]["suspend"] = True
    statuses = p.replicated_job_statuses(b.defaulted(js), p.classify(jobs, 0))
    assert statuses == [
        {"name": "a", "ready": 1, "succeeded": 1, "failed": 0, "active": 2, "suspended": 1},
        {"name": "b", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0},
    ]


def _status(name: str, **counts: int) -> dict[str, Any]:
    return {
        "name": name,
        **dict.fromkeys(("ready", "succeeded", "failed", "active", "suspended"), 0),
        **counts,
    }


@pytest.mark.parametrize(
    ("wanted", "counts", "reached"),
    [
        ("Complete", {"succeeded": 2}, True),
        ("Complete", {"succeeded": 1, "ready": 1}, False),
        ("Ready", {"ready": 1, "failed": 1}, True),
        ("Ready", {"ready": 1}, False),
    ],
    ids=["complete", "complete-partial", "ready-counts-failed", "ready-partial"],
)
def test_dependency_reached(wanted: str, counts: dict[str, int], reached: bool) -> None:
    dependent = {"name": "b", "dependsOn": [{"name": "a", "status": wanted}]}
    assert p.dependency_reached(dependent, {"a": 2}, [_status("a", **counts)]) is reached


def test_depends_on_holds_back_the_dependent_jobs() -> None:
    js = jobset(rjob("init"), rjob("node", dependsOn=[{"name": "init", "status": "Complete"}]))
    created = p.plan(js, [], service_exists=True, now=NOW).create_jobs
    assert [j["metadata"]["name"] for j in created] == ["js-init-0"]
    done = [child(js, "init", 0, outcome="Complete")]
    created = p.plan(js, done, service_exists=True, now=NOW).create_jobs
    assert [j["metadata"]["name"] for j in created] == ["js-node-0"]


@pytest.mark.parametrize(
    ("policy", "succeeded", "complete"),
    [
        (None, ["a"], False),
        (None, ["a", "b"], True),
        ({"operator": "Any"}, ["b"], True),
        ({"operator": "All", "targetReplicatedJobs": ["b"]}, ["b"], True),
        ({"operator": "Any", "targetReplicatedJobs": ["b"]}, ["a"], False),
    ],
    ids=["all-partial", "all", "any", "all-targeted", "any-other-target"],
)
def test_success_policy(policy: dict[str, Any] | None, succeeded: list[str], complete: bool) -> None:
    js = jobset(rjob("a"), rjob("b"), **({"successPolicy": policy} if policy else {}))
    jobs = [child(js, name, 0, outcome="Complete") for name in succeeded]
    decided = p.plan(js, jobs, service_exists=True, now=NOW)
    assert (p.COMPLETED in [c["type"] for c in decided.status.get("conditions", [])]) is complete
    assert (decided.status.get("terminalState") == "Completed") is complete


@pytest.mark.parametrize(
    ("policy", "status", "reason", "restarts"),
    [
        (None, {}, "FailedJobs", 0),
        ({"maxRestarts": 2}, {"restarts": 1, "restartsCountTowardsMax": 1}, None, 2),
        ({"maxRestarts": 1}, {"restarts": 1, "restartsCountTowardsMax": 1}, "ReachedMaxRestarts", 1),
        (
            {
                "maxRestarts": 5,
                "rules": [{"action": "FailJobSet", "onJobFailureReasons": ["BackoffLimitExceeded"]}],
            },
            {},
            "FailJobSetFailurePolicyAction",
            0,
        ),
        ({"maxRestarts": 0, "rules": [{"action": "RestartJobSetAndIgnoreMaxRestarts"}]}, {}, None, 1),
        (
            {"maxRestarts": 0, "rules": [{"action": "FailJobSet", "targetReplicatedJobs": ["other"]}]},
            {},
            "ReachedMaxRestarts",
            0,
        ),
    ],
    ids=["no-policy", "restart", "max-reached", "fail-rule", "ignore-max", "rule-for-other-rjob"],
)
def test_failure_policy(policy: dict[str, Any] | None, status: dict[str, Any], reason: str | None,
                        restarts: int) -> None:  # fmt: skip
    js = jobset(rjob("a"), rjob("other"), status=status, **({"failurePolicy": policy} if policy else {}))
    failed = child(js, "a", 0, outcome="Failed", attempt=status.get("restarts", 0))
    decided = p.plan(js, [failed], service_exists=True, now=NOW)
    assert decided.status_changed
    failed_cond = next((c for c in decided.status.get("conditions", []) if c["type"] == "Failed"), None)
    assert (failed_cond["reason"] if failed_cond else None) == reason
    assert int(decided.status.get("restarts") or 0) == restarts
    assert decided.create_jobs == []


def test_jobs_of_an_earlier_attempt_are_deleted_and_not_recreated_in_the_same_pass() -> None:
    js = jobset(rjob("a"), status={"restarts": 1})
    old = child(js, "a", 0, attempt=0)
    decided = p.plan(js, [old], service_exists=True, now=NOW)
    assert decided.delete_jobs == [old]
    assert decided.create_jobs == []
    decided = p.plan(js, [], service_exists=True, now=NOW)
    assert decided.create_jobs[0]["metadata"]["labels"][b.RESTART_ATTEMPT_LABEL] == "1"


def test_in_order_startup_creates_one_replicated_job_at_a_time() -> None:
    js = jobset(rjob("a"), rjob("b"), startupPolicy={"startupPolicyOrder": "InOrder"})
    decided = p.plan(js, [], service_exists=True, now=NOW)
    assert [j["metadata"]["name"] for j in decided.create_jobs] == ["js-a-0"]
    assert [c["type"] for c in decided.status["conditions"]] == [p.STARTUP_IN_PROGRESS]
    ready = child(js, "a", 0, ready=2, active=2)
    decided = p.plan({**js, "status": decided.status}, [ready], service_exists=True, now=NOW)
    assert [j["metadata"]["name"] for j in decided.create_jobs] == ["js-b-0"]
    ready_b = child(js, "b", 0, ready=2, active=2)
    decided = p.plan({**js, "status": decided.status}, [ready, ready_b], service_exists=True, now=NOW)
    states = {c["type"]: c["status"] for c in decided.status["conditions"]}
    assert states == {p.STARTUP_IN_PROGRESS: "False", p.STARTUP_COMPLETED: "True"}


def test_suspend_suspends_active_jobs_and_resume_merges_template_changes() -> None:
    js = jobset(rjob("a"), suspend=True)
    running = child(jobset(rjob("a")), "a", 0, active=2)
    decided = p.plan(js, [running], service_exists=True, now=NOW)
    assert [j["spec"]["suspend"] for j in decided.update_jobs] == [True]
    assert decided.status["conditions"][0]["reason"] == "SuspendedJobs"
    resumed = jobset(rjob("a"), status=decided.status)
    resumed["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["nodeSelector"] = {
        "zone": "z"
    }
    decided = p.plan(resumed, [decided.update_jobs[0]], service_exists=True, now=NOW)
    [job] = decided.update_jobs
    assert job["spec"]["suspend"] is False
    assert job["spec"]["template"]["spec"]["nodeSelector"] == {"zone": "z"}
    assert decided.status["conditions"][0] == {**decided.status["conditions"][0], "status": "False",
                                               "reason": "ResumeJobs"}  # fmt: skip


def test_never_suspended_jobset_gets_no_suspended_condition() -> None:
    decided = p.plan(jobset(rjob("a")), [], service_exists=True, now=NOW)
    assert "conditions" not in decided.status


def test_finished_jobset_deletes_active_jobs_and_honours_ttl() -> None:
    done = {
        "conditions": [{"type": "Completed", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    }
    js = jobset(rjob("a", 2), status=done, ttlSecondsAfterFinished=30)
    active = child(js, "a", 1, active=1)
    decided = p.plan(js, [active], service_exists=True, now=NOW + 10)
    assert decided.delete_jobs == [active] and decided.requeue_after == 20 and not decided.delete_jobset
    assert p.plan(js, [], service_exists=True, now=NOW + 30).delete_jobset


# success_policy_test.go TestNumJobsExpectedToSucceed (replicas 1, 2, 3 of test-replicated-job-1..3) and
# TestNumJobsMatchingSuccessPolicy: (operator, targetReplicatedJobs) -> Jobs that must succeed
EXPECTED_TO_SUCCEED = {
    "any single job matching the jobSelector": ("Any", [], 1),
    "all replicated jobs match success policy": (
        "All", ["test-replicated-job-1", "test-replicated-job-2"], 3),
    "some replicated jobs don't match success policy": (
        "All", ["test-replicated-job-1", "test-replicated-job-3"], 4),
    "empty target replicated jobs, all job matches the success policy": ("All", [], 6),
}  # fmt: skip


@pytest.mark.parametrize("name", list(EXPECTED_TO_SUCCEED))
def test_num_jobs_expected_to_succeed(name: str) -> None:
    """The JobSet completes once that many Jobs of the targeted replicated jobs succeeded, not one before;
    a Job of another replicated job never counts."""
    operator, targets, wanted = EXPECTED_TO_SUCCEED[name]
    policy = {"operator": operator, "targetReplicatedJobs": targets}
    js = b.defaulted(jobset(*(rjob(f"test-replicated-job-{i}", i) for i in (1, 2, 3)), successPolicy=policy))
    counted = [child(js, r["name"], i, outcome="Complete") for r in js["spec"]["replicatedJobs"]
               for i in range(r["replicas"]) if not targets or r["name"] in targets]  # fmt: skip
    others = [child(js, r["name"], i, outcome="Complete") for r in js["spec"]["replicatedJobs"]
              for i in range(r["replicas"]) if targets and r["name"] not in targets]  # fmt: skip
    assert p.success_reached(js, others + counted[:wanted])
    assert not p.success_reached(js, others + counted[: wanted - 1])
