"""scheduler-plugins Coscheduling: PodGroup ``scheduling.x-k8s.io/v1alpha1`` and the keys around it.

Shapes follow ``config/crd/bases/scheduling.x-k8s.io_podgroups.yaml`` at scheduler-plugins ``903da7df``
(reference/coscheduling.md §2). The PodGroup is an external CRD, so every model is open: fields added
upstream after that commit are kept and written back. ``status.scheduled`` and the phases
``PreScheduling`` and ``Scheduled`` were removed upstream in 2023 (PR #574) and are deliberately not modelled.
"""

from __future__ import annotations

from enum import StrEnum

from gangplane.api.base import OpenModel
from gangplane.api.meta import ObjectMeta
from gangplane.api.quantity import ResourceList

GROUP = "scheduling.x-k8s.io"
API_VERSION = f"{GROUP}/v1alpha1"
POD_GROUP_KIND = "PodGroup"

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
"""Pod label naming the PodGroup (same namespace) the pod belongs to."""

LEGACY_POD_GROUP_LABEL = "pod-group.scheduling.sigs.k8s.io"
"""The membership label before scheduler-plugins commit ``23e980c0`` (2023-03); read-only compatibility."""

SCHEDULER_NAME = "scheduler-plugins-scheduler"
"""``spec.schedulerName`` of the profile that enables Coscheduling in the second-scheduler chart."""

DEFAULT_PERMIT_WAITING_TIME_SECONDS = 60
"""``CoschedulingArgs.permitWaitingTimeSeconds`` default; the Permit wait when a group sets no timeout."""

DEFAULT_POD_GROUP_BACKOFF_SECONDS = 0
DEFAULT_POD_GROUP_REJECT_PERCENTAGE = 10


class PodGroupPhase(StrEnum):
    """``status.phase``; the CRD has no enum. ``Finished`` and ``Failed`` are terminal in the controller."""

    PENDING = "Pending"
    SCHEDULING = "Scheduling"
    RUNNING = "Running"
    FINISHED = "Finished"
    FAILED = "Failed"
    UNKNOWN = "Unknown"  # defined upstream, never set


class PodGroupSpec(OpenModel):
    min_member: int | None = None
    min_resources: ResourceList | None = None
    schedule_timeout_seconds: int | None = None


class PodGroupStatus(OpenModel):
    phase: str | None = None
    occupied_by: str | None = None
    running: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    schedule_start_time: str | None = None


class PodGroup(OpenModel):
    api_version: str = API_VERSION
    kind: str = POD_GROUP_KIND
    metadata: ObjectMeta = ObjectMeta()
    spec: PodGroupSpec = PodGroupSpec()
    status: PodGroupStatus | None = None
