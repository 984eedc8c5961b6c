"""Job tracking with finalizers, as pure functions (``pkg/controller/job/job_controller.go``:
``trackJobStatusAndRemoveFinalizers``, ``cleanUncountedPodsWithoutFinalizers``, ``getStatus``,
``canRemoveFinalizer``, ``isPodFailed``).

Every pod the Job controller creates carries the ``batch.kubernetes.io/job-tracking`` finalizer, so it stays
stored until it has been counted. A pass records each newly finished pod's uid in
``status.uncountedTerminatedPods`` (``succeeded``/``failed``; an Indexed Job's succeeded pods are recorded by
``completedIndexes`` instead), writes that status, then removes the pods' finalizers; the next pass moves every
uid whose pod no longer has the finalizer (or is gone) into ``status.succeeded``/``failed``. A pod deleted or
collected right after it finished is thus counted exactly once, and a controller that stops between the two
writes counts nothing twice. The Job's terminal condition (``Complete``/``Failed``) waits until nothing is
uncounted; its interim one (``SuccessCriteriaMet``/``FailureTarget``) is written before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gangplane.controllers import job_pods as jp
from gangplane.controllers.job_pods import TRACKING_FINALIZER
from gangplane.controllers.objects import deleting, name_of, spec_of, uid_of
from gangplane.store.base import Object


def tracked(pod: Object) -> bool:
    return TRACKING_FINALIZER in ((pod.get("metadata") or {}).get("finalizers") or ())


def without_tracking_finalizer(pod: Object) -> Object:
    """The pod with the finalizer removed (``removeTrackingFinalizerPatch``), others kept in order."""
    names = [f for f in (pod["metadata"].get("finalizers") or []) if f != TRACKING_FINALIZER]
    metadata = {k: v for k, v in pod["metadata"].items() if k != "finalizers"}
    return {**pod, "metadata": {**metadata, "finalizers": names} if names else metadata}


def pod_key(pod: Object) -> str:
    """The uid the status records (a pod not yet stored, as in unit tables, by its name)."""
    return uid_of(pod) or name_of(pod)


def is_pod_failed(pod: Object, only_replace_failed: bool) -> bool:
    """``isPodFailed``: ``Failed``, or being deleted and not ``Succeeded`` (unless ``podReplacementPolicy``
    is ``Failed``: then only the phase counts)."""
    if jp.phase(pod) == "Failed":
        return True
    return not only_replace_failed and deleting(pod) and jp.phase(pod) != "Succeeded"


@dataclass
class Counts:
    """``status.succeeded``/``failed`` as recorded and the uids not yet counted in them."""

    succeeded: int
    failed: int
    uncounted_succeeded: list[str] = field(default_factory=list)
    uncounted_failed: list[str] = field(default_factory=list)
    remove_finalizers: list[Object] = field(default_factory=list)  # pods to lose the finalizer this pass

    @property
    def total_succeeded(self) -> int:
        return self.succeeded + len(self.uncounted_succeeded)

    @property
    def total_failed(self) -> int:
        return self.failed + len(self.uncounted_failed)

    @property
    def pending(self) -> bool:
        """Something is uncounted or has its finalizer still: the Job may not finish yet."""
        return bool(self.uncounted_succeeded or self.uncounted_failed or self.remove_finalizers)

    def status(self) -> dict[str, Any]:
        return {"succeeded": self.uncounted_succeeded, "failed": self.uncounted_failed}

    def mark_failed(self, pod: Object) -> None:
        """A pod counted failed by this pass (``FailJob`` ends its Job: its active pods count too)."""
        if tracked(pod) and pod not in self.remove_finalizers:
            self.remove_finalizers.append(pod)
        if tracked(pod) and pod_key(pod) not in self.uncounted_failed:
            self.uncounted_failed.append(pod_key(pod))


def flushed(status: dict[str, Any], pods: list[Object]) -> Counts:
    """``cleanUncountedPodsWithoutFinalizers``: uncounted uids whose pod lost its finalizer, or is gone,
    move into the counts."""
    holding = {pod_key(p) for p in pods if tracked(p)}
    uncounted = status.get("uncountedTerminatedPods") or {}
    succeeded = [str(u) for u in uncounted.get("succeeded") or ()]
    failed = [str(u) for u in uncounted.get("failed") or ()]
    kept_succeeded, kept_failed = [u for u in succeeded if u in holding], [u for u in failed if u in holding]
    return Counts(
        int(status.get("succeeded") or 0) + len(succeeded) - len(kept_succeeded),
        int(status.get("failed") or 0) + len(failed) - len(kept_failed),
        kept_succeeded,
        kept_failed,
    )


def track(
    counts: Counts,
    pods: list[Object],
    *,
    indexed: bool,
    only_replace_failed: bool,
    counts_failure: Callable[[Object], bool],
) -> Counts:
    """Record each finished pod that still has the finalizer (``trackJobStatusAndRemoveFinalizers``'s loop):
    a succeeded one by uid (NonIndexed) and a failed one unless the pod failure policy ignores it; both lose
    their finalizer. ``counts_failure``: the failure policy's verdict (``Ignore`` does not count)."""
    for pod in pods:
        if not tracked(pod):
            continue  # counted in an earlier pass
        failed = is_pod_failed(pod, only_replace_failed)
        if jp.phase(pod) == "Succeeded":
            counts.remove_finalizers.append(pod)
            key = pod_key(pod)
            if not indexed and key not in counts.uncounted_failed and key not in counts.uncounted_succeeded:
                counts.uncounted_succeeded.append(key)
        elif failed:
            counts.remove_finalizers.append(pod)
            if counts_failure(pod) and pod_key(pod) not in counts.uncounted_failed:
                counts.uncounted_failed.append(pod_key(pod))
    return counts


# ``MaxUncountedPods``: what one pass adds to ``uncountedTerminatedPods`` (with the new completed indexes), so
# the status stays small (~20 KB of uids) and one big Job's finalizer removals do not starve the others
MAX_UNCOUNTED_PODS = 500


def capped(
    counts: Counts, before: Mapping[str, Any], new_index: Callable[[Object], int | None]
) -> tuple[set[int], bool]:
    """``MaxUncountedPods`` (``trackJobStatusAndRemoveFinalizers``'s loop): the pods are taken in order
    until the uids still uncounted from before, the new ones and the new completed indexes (``new_index``)
    reach the cap; the later ones keep their finalizer for the next pass (this one's writes requeue the
    Job). Trims ``counts``; returns the new indexes only the pods left behind had, and whether the cap was
    reached (the Job does not finish in such a pass)."""
    uncounted = before.get("uncountedTerminatedPods") or {}
    old = {str(u) for u in [*(uncounted.get("succeeded") or ()), *(uncounted.get("failed") or ())]}
    listed = [*counts.uncounted_succeeded, *counts.uncounted_failed]
    total, new = sum(u in old for u in listed), {u for u in listed if u not in old}
    for i, pod in enumerate(counts.remove_finalizers):
        total += (pod_key(pod) in new) + (new_index(pod) is not None)
        if total >= MAX_UNCOUNTED_PODS:
            return _leave(counts, i + 1, old, new_index), True
    return set(), False


def new_completed_index(job: Object, before: Mapping[str, Any]) -> Callable[[Object], int | None]:
    """The completed index a succeeded pod adds to ``completedIndexes`` in this pass, if any (a NonIndexed
    Job's succeeded pods are counted by uid instead)."""
    completions = int(spec_of(job).get("completions") or 0)
    previous = jp.parse_indexes(str(before.get("completedIndexes") or ""))
    failed = {str(u) for u in (before.get("uncountedTerminatedPods") or {}).get("failed") or ()}

    def new_index(pod: Object) -> int | None:
        i = jp.pod_index(pod) if jp.indexed(job) and jp.phase(pod) == "Succeeded" else None
        new = i is not None and i < completions and i not in previous and pod_key(pod) not in failed
        return i if new else None

    return new_index


def _leave(counts: Counts, kept: int, old: set[str], new_index: Callable[[Object], int | None]) -> set[int]:
    left, counts.remove_finalizers = counts.remove_finalizers[kept:], counts.remove_finalizers[:kept]
    keys = {pod_key(p) for p in left}
    counts.uncounted_succeeded = [u for u in counts.uncounted_succeeded if u in old or u not in keys]
    counts.uncounted_failed = [u for u in counts.uncounted_failed if u in old or u not in keys]
    taken = {new_index(p) for p in counts.remove_finalizers}
    return {i for p in left if (i := new_index(p)) is not None and i not in taken}


def release(counts: Counts, pods: list[Object]) -> None:
    """Pods whose Job finished or is deleted lose the finalizer uncounted (``canRemoveFinalizer``)."""
    for pod in pods:
        if tracked(pod) and pod not in counts.remove_finalizers:
            counts.remove_finalizers.append(pod)


__all__ = [
    "MAX_UNCOUNTED_PODS",
    "TRACKING_FINALIZER",
    "Counts",
    "capped",
    "flushed",
    "is_pod_failed",
    "new_completed_index",
    "pod_key",
    "release",
    "track",
    "tracked",
    "without_tracking_finalizer",
]
