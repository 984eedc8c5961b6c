"""JobSet -> the child Jobs and headless Service the JobSet controller creates (pure).

Names, labels and annotations follow ``sigs.k8s.io/jobset`` ``pkg/controllers/jobset_controller.go``
(``constructJob``, ``labelAndAnnotateObject``, ``createHeadlessSvcIfNecessary``). The JobSet webhook's defaults
(``pkg/webhooks/jobset_webhook.go`` ``Default``) are applied here at read time, because the embedded API server
stores JobSets as given: the controller must behave as if they had been defaulted.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from gangplane.api.jobset import (
    API_VERSION,
    JOB_INDEX_LABEL,
    JOBSET_NAME_LABEL,
    REPLICATED_JOB_NAME_LABEL,
)
from gangplane.controllers.objects import controller_ref, name_of, namespace_of, spec_of, status_of
from gangplane.store.base import Object

JOBSET_KIND = "JobSet"
REPLICATED_JOB_REPLICAS_LABEL = "jobset.sigs.k8s.io/replicatedjob-replicas"
GLOBAL_REPLICAS_LABEL = "jobset.sigs.k8s.io/global-replicas"
JOB_GLOBAL_INDEX_LABEL = "jobset.sigs.k8s.io/job-global-index"
JOB_KEY_LABEL = "jobset.sigs.k8s.io/job-key"
RESTART_ATTEMPT_LABEL = "jobset.sigs.k8s.io/restart-attempt"
COORDINATOR_KEY = "jobset.sigs.k8s.io/coordinator"
MANAGED_BY_JOBSET = "jobset.sigs.k8s.io/jobset-controller"


def defaulted(jobset: Object) -> Object:
    """A copy of ``jobset`` with the JobSet webhook's defaults filled in (the stored object is not changed)."""
    out = copy.deepcopy(jobset)
    spec = out.setdefault("spec", {})
    spec.setdefault("successPolicy", {"operator": "All"})
    spec.setdefault("startupPolicy", {"startupPolicyOrder": "AnyOrder"})
    network = spec.setdefault("network", {})
    network.setdefault("enableDNSHostnames", True)
    network.setdefault("publishNotReadyAddresses", True)
    for rjob in spec.setdefault("replicatedJobs", []):
        rjob.setdefault("replicas", 1)
        job_spec = rjob.setdefault("template", {}).setdefault("spec", {})
        job_spec.setdefault("completionMode", "Indexed")
        pod_spec = job_spec.setdefault("template", {}).setdefault("spec", {})
        pod_spec.setdefault("restartPolicy", "OnFailure")
    return out


def replicated_jobs(jobset: Object) -> list[dict[str, Any]]:
    return list(spec_of(jobset).get("replicatedJobs") or [])


def replicas_of(rjob: dict[str, Any]) -> int:
    return int(rjob.get("replicas", 1))


def job_name(jobset_name: str, rjob_name: str, index: int) -> str:
    """``placement.GenJobName``: ``<jobset>-<replicatedJob>-<jobIndex>``."""
    return f"{jobset_name}-{rjob_name}-{index}"


def subdomain(jobset: Object) -> str:
    """``GetSubdomain``: ``network.subdomain``, else the JobSet name."""
    return str((spec_of(jobset).get("network") or {}).get("subdomain") or name_of(jobset))


def dns_hostnames_enabled(jobset: Object) -> bool:
    return bool((spec_of(jobset).get("network") or {}).get("enableDNSHostnames"))


def suspended(jobset: Object) -> bool:
    return bool(spec_of(jobset).get("suspend"))


def restarts(jobset: Object) -> int:
    return int(status_of(jobset).get("restarts") or 0)


def job_key(namespace: str, name: str) -> str:
    """``jobHashKey``: SHA1 of ``<namespace>/<jobName>`` as 40 hex characters."""
    return hashlib.sha1(f"{namespace}/{name}".encode()).hexdigest()


def _global_replicas(jobset: Object) -> int:
    return sum(replicas_of(r) for r in replicated_jobs(jobset))


def _global_index(jobset: Object, rjob_name: str, index: int) -> str:
    seen = 0
    for rjob in replicated_jobs(jobset):
        if rjob.get("name") == rjob_name:
            return str(seen + index)
        seen += replicas_of(rjob)
    return ""


def _coordinator(jobset: Object) -> str | None:
    coordinator = spec_of(jobset).get("coordinator")
    if not isinstance(coordinator, dict):
        return None
    rjob, job_index, pod_index = (
        coordinator.get("replicatedJob"),
        coordinator.get("jobIndex", 0),
        coordinator.get("podIndex", 0),
    )
    return f"{name_of(jobset)}-{rjob}-{job_index}-{pod_index}.{subdomain(jobset)}"


def jobset_keys(jobset: Object, rjob: dict[str, Any], index: int) -> dict[str, str]:
    """The labels JobSet puts on a child Job and its pod template; the same keys are also annotations."""
    name = job_name(name_of(jobset), rjob["name"], index)
    keys = {
        JOBSET_NAME_LABEL: name_of(jobset),
        REPLICATED_JOB_NAME_LABEL: str(rjob["name"]),
        RESTART_ATTEMPT_LABEL: str(restarts(jobset)),
        REPLICATED_JOB_REPLICAS_LABEL: str(replicas_of(rjob)),
        GLOBAL_REPLICAS_LABEL: str(_global_replicas(jobset)),
        JOB_INDEX_LABEL: str(index),
        JOB_KEY_LABEL: job_key(namespace_of(jobset), name),
        JOB_GLOBAL_INDEX_LABEL: _global_index(jobset, str(rjob["name"]), index),
    }
    coordinator = _coordinator(jobset)
    if coordinator is not None:
        keys[COORDINATOR_KEY] = coordinator
    return keys


def _stamp(meta: dict[str, Any], keys: dict[str, str]) -> None:
    meta["labels"] = {**(meta.get("labels") or {}), **keys}
    meta["annotations"] = {**(meta.get("annotations") or {}), **keys}


def build_job(jobset: Object, rjob: dict[str, Any], index: int) -> Object:
    """``constructJob``: one child Job of a (defaulted) JobSet, owned by it, suspended iff the JobSet is."""
    template = copy.deepcopy(rjob.get("template") or {})
    template_meta = template.get("metadata") or {}
    keys = jobset_keys(jobset, rjob, index)
    metadata: dict[str, Any] = {
        "name": job_name(name_of(jobset), rjob["name"], index),
        "namespace": namespace_of(jobset),
        "labels": dict(template_meta.get("labels") or {}),
        "annotations": dict(template_meta.get("annotations") or {}),
        "ownerReferences": [controller_ref(jobset)],
    }
    _stamp(metadata, keys)
    job_spec = template.get("spec") or {}
    pod = job_spec.setdefault("template", {})
    _stamp(pod.setdefault("metadata", {}), keys)
    if dns_hostnames_enabled(jobset):
        pod.setdefault("spec", {})["subdomain"] = subdomain(jobset)
    job_spec["suspend"] = suspended(jobset)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": job_spec}


def headless_service(jobset: Object) -> Object:
    """The Service that gives every pod of the JobSet a DNS name ``<hostname>.<subdomain>``."""
    network = spec_of(jobset).get("network") or {}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": subdomain(jobset),
            "namespace": namespace_of(jobset),
            "ownerReferences": [controller_ref(jobset)],
        },
        "spec": {
            "clusterIP": "None",
            "selector": {JOBSET_NAME_LABEL: name_of(jobset)},
            "publishNotReadyAddresses": network.get("publishNotReadyAddresses", True),
        },
    }


def resumed_template(job: Object, rjob: dict[str, Any]) -> dict[str, Any]:
    """``resumeJob``: the Job's pod template with the fields Kueue may change on a suspended JobSet (labels,
    annotations, nodeSelector, tolerations, schedulingGates) merged in from the replicated job's template."""
    template = copy.deepcopy(spec_of(job).get("template") or {})
    source = (rjob.get("template") or {}).get("spec", {}).get("template") or {}
    meta, source_meta = template.setdefault("metadata", {}), source.get("metadata") or {}
    for field in ("labels", "annotations"):
        meta[field] = {**(meta.get(field) or {}), **(source_meta.get(field) or {})}
    pod, source_pod = template.setdefault("spec", {}), source.get("spec") or {}
    if source_pod.get("nodeSelector") or pod.get("nodeSelector"):
        pod["nodeSelector"] = {**(pod.get("nodeSelector") or {}), **(source_pod.get("nodeSelector") or {})}
    for field in ("tolerations", "schedulingGates"):
        merged = list(pod.get(field) or [])
        merged += [item for item in source_pod.get(field) or [] if item not in merged]
        if merged:
            pod[field] = merged
    return template


__all__ = [
    "API_VERSION",
    "build_job",
    "defaulted",
    "headless_service",
    "job_name",
    "jobset_keys",
    "resumed_template",
    "subdomain",
]
