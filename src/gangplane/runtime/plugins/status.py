"""TrainJobStatus: the TrainJob's terminal conditions and ``jobsStatus``, read from its JobSet.

The single status plugin (upstream keeps this in the JobSet plugin's ``Status``): JobSet ``Completed=True``
becomes ``Complete`` and ``Failed=True`` becomes ``Failed``, status, reason and message copied; ``jobsStatus``
mirrors ``replicatedJobsStatus``. Suspension and deadline conditions belong to the controller.
"""

from __future__ import annotations

from typing import ClassVar

from gangplane.api import trainer as t
from gangplane.api.jobset import API_VERSION, JobSet
from gangplane.api.meta import find_condition, set_condition
from gangplane.runtime.points import Handle
from gangplane.runtime.reader import Reader

_TERMINAL = (("Completed", t.ConditionType.COMPLETE), ("Failed", t.ConditionType.FAILED))


class TrainJobStatusPlugin:
    name: ClassVar[str] = "TrainJobStatus"

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def status(self, job: t.TrainJob, reader: Reader) -> t.TrainJobStatus | None:
        found = reader.get(API_VERSION, "JobSet", job.metadata.namespace or "", job.metadata.name or "")
        if found is None:
            return None
        jobset = JobSet.model_validate(found)
        status = job.status.model_copy(deep=True) if job.status else t.TrainJobStatus()
        conditions = list(status.conditions or [])
        for source, target in _TERMINAL:
            copied = find_condition(jobset.status.conditions if jobset.status else None, source)
            if copied is not None and copied.status == "True":
                conditions = set_condition(conditions, copied.model_copy(update={"type": str(target)}))
        if conditions:
            status.conditions = conditions
        status.jobs_status = [
            t.JobStatus.model_validate(rjob.to_dict())
            for rjob in (jobset.status.replicated_jobs_status if jobset.status else None) or []
        ]
        return status
