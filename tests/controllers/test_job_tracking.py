"""Job tracking with finalizers: the cases of upstream's ``TestTrackJobStatusAndRemoveFinalizers``
(``pkg/controller/job/job_controller_test.go``) that apply here, by name, as two passes of ``job_policy.plan``
(the status that records the finished pods as uncounted, then, their finalizers removed, the counts); and the
shell over a store: a pod deleted right after it finished is counted once, and a controller restarted between
the two writes counts nothing twice.

Not ported: "expecting removed finalizers" (the shell reads pods from the store, so there are no stale
informer copies to expect), the error-injection cases and "deleted job" (a Job being deleted has its pods'
finalizers removed without a last status write).
"""

from __future__ import annotations

from typing import Any

import pytest

from gangplane.clock import ManualClock, rfc3339
from gangplane.controllers import job_policy as p
from gangplane.controllers import job_tracking as jt
from gangplane.controllers.job import JobReconciler
from gangplane.store.catalog import JOBS, NAMESPACES, PODS
from gangplane.store.memory import MemoryStore

NOW = 1_767_225_600.0
FINALIZER = "batch.kubernetes.io/job-tracking"


def job(status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns", "uid": "u"},
            "spec": {"template": template, **spec}, "status": status or {}}  # fmt: skip


def pod(
    uid: str, phase: str, *, tracked: bool = True, deleting: bool = False, index: int | None = None
) -> Any:
    meta: dict[str, Any] = {"name": f"p-{uid}", "uid": uid, "namespace": "ns"}
    meta["creationTimestamp"] = rfc3339(NOW - 100 + ord(uid[0]))
    if tracked:
        meta["finalizers"] = [FINALIZER]
    if deleting:
        meta["deletionTimestamp"] = rfc3339(NOW)
    if index is not None:
        meta["annotations"] = {"batch.kubernetes.io/job-completion-index": str(index)}
    return {"metadata": meta, "spec": {}, "status": {"phase": phase}}


def passes(owner: dict[str, Any], pods: list[Any]) -> tuple[p.JobPlan, p.JobPlan]:
    """The first write, then (the removed finalizers gone from the pods) the second."""
    first = p.plan(owner, pods, NOW)
    removed = {id(x) for x in first.remove_finalizers}
    pods = [jt.without_tracking_finalizer(x) if id(x) in removed else x for x in pods]
    return first, p.plan({**owner, "status": first.status}, pods, NOW)


def uncounted(decided: p.JobPlan) -> tuple[list[str], list[str]]:
    u = decided.status["uncountedTerminatedPods"]
    return sorted(u["succeeded"]), sorted(u["failed"])


def counts(decided: p.JobPlan) -> tuple[int, int]:
    return decided.status.get("succeeded", 0), decided.status.get("failed", 0)


def types(decided: p.JobPlan) -> set[str]:
    return {c["type"] for c in decided.status.get("conditions") or [] if c["status"] == "True"}


def test_track_finished_pods() -> None:
    pods = [pod("a", "Succeeded"), pod("b", "Failed"), pod("c", "Succeeded", deleting=True),
            pod("d", "Failed", deleting=True), pod("e", "Pending", deleting=True), pod("f", "Pending"),
            pod("g", "Running")]  # fmt: skip
    first, second = passes(job(completions=10, parallelism=2), pods)
    assert len(first.remove_finalizers) == 5
    assert uncounted(first) == (["a", "c"], ["b", "d", "e"]) and counts(first) == (0, 0)
    assert uncounted(second) == ([], []) and counts(second) == (2, 3)


def test_past_and_new_finished_pods() -> None:
    status = {"active": 1, "succeeded": 2, "failed": 3,
              "uncountedTerminatedPods": {"succeeded": ["a", "e"], "failed": ["b", "f"]}}  # fmt: skip
    pods = [pod("e", "Succeeded", tracked=False), pod("x", "Failed", tracked=False),
            pod("y", "Pending", tracked=False), pod("a", "Succeeded"), pod("b", "Failed"),
            pod("c", "Succeeded"), pod("d", "Failed")]  # fmt: skip
    first, second = passes(job(status, completions=10, parallelism=1), pods)
    assert len(first.remove_finalizers) == 4
    assert uncounted(first) == (["a", "c"], ["b", "d"]) and counts(first) == (3, 4)
    assert uncounted(second) == ([], []) and counts(second) == (5, 6)


def test_completing_job() -> None:
    first, second = passes(job(completions=1), [pod("a", "Succeeded"), pod("b", "Failed")])
    assert uncounted(first) == (["a"], ["b"]) and types(first) == {"SuccessCriteriaMet"}
    assert "completionTime" not in first.status
    assert counts(second) == (1, 1) and types(second) == {"SuccessCriteriaMet", "Complete"}
    assert second.status["completionTime"] == rfc3339(NOW)


def test_failing_job() -> None:
    """Running pod counts as failed."""
    pods = [pod("a", "Succeeded"), pod("b", "Failed"), pod("c", "Running")]
    first, second = passes(job(completions=3, parallelism=2, backoffLimit=0), pods)
    assert len(first.remove_finalizers) == 3
    assert uncounted(first) == (["a"], ["b", "c"]) and types(first) == {"FailureTarget"}
    assert counts(second) == (1, 2) and types(second) == {"FailureTarget", "Failed"}


def test_succeeding_job_by_job_success_policy() -> None:
    policy = {"rules": [{"succeededIndexes": "0"}]}
    owner = job(completions=3, parallelism=3, completionMode="Indexed", successPolicy=policy)
    pods = [pod("a", "Succeeded", index=0), pod("b", "Failed", index=1), pod("c", "Pending", index=2)]
    first, second = passes(owner, pods)
    assert len(first.remove_finalizers) == 3
    assert uncounted(first) == ([], ["b"]) and types(first) == {"SuccessCriteriaMet"}
    assert counts(second) == (1, 1) and types(second) == {"SuccessCriteriaMet", "Complete"}


def test_indexed_job_new_successful_pods() -> None:
    owner = job({"active": 1}, completions=6, parallelism=1, completionMode="Indexed")
    pods = [pod("a", "Succeeded", index=1), pod("b", "Succeeded", index=3), pod("c", "Succeeded", index=3),
            pod("d", "Running", index=5), pod("e", "Succeeded")]  # fmt: skip
    decided = p.plan(owner, pods, NOW)
    assert len(decided.remove_finalizers) == 4
    assert uncounted(decided) == ([], []) and counts(decided) == (2, 0)
    assert decided.status["completedIndexes"] == "1,3"


def test_indexed_job_new_failed_pods() -> None:
    owner = job({"active": 1}, completions=6, parallelism=1, completionMode="Indexed")
    pods = [pod("a", "Failed", index=1), pod("b", "Failed", index=3), pod("c", "Failed", index=3),
            pod("d", "Running", index=5), pod("e", "Failed")]  # fmt: skip
    first, second = passes(owner, pods)
    assert len(first.remove_finalizers) == 4
    assert uncounted(first) == ([], ["a", "b", "c"]) and counts(second) == (0, 3)


def test_indexed_job_past_and_new_pods() -> None:
    status = {"failed": 2, "succeeded": 5, "completedIndexes": "0-2,4,6,7"}
    owner = job(status, completions=7, parallelism=1, completionMode="Indexed")
    pods = [pod("p", "Succeeded", tracked=False, index=0), pod("q", "Failed", tracked=False, index=1),
            pod("r", "Succeeded", index=1), pod("s", "Succeeded", index=3), pod("a", "Failed", index=2),
            pod("b", "Failed", index=5)]  # fmt: skip
    first, second = passes(owner, pods)
    assert len(first.remove_finalizers) == 4
    assert counts(first) == (6, 2) and first.status["completedIndexes"] == "0-4,6"
    assert uncounted(first) == ([], ["a", "b"]) and counts(second) == (6, 4)


def numbered(i: int, phase: str, index: int | None = None) -> Any:
    """Pod ``i`` of a long list, created in list order (upstream's loop takes the pods as listed)."""
    made = pod(str(i), phase, index=index)
    made["metadata"]["creationTimestamp"] = rfc3339(NOW - 1000 + i)
    return made


def test_too_many_finished() -> None:
    """``MaxUncountedPods``: 499 new uids and "b", still uncounted from before, reach 500; the 500th
    succeeded pod and "b" keep their finalizer for the next pass, and the Job does not finish in this one."""
    pods = [numbered(i, "Succeeded") for i in range(500)] + [pod("b", "Failed")]
    first, second = passes(job({"uncountedTerminatedPods": {"failed": ["a", "b"]}}), pods)
    assert len(first.remove_finalizers) == 499 and "Complete" not in types(first)
    assert uncounted(first) == (sorted(str(i) for i in range(499)), ["b"]) and counts(first) == (0, 1)
    # upstream's second write of the same sync; this port's second pass also takes the pods left behind
    assert counts(second) == (499, 1) and uncounted(second) == (["499"], ["b"])


def test_too_many_indexed_finished() -> None:
    """New completed indexes count towards the cap too: 500 of 501 this pass, the Job not finished yet."""
    pods = [numbered(i, "Succeeded", index=i) for i in range(501)]
    decided = p.plan(job(completions=501, completionMode="Indexed"), pods, NOW)
    assert len(decided.remove_finalizers) == 500 and "Complete" not in types(decided)
    assert uncounted(decided) == ([], []) and counts(decided) == (500, 0)
    assert decided.status["completedIndexes"] == "0-499"


# -- the shell over a store ------------------------------------------------------------------------------


@pytest.fixture
def store() -> MemoryStore:
    made = MemoryStore(clock=ManualClock(NOW))
    made.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    return made


def stored_job(store: MemoryStore, **spec: Any) -> dict[str, Any]:
    body = job(**spec)
    body["metadata"].pop("uid")
    body.pop("status")
    return store.create(JOBS, body)


def finish(store: MemoryStore, phase: str) -> dict[str, Any]:
    (only,) = [
        x for x in store.list(PODS).items if x.get("status", {}).get("phase") not in ("Succeeded", "Failed")
    ]
    return store.update_status(PODS, {**only, "status": {"phase": phase}})


def test_a_pod_deleted_right_after_it_failed_is_counted_once(store: MemoryStore) -> None:
    """Upstream's reason for the finalizer: the failed pod is deleted (kubectl, PodGC) before the controller
    saw it fail; the finalizer keeps it until it is counted, then it goes."""
    stored_job(store, completions=1, parallelism=1, backoffLimit=3)
    reconciler = JobReconciler(store, store._clock)
    reconciler.reconcile(("ns", "j"))
    created = store.list(PODS).items[0]
    assert created["metadata"]["finalizers"] == [FINALIZER]
    failed = finish(store, "Failed")
    store.delete(PODS, "ns", failed["metadata"]["name"])
    reconciler.reconcile(("ns", "j"))
    status = store.get(JOBS, "ns", "j")["status"]
    assert status["failed"] == 1 and status["uncountedTerminatedPods"] == {"succeeded": [], "failed": []}
    names = [x["metadata"]["name"] for x in store.list(PODS).items]
    assert failed["metadata"]["name"] not in names and len(names) == 1  # counted, gone, replaced
    reconciler.reconcile(("ns", "j"))
    assert store.get(JOBS, "ns", "j")["status"]["failed"] == 1


def test_a_restart_between_the_two_writes_counts_nothing_twice(store: MemoryStore) -> None:
    stored_job(store, completions=2, parallelism=1)
    JobReconciler(store, store._clock).reconcile(("ns", "j"))
    finish(store, "Succeeded")
    current = store.get(JOBS, "ns", "j")
    first = p.plan(current, store.list(PODS).items, NOW)  # the write the stopped controller made, only
    store.update_status(JOBS, {**current, "status": first.status})
    assert len(first.status["uncountedTerminatedPods"]["succeeded"]) == 1
    restarted = JobReconciler(store, store._clock)
    for _ in range(2):
        restarted.reconcile(("ns", "j"))
    status = store.get(JOBS, "ns", "j")["status"]
    assert status["succeeded"] == 1 and status["uncountedTerminatedPods"]["succeeded"] == []
    assert all(
        not x["metadata"].get("finalizers")
        for x in store.list(PODS).items
        if x.get("status", {}).get("phase") == "Succeeded"
    )


def test_the_pods_of_a_deleted_job_lose_the_finalizer(store: MemoryStore) -> None:
    stored_job(store, completions=1, parallelism=1)
    reconciler = JobReconciler(store, store._clock)
    reconciler.reconcile(("ns", "j"))
    store.delete(JOBS, "ns", "j")  # background: the pod is marked, the finalizer holds it
    assert store.list(PODS).items
    reconciler.reconcile(("ns", "j"))
    assert store.list(PODS).items == []


def test_a_big_job_is_counted_at_most_500_pods_a_pass(store: MemoryStore) -> None:
    """600 pods, made 500 a pass (``MaxPodCreateDeletePerSync``), finishing together: no status written
    names more than ``MaxUncountedPods`` of them, and the passes the writes requeue count every one and
    complete the Job."""
    stored_job(store, completions=600, parallelism=600)
    reconciler = JobReconciler(store, store._clock)
    made = []
    for _ in range(2):
        reconciler.reconcile(("ns", "j"))
        made.append(len(store.list(PODS).items))
    assert made == [500, 600]
    for each in store.list(PODS).items:
        store.update_status(PODS, {**each, "status": {"phase": "Succeeded"}})
    written, update = [], store.update_status

    def recording(rt: Any, obj: dict[str, Any], **kw: Any) -> dict[str, Any]:
        if rt is JOBS:
            written.append(len(obj["status"]["uncountedTerminatedPods"]["succeeded"]))
        return update(rt, obj, **kw)

    store.update_status = recording  # type: ignore[method-assign]
    for _ in range(6):
        reconciler.reconcile(("ns", "j"))
    status = store.get(JOBS, "ns", "j")["status"]
    complete = [
        c for c in status.get("conditions") or [] if c["type"] == "Complete" and c["status"] == "True"
    ]
    assert max(written) == jt.MAX_UNCOUNTED_PODS and status["succeeded"] == 600 and complete
