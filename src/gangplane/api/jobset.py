"""JobSet ``jobset.x-k8s.io/v1alpha2`` and the batch Job template it embeds (the parts gangplane reads).

Open models: everything else in a JobSet spec (failure policy rules, coordinator, ...) is kept verbatim.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gangplane.api.base import OpenModel
from gangplane.api.core import PodTemplateSpec
from gangplane.api.jobset_labels import COMPLETION_INDEX as COMPLETION_INDEX  # re-exported: labels live
from gangplane.api.jobset_labels import JOB_INDEX_LABEL as JOB_INDEX_LABEL  # in a module without models
from gangplane.api.jobset_labels import JOBSET_NAME_LABEL as JOBSET_NAME_LABEL
from gangplane.api.jobset_labels import REPLICATED_JOB_NAME_LABEL as REPLICATED_JOB_NAME_LABEL
from gangplane.api.meta import Condition, ObjectMeta

API_VERSION = "jobset.x-k8s.io/v1alpha2"


class JobSpec(OpenModel):
    parallelism: int | None = None
    completions: int | None = None
    completion_mode: str | None = None
    backoff_limit: int | None = None
    template: PodTemplateSpec = PodTemplateSpec()


class JobTemplateSpec(OpenModel):
    metadata: ObjectMeta | None = None
    spec: JobSpec = JobSpec()


class DependsOn(OpenModel):
    name: str
    status: str  # Ready | Complete


class ReplicatedJob(OpenModel):
    name: str
    group_name: str | None = None
    replicas: int | None = None
    depends_on: list[DependsOn] | None = None
    template: JobTemplateSpec = JobTemplateSpec()


class Network(OpenModel):
    enable_dns_hostnames: bool | None = Field(default=None, alias="enableDNSHostnames")
    subdomain: str | None = None
    publish_not_ready_addresses: bool | None = None


class JobSetSpec(OpenModel):
    replicated_jobs: list[ReplicatedJob] = []
    network: Network | None = None
    success_policy: dict[str, Any] | None = None
    failure_policy: dict[str, Any] | None = None
    startup_policy: dict[str, Any] | None = None
    suspend: bool | None = None
    managed_by: str | None = None
    ttl_seconds_after_finished: int | None = None


class ReplicatedJobStatus(OpenModel):
    name: str
    ready: int = 0
    succeeded: int = 0
    failed: int = 0
    active: int = 0
    suspended: int = 0


class JobSetStatus(OpenModel):
    conditions: list[Condition] | None = None
    replicated_jobs_status: list[ReplicatedJobStatus] | None = None
    restarts: int | None = None
    terminal_state: str | None = None


class JobSet(OpenModel):
    api_version: str = API_VERSION
    kind: str = "JobSet"
    metadata: ObjectMeta = ObjectMeta()
    spec: JobSetSpec = JobSetSpec()
    status: JobSetStatus | None = None
