"""batch/v1 Job -> Pods: defaults, pod construction and the pod failure policy (pure).

The API server defaults a Job (``pkg/apis/batch/v1/defaults.go`` and the generated selector in
``pkg/registry/batch/job/strategy.go``): ``parallelism`` 1, ``backoffLimit`` 6, ``completionMode``
NonIndexed, and the ``batch.kubernetes.io/controller-uid`` / ``job-name`` labels on the pod template. The
embedded store keeps Jobs as given, so ``defaulted_job`` applies those defaults when the controller reads one.
Pods are built as ``pkg/controller/job`` does: ``generateName`` ``<job>-<index>-`` (Indexed) or ``<job>-``,
hostname ``<job>-<index>``, the completion index as annotation, label and ``JOB_COMPLETION_INDEX`` env.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from gangplane.api.jobset import COMPLETION_INDEX
from gangplane.controllers.objects import (
    controller_ref,
    meta,
    name_of,
    namespace_of,
    spec_of,
    status_of,
    uid_of,
)
from gangplane.store.base import Object

CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
# ``MaxPodCreateDeletePerSync``: pods one pass of ``manageJob`` creates, or deletes, at most; the pod events
# of those requeue the Job for the rest
MAX_POD_CREATE_DELETE_PER_SYNC = 500
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"  # held until the pod is counted (job_tracking.py)
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
DEFAULT_BACKOFF_LIMIT = 6
MAX_INT32 = 2**31 - 1


def selector_labels(job: Object) -> dict[str, str]:
    """The labels the API server adds to a Job's pod template (and selects its pods by)."""
    return {
        CONTROLLER_UID_LABEL: uid_of(job),
        JOB_NAME_LABEL: name_of(job),
        LEGACY_CONTROLLER_UID_LABEL: uid_of(job),
        LEGACY_JOB_NAME_LABEL: name_of(job),
    }


def defaulted_job(job: Object) -> Object:
    out = copy.deepcopy(job)
    spec = out.setdefault("spec", {})
    spec.setdefault("parallelism", 1)
    spec.setdefault("completionMode", "NonIndexed")
    # With ``backoffLimitPerIndex`` the Job-wide limit defaults to MaxInt32 (``SetDefaults_Job``).
    per_index = spec.get("backoffLimitPerIndex") is not None
    spec.setdefault("backoffLimit", MAX_INT32 if per_index else DEFAULT_BACKOFF_LIMIT)
    if (
        spec["completionMode"] == "NonIndexed"
        and spec.get("completions") is None
        and spec["parallelism"] == 1
    ):
        spec["completions"] = 1  # a single-pod Job completes once its pod succeeds
    template = spec.setdefault("template", {})
    template_meta = template.setdefault("metadata", {})
    template_meta["labels"] = {**(template_meta.get("labels") or {}), **selector_labels(out)}
    spec.setdefault("selector", {"matchLabels": {CONTROLLER_UID_LABEL: uid_of(out)}})
    return out


def indexed(job: Object) -> bool:
    return spec_of(job).get("completionMode") == "Indexed"


def pod_index(pod: Object) -> int | None:
    """The completion index from the pod's annotation (the label may be absent on older pods)."""
    value = (meta(pod).get("annotations") or {}).get(COMPLETION_INDEX)
    return int(value) if isinstance(value, str) and value.isdigit() else None


def parse_indexes(text: str) -> set[int]:
    """``completedIndexes`` ("1,3-5") -> {1, 3, 4, 5}."""
    out: set[int] = set()
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        out.update(range(int(first), int(last or first) + 1))
    return out


def format_indexes(indexes: set[int]) -> str:
    """The compressed interval form Kubernetes writes: a run of three or more becomes ``a-b``, a pair stays
    ``a,b`` (``orderedIntervals.String`` in ``pkg/controller/job/indexed_job_utils.go``)."""
    runs: list[list[int]] = []
    for i in sorted(indexes):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}{',' if b == a + 1 else '-'}{b}" for a, b in runs)


def _with_index_env(container: dict[str, Any]) -> None:
    env = list(container.get("env") or [])
    if not any(e.get("name") == COMPLETION_INDEX_ENV for e in env):
        field_path = f"metadata.annotations['{COMPLETION_INDEX}']"
        env.append({"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {"fieldPath": field_path}}})
    container["env"] = env


def build_pod(job: Object, index: int | None) -> Object:
    """One pod of a (defaulted) Job; ``index`` is its completion index when the Job is Indexed."""
    template = copy.deepcopy(spec_of(job).get("template") or {})
    template_meta = template.get("metadata") or {}
    labels = dict(template_meta.get("labels") or {})
    annotations = dict(template_meta.get("annotations") or {})
    pod_spec = template.get("spec") or {}
    prefix = f"{name_of(job)}-"
    if index is not None:
        prefix = f"{name_of(job)}-{index}-"
        labels[COMPLETION_INDEX] = annotations[COMPLETION_INDEX] = str(index)
        pod_spec.setdefault("hostname", f"{name_of(job)}-{index}")
        for container in [*(pod_spec.get("initContainers") or []), *(pod_spec.get("containers") or [])]:
            _with_index_env(container)
    metadata: dict[str, Any] = {
        "generateName": prefix,
        "namespace": namespace_of(job),
        "labels": labels,
        "ownerReferences": [controller_ref({**job, "apiVersion": "batch/v1", "kind": "Job"})],
        "finalizers": [TRACKING_FINALIZER],
    }
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}


def phase(pod: Object) -> str:
    return str(status_of(pod).get("phase") or "Pending")


def pod_ready(pod: Object) -> bool:
    conditions = status_of(pod).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


@dataclass(frozen=True)
class FailureMatch:
    """The first pod failure policy rule a failed pod matches: its action and the Failed-condition message."""

    action: str
    message: str


def _exit_codes(pod: Object) -> list[tuple[str, int]]:
    status = status_of(pod)
    out = []
    for cs in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        terminated = (cs.get("state") or {}).get("terminated") or {}
        if "exitCode" in terminated:
            out.append((str(cs.get("name", "")), int(terminated["exitCode"])))
    return out


def _exit_code_hit(rule: dict[str, Any], pod: Object) -> tuple[str, int] | None:
    wanted = rule["onExitCodes"]
    values, operator, only = (
        set(wanted.get("values") or []),
        wanted.get("operator"),
        wanted.get("containerName"),
    )
    for name, code in _exit_codes(pod):
        if only and name != only:
            continue
        if (operator == "In" and code in values) or (
            operator == "NotIn" and code != 0 and code not in values
        ):
            return name, code
    return None


def _condition_hit(rule: dict[str, Any], pod: Object) -> str | None:
    present = {(c.get("type"), c.get("status")) for c in status_of(pod).get("conditions") or []}
    for wanted in rule.get("onPodConditions") or []:
        if (wanted.get("type"), wanted.get("status", "True")) in present:
            return str(wanted.get("type"))
    return None


def match_failure_policy(job: Object, pod: Object) -> FailureMatch | None:
    """``matchPodFailurePolicy``: the first rule of ``spec.podFailurePolicy`` the failed ``pod`` matches."""
    rules = (spec_of(job).get("podFailurePolicy") or {}).get("rules") or []
    where = f"{namespace_of(pod)}/{name_of(pod)}"
    for i, rule in enumerate(rules):
        action = str(rule.get("action"))
        if rule.get("onExitCodes"):
            hit = _exit_code_hit(rule, pod)
            if hit is not None:
                text = f"Container {hit[0]} for pod {where} failed with exit code {hit[1]} matching {action} rule"
                return FailureMatch(action, f"{text} at index {i}")
        elif (cond := _condition_hit(rule, pod)) is not None:
            return FailureMatch(
                action, f"Pod {where} has condition {cond} matching {action} rule at index {i}"
            )
    return None


def only_replace_failed(job: Object) -> bool:
    """``podReplacementPolicy``: ``Failed`` (the default with a pod failure policy) waits for a terminating
    pod to end before replacing it; ``TerminatingOrFailed`` replaces it at once."""
    spec = spec_of(job)
    default = "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
    return bool(spec.get("podReplacementPolicy", default) == "Failed")
