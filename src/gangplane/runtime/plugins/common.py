"""Small helpers shared by plugins."""

from __future__ import annotations

from gangplane.api import trainer as t
from gangplane.api.meta import OwnerReference


def owner_reference(job: t.TrainJob) -> OwnerReference:
    """The controller reference every child of a TrainJob carries."""
    return OwnerReference(
        api_version=t.API_VERSION,
        kind=t.TRAINJOB_KIND,
        name=job.metadata.name or "",
        uid=job.metadata.uid or "",
        controller=True,
        block_owner_deletion=True,
    )
