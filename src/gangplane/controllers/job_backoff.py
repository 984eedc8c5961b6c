"""The Job controller's failure accounting (pure): pod finish times, the replacement back-off, restarts
under ``OnFailure`` and the per-index failure counts of ``backoffLimitPerIndex``.

Upstream keeps a ``backoffRecord`` per Job (``pkg/controller/job/backoff_utils.go``) updated from the pods
that finished since its last sync. The embedded cluster keeps every finished pod of an unfinished Job (there
is no pod GC racing the controller), so the same record is recomputed from the pods on each pass: the
failures after the newest success and the newest failure time. Failures the pod failure policy ``Ignore``s
still delay replacements (upstream ``TestGetRemainingBackoffTimePerIndex`` adds the ignored count), they only
do not count towards the limits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gangplane.clock import parse_rfc3339
from gangplane.controllers import job_pods as jp
from gangplane.controllers.objects import meta, spec_of, status_of
from gangplane.store.base import Object

# ``DefaultJobPodFailureBackOff`` / ``MaxJobPodFailureBackOff`` in job_controller.go. The concepts page says
# the delay is "capped at six minutes": that is where the default ``backoffLimit`` of 6 stops it (320 s),
# while the code's cap is 10 minutes; the code is followed.
POD_FAILURE_BACKOFF = 10.0
MAX_POD_FAILURE_BACKOFF = 600.0
INDEX_FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count"


def finished_at(pod: Object) -> float:
    """``getFinishedTime``: the latest container ``finishedAt``, else when ``Ready`` turned False, else the
    deletion timestamp, else the creation time (a pod that never ran)."""
    status = status_of(pod)
    ends = [
        str(term["finishedAt"])
        for cs in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
        if (term := (cs.get("state") or {}).get("terminated") or {}).get("finishedAt")
    ]
    if ends:
        return max(parse_rfc3339(e) for e in ends)
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("status") == "False" and cond.get("lastTransitionTime"):
            return parse_rfc3339(str(cond["lastTransitionTime"]))
    stamp = meta(pod).get("deletionTimestamp") or meta(pod).get("creationTimestamp")
    return parse_rfc3339(str(stamp)) if stamp else 0.0


@dataclass(frozen=True)
class BackoffRecord:
    failures_after_last_success: int = 0
    last_failure: float | None = None


def backoff_record(succeeded: Iterable[Object], failed: Iterable[Object]) -> BackoffRecord:
    """``newBackoffRecord`` recomputed from all finished pods: failures newer than the newest success."""
    last_success = max((finished_at(p) for p in succeeded), default=None)
    times = sorted(finished_at(p) for p in failed)
    after = [t for t in times if last_success is None or t > last_success]
    return BackoffRecord(len(after), after[-1] if after else None)


def remaining(
    record: BackoffRecord,
    now: float,
    base: float = POD_FAILURE_BACKOFF,
    cap: float = MAX_POD_FAILURE_BACKOFF,
) -> float:
    """``getRemainingTime``: 10 s doubling per failure after the last success, capped at 10 min, measured
    from the newest failure; 0 when a replacement may be created now."""
    if record.failures_after_last_success == 0 or record.last_failure is None:
        return 0.0
    exponent = min(record.failures_after_last_success - 1, 32)  # far past any cap already
    delay = min(base * float(2**exponent), cap)
    return max(delay - (now - record.last_failure), 0.0)


def restarts_on_failure(job: Object, pods: Iterable[Object]) -> int:
    """Container restarts of the Job's pending and running pods, counted only under ``restartPolicy:
    OnFailure`` (``pastBackoffLimitOnFailure``; kubernetes#54870, fixed by kubernetes#58972)."""
    template = (spec_of(job).get("template") or {}).get("spec") or {}
    if template.get("restartPolicy") != "OnFailure":
        return 0
    total = 0
    for pod in pods:
        if jp.phase(pod) not in ("Pending", "Running"):
            continue
        status = status_of(pod)
        for cs in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
            total += int(cs.get("restartCount") or 0)
    return total


def past_backoff_limit_on_failure(job: Object, pods: Iterable[Object]) -> bool:
    """A backoffLimit of 0 fails at the first restart; otherwise the restarts reaching the limit do."""
    limit = int(spec_of(job).get("backoffLimit", jp.DEFAULT_BACKOFF_LIMIT))
    restarts = restarts_on_failure(job, pods)
    return restarts > 0 if limit == 0 else restarts >= limit


@dataclass(frozen=True)
class IndexFailures:
    """``backoffLimitPerIndex`` accounting: counted failures per index and the indexes that failed."""

    counts: dict[int, int]
    failed: set[int]


def index_failures(
    job: Object, failed_pods: Iterable[Object], action_of: Callable[[Object], str | None]
) -> IndexFailures:
    """An index fails once its counted failures exceed ``backoffLimitPerIndex`` or a ``FailIndex`` rule
    matches one of its pods (``calculateFailedIndexes`` / ``isIndexFailed``); ``Ignore``d failures do not
    count. Indexes recorded in ``status.failedIndexes`` stay failed."""
    limit = int(spec_of(job).get("backoffLimitPerIndex") or 0)
    failed = jp.parse_indexes(str(status_of(job).get("failedIndexes") or ""))
    counts: dict[int, int] = {}
    for pod in failed_pods:
        index = jp.pod_index(pod)
        action = action_of(pod)
        if index is None or action == "Ignore":
            continue
        counts[index] = counts.get(index, 0) + 1
        if action == "FailIndex" or counts[index] > limit:
            failed.add(index)
    return IndexFailures(counts, failed)
