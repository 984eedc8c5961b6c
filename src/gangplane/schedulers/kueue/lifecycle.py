"""What the embedded Kueue does with a Workload object whose life is ending; pure.

After kueue ``pkg/controller/core/workload_controller.go`` (``isOrphanedWorkload``,
``workload.FinalizeOrphanedWorkload``) and ``pkg/controller/jobframework/reconciler.go`` (steps 1 and 1.1,
``finalizeWorkloads``):

- a Workload being deleted (``deletionTimestamp`` set) leaves the cache at once, so its quota and its queue
  position are freed before the object is gone; its job is stopped if it still runs, and the
  ``kueue.x-k8s.io/resource-in-use`` finalizer is removed so the deletion completes;
- a finished Workload keeps its status but holds no quota; its finalizer is removed;
- an orphaned Workload (no owner and the ``kueue.x-k8s.io/job-uid`` label, or a controller owner TrainJob that
  no longer exists) is finished with reason ``OwnerNotFound`` (``FinishOrphanedWorkloads``, on by default
  since Kueue 0.18) and its finalizer removed.

Every rule reads only the stored object and whether its owner exists, so the first pass after a restart
repairs whatever a crash left half done (a Terminating Workload still holding quota, a finalizer never
removed) with the same code.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gangplane.api import trainer as t
from gangplane.api.meta import OwnerReference
from gangplane.api.scheduling import kueue as kq
from gangplane.api.scheduling import kueue_workload as kw

OWNER_NOT_FOUND = "OwnerNotFound"
OWNER_NOT_FOUND_MESSAGE = "The workload's owner no longer exists"


class Fate(StrEnum):
    LIVE = "Live"  # an ordinary Workload: the core keeps it queued or admitted
    DELETING = "Deleting"  # drop from the core, stop the job, remove the finalizer
    FINISHED = "Finished"  # finished: no quota held; remove the finalizer
    ORPHANED = "Orphaned"  # finish it (OwnerNotFound), then remove the finalizer


@dataclass(frozen=True)
class Verdict:
    fate: Fate
    remove_finalizer: bool


def controller_trainjob(workload: kw.Workload) -> OwnerReference | None:
    return next(
        (r for r in workload.metadata.owner_references or [] if r.kind == t.TRAINJOB_KIND and r.controller),
        None,
    )


def is_finished(workload: kw.Workload) -> bool:
    conditions = (workload.status.conditions if workload.status else None) or []
    return any(c.type == kw.WorkloadConditionType.FINISHED and c.status == "True" for c in conditions)


def has_finalizer(workload: kw.Workload) -> bool:
    return kq.RESOURCE_IN_USE_FINALIZER in (workload.metadata.finalizers or [])


def _orphaned(workload: kw.Workload, owner_uid: str | None) -> bool:
    refs = workload.metadata.owner_references or []
    if not refs:
        return bool((workload.metadata.labels or {}).get(kq.JOB_UID_LABEL))
    ref = controller_trainjob(workload)
    # The job reconciler finalizes the Workloads of a TrainJob it cannot find; a TrainJob recreated under the
    # same name is another object (another uid), so it does not own this Workload.
    return ref is not None and owner_uid != ref.uid


def verdict(workload: kw.Workload, owner_uid: str | None) -> Verdict:
    """The Workload's fate; ``owner_uid`` is the uid of the TrainJob named by its controller owner reference,
    None when that TrainJob does not exist."""
    finalizer = has_finalizer(workload)
    if workload.metadata.deletion_timestamp:
        return Verdict(Fate.DELETING, finalizer)
    if is_finished(workload):
        return Verdict(Fate.FINISHED, finalizer)
    if _orphaned(workload, owner_uid):
        return Verdict(Fate.ORPHANED, finalizer)
    return Verdict(Fate.LIVE, False)
