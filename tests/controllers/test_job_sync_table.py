"""``TestControllerSyncJob`` and ``TestSyncJobPastDeadline`` (``pkg/controller/job/job_controller_test.go``),
the cases that apply here, by name: one sync (both of ``trackJobStatusAndRemoveFinalizers``'s writes,
``job_passes.settle_plan``) over pods counted by phase, then the pods created and deleted and the status
counters.

Not ported: the controller-error, pod-limit and expectation cases (the shell reads pods from the store and
retries a failed write), the cases of a Job being deleted, the ones with a feature gate turned off
(PodIndexLabel) and the back-off record ones (``test_job_lifecycle.py`` has upstream's back-off tables).
Conditions: the terminal (or suspended) one is compared; gangplane writes the interim
``FailureTarget``/``SuccessCriteriaMet`` too, as Kubernetes 1.31 and later do with their gates on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from job_passes import settle_plan

from gangplane.clock import rfc3339
from gangplane.controllers import job_pods as jp

NOW = 1_767_225_600.0


@dataclass(frozen=True)
class Case:
    parallelism: int
    completions: int  # -1: none (a work-queue Job)
    backoff_limit: int = 6
    indexed: bool = False
    # pending, active, ready, succeeded, failed, terminating
    pods: dict[str, int] = field(default_factory=dict)
    with_indexes: tuple[tuple[int | None, str], ...] = ()
    replacement: str | None = None
    suspend: bool = False
    was_suspended: bool = False
    # expectations: creations, deletions, active, ready, succeeded, failed, completed indexes, condition
    want: tuple[int, int, int, int, int, int] = (0, 0, 0, 0, 0, 0)
    completed: str = ""
    condition: str | None = None
    created_indexes: tuple[int, ...] = ()
    terminating: int | None = None
    deadline: int | None = None  # activeDeadlineSeconds
    started: float = 0.0  # status.startTime, this many seconds ago
    reason: str | None = None  # the terminal condition's reason


CASES = {
    "job start": Case(2, 5, want=(2, 0, 2, 0, 0, 0)),
    "WQ job start": Case(2, -1, want=(2, 0, 2, 0, 0, 0)),
    "pending pods": Case(2, 5, pods={"pending": 2}, want=(0, 0, 2, 0, 0, 0)),
    "correct # of pods": Case(3, 5, pods={"active": 3, "ready": 2}, want=(0, 0, 3, 2, 0, 0)),
    "WQ job: correct # of pods": Case(2, -1, pods={"active": 2}, want=(0, 0, 2, 0, 0, 0)),
    "too few active pods": Case(2, 5, pods={"active": 1, "succeeded": 1}, want=(1, 0, 2, 0, 1, 0)),
    "WQ job: recreate pods when failed": Case(
        1,
        -1,
        pods={"active": 1, "failed": 1, "terminating": 1},
        replacement="Failed",
        want=(0, 0, 1, 0, 0, 1),
        terminating=1,
    ),
    "WQ job: turn on PodReplacementPolicy but not set PodReplacementPolicy": Case(
        1, 1, pods={"active": 1, "failed": 1, "terminating": 1}, want=(0, 0, 1, 0, 0, 2), terminating=1
    ),
    "WQ job: recreate pods when terminating or failed": Case(
        1,
        -1,
        pods={"active": 1, "failed": 1, "terminating": 1},
        replacement="TerminatingOrFailed",
        want=(0, 0, 1, 0, 0, 2),
        terminating=1,
    ),
    "too few active pods with a dynamic job": Case(2, -1, pods={"active": 1}, want=(1, 0, 2, 0, 0, 0)),
    "too many active pods": Case(2, 5, pods={"active": 3}, want=(0, 1, 2, 0, 0, 0)),
    "count ready pods when too many active pods": Case(
        2, 5, pods={"active": 3, "ready": 3}, want=(0, 1, 2, 2, 0, 0)
    ),
    "failed + succeed pods: reset backoff delay": Case(
        2, 5, pods={"active": 1, "succeeded": 1, "failed": 1}, want=(1, 0, 2, 0, 1, 1)
    ),
    "new failed pod": Case(2, 5, pods={"active": 1, "failed": 1}, want=(1, 0, 2, 0, 0, 1)),
    "job finish": Case(2, 5, pods={"succeeded": 5}, want=(0, 0, 0, 0, 5, 0), condition="Complete"),
    "WQ job finishing": Case(2, -1, pods={"active": 1, "succeeded": 1}, want=(0, 0, 1, 0, 1, 0)),
    "WQ job all finished": Case(2, -1, pods={"succeeded": 2}, want=(0, 0, 0, 0, 2, 0), condition="Complete"),
    "WQ job all finished despite one failure": Case(
        2, -1, pods={"succeeded": 1, "failed": 1}, want=(0, 0, 0, 0, 1, 1), condition="Complete"
    ),
    "more active pods than parallelism": Case(2, 5, pods={"active": 10}, want=(0, 8, 2, 0, 0, 0)),
    "more active pods than remaining completions": Case(
        3, 4, pods={"active": 3, "succeeded": 2}, want=(0, 1, 2, 0, 2, 0)
    ),
    "status change": Case(2, 5, pods={"active": 2, "succeeded": 2}, want=(0, 0, 2, 0, 2, 0)),
    "indexed job start": Case(2, 5, indexed=True, want=(2, 0, 2, 0, 0, 0), created_indexes=(0, 1)),
    "indexed job with some pods deleted, podReplacementPolicy Failed": Case(
        2,
        5,
        indexed=True,
        pods={"terminating": 1},
        replacement="Failed",
        want=(1, 0, 1, 0, 0, 0),
        created_indexes=(0,),
        terminating=1,
    ),
    "indexed job with some pods deleted, podReplacementPolicy TerminatingOrFailed": Case(
        2,
        5,
        indexed=True,
        pods={"terminating": 1},
        replacement="TerminatingOrFailed",
        want=(2, 0, 2, 0, 0, 0),
        created_indexes=(0, 1),
        terminating=1,
    ),
    "indexed job completed": Case(
        2,
        3,
        indexed=True,
        with_indexes=((0, "Succeeded"), (1, "Failed"), (1, "Succeeded"), (2, "Succeeded")),
        want=(0, 0, 0, 0, 3, 1),
        completed="0-2",
        condition="Complete",
    ),
    "indexed job failed": Case(
        2,
        3,
        backoff_limit=0,
        indexed=True,
        with_indexes=((0, "Succeeded"), (1, "Failed"), (2, "Running")),
        want=(0, 1, 0, 0, 1, 2),
        completed="0",
        condition="Failed",
    ),
    "count ready pods when job fails": Case(
        2,
        3,
        backoff_limit=0,
        pods={"active": 2, "ready": 2, "failed": 1},
        want=(0, 2, 0, 0, 0, 3),
        condition="Failed",
    ),
    "indexed job repeated completed index": Case(
        2,
        3,
        indexed=True,
        with_indexes=((0, "Succeeded"), (1, "Succeeded"), (1, "Succeeded")),
        want=(1, 0, 1, 0, 2, 0),
        completed="0,1",
        created_indexes=(2,),
    ),
    "indexed job some running and completed pods": Case(
        8,
        20,
        indexed=True,
        with_indexes=(
            (0, "Running"),
            (2, "Succeeded"),
            (3, "Pending"),
            (4, "Succeeded"),
            (5, "Succeeded"),
            (7, "Succeeded"),
            (8, "Succeeded"),
            (9, "Succeeded"),
        ),
        want=(6, 0, 8, 0, 6, 0),
        completed="2,4,5,7-9",
        created_indexes=(1, 6, 10, 11, 12, 13),
    ),
    "indexed job some failed pods": Case(
        3,
        4,
        indexed=True,
        with_indexes=((0, "Failed"), (1, "Pending"), (2, "Failed")),
        want=(2, 0, 3, 0, 0, 2),
        created_indexes=(0, 2),
    ),
    "suspending a job with satisfied expectations": Case(
        2, 4, pods={"active": 2}, suspend=True, want=(0, 2, 0, 0, 0, 0), condition="Suspended"
    ),
    "count ready pods when suspending a job with satisfied expectations": Case(
        2, 4, pods={"active": 2, "ready": 2}, suspend=True, want=(0, 2, 0, 0, 0, 0), condition="Suspended"
    ),
    "resuming a suspended job": Case(2, 4, was_suspended=True, want=(2, 0, 2, 0, 0, 0)),
}


# TestSyncJobPastDeadline: one sync of a Job started ``started`` seconds ago
_DEADLINE, _BACKOFF = "DeadlineExceeded", "BackoffLimitExceeded"
CASES |= {
    "activeDeadlineSeconds less than single pod execution": Case(
        1, 1, pods={"active": 1}, deadline=10, started=15, want=(0, 1, 0, 0, 0, 1), condition="Failed",
        reason=_DEADLINE,
    ),
    "activeDeadlineSeconds bigger than single pod execution": Case(
        1, 2, pods={"active": 1, "succeeded": 1}, deadline=10, started=15, want=(0, 1, 0, 0, 1, 1),
        condition="Failed", reason=_DEADLINE,
    ),
    "activeDeadlineSeconds times-out before any pod starts": Case(
        1, 1, deadline=10, started=10, want=(0, 0, 0, 0, 0, 0), condition="Failed", reason=_DEADLINE
    ),
    "activeDeadlineSeconds with backofflimit reach": Case(
        1, 1, backoff_limit=0, pods={"failed": 1}, deadline=1, started=10, want=(0, 0, 0, 0, 0, 1),
        condition="Failed", reason=_BACKOFF,
    ),
    "activeDeadlineSeconds is not triggered when Job is suspended": Case(
        1, 2, suspend=True, deadline=10, started=15, want=(0, 0, 0, 0, 0, 0), condition="Suspended"
    ),
}  # fmt: skip


def _job(case: Case) -> dict[str, Any]:
    spec: dict[str, Any] = {"parallelism": case.parallelism, "backoffLimit": case.backoff_limit,
                            "suspend": case.suspend, "template": {"spec": {"containers": [{"name": "c"}],
                                                                           "restartPolicy": "Never"}}}  # fmt: skip
    if case.completions >= 0:
        spec["completions"] = case.completions
    if case.indexed:
        spec["completionMode"] = "Indexed"
    if case.replacement:
        spec["podReplacementPolicy"] = case.replacement
    if case.deadline is not None:
        spec["activeDeadlineSeconds"] = case.deadline
    status: dict[str, Any] = {"startTime": rfc3339(NOW - case.started)} if case.started else {}
    if case.was_suspended:
        status["conditions"] = [{"type": "Suspended", "status": "True", "reason": "JobSuspended",
                                 "message": "Job suspended", "lastTransitionTime": rfc3339(NOW - 60)}]  # fmt: skip
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "foobar", "namespace": "ns",
            "uid": "u"}, "spec": spec, "status": status}  # fmt: skip


def _pod(owner: dict[str, Any], index: int | None, phase: str, n: int) -> dict[str, Any]:
    built = jp.build_pod(jp.defaulted_job(owner), index)
    built["metadata"]["name"] = f"{built['metadata'].pop('generateName')}{n:05d}"
    built["metadata"]["creationTimestamp"] = rfc3339(NOW - 100 + n)
    built["status"] = {"phase": phase}
    if phase in ("Succeeded", "Failed"):
        finished = {
            "terminated": {"exitCode": 0 if phase == "Succeeded" else 1, "finishedAt": rfc3339(NOW - 50)}
        }
        built["status"]["containerStatuses"] = [{"name": "c", "state": finished}]
    return built


def _pods(owner: dict[str, Any], case: Case) -> list[dict[str, Any]]:
    """``setPodsStatuses`` and ``setPodsStatusesWithIndexes``: the counted pods carry no index."""
    made: list[dict[str, Any]] = []
    counts = case.pods
    for phase, how_many in (("Pending", counts.get("pending", 0)), ("Running", counts.get("active", 0)),
                            ("Succeeded", counts.get("succeeded", 0)), ("Failed", counts.get("failed", 0)),
                            ("Running", counts.get("terminating", 0))):  # fmt: skip
        for i in range(how_many):
            made.append(_pod(owner, None, phase, len(made)))
            if phase == "Running" and len(made) > counts.get("pending", 0) + counts.get("active", 0):
                made[-1]["metadata"]["deletionTimestamp"] = rfc3339(NOW - 1)  # the terminating ones
            elif phase == "Running" and i < counts.get("ready", 0):
                made[-1]["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    for index, phase in case.with_indexes:
        made.append(_pod(owner, index, phase, len(made)))
    return made


@pytest.mark.parametrize("name", list(CASES))
def test_controller_sync_job(name: str) -> None:
    case = CASES[name]
    owner = _job(case)
    decided = settle_plan(owner, _pods(owner, case), NOW)
    status = decided.status
    got = (len(decided.create_pods), len(decided.delete_pods), status.get("active", 0), status.get("ready", 0),
           status.get("succeeded", 0), status.get("failed", 0))  # fmt: skip
    assert got == case.want
    assert status.get("completedIndexes", "") == case.completed
    created = sorted(i for x in decided.create_pods if (i := jp.pod_index(x)) is not None)
    assert created == sorted(case.created_indexes)
    terminal = {c["type"] for c in status.get("conditions") or [] if c["status"] == "True"}
    terminal &= {"Complete", "Failed", "Suspended"}
    assert terminal == ({case.condition} if case.condition else set())
    if case.terminating is not None:
        assert status.get("terminating") == case.terminating
    if case.reason is not None:
        reasons = {c["type"]: c["reason"] for c in status.get("conditions") or [] if c["status"] == "True"}
        assert reasons[str(case.condition)] == case.reason
