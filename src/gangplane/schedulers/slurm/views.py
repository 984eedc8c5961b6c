"""Store objects (plain camelCase dicts) as the Slurm Bridge core's views. Pure: no store, no Slurm.

Which pods are managed: ``spec.schedulerName == slurm-bridge-scheduler``. A pod's group is its coscheduling
PodGroup (label ``scheduling.x-k8s.io/pod-group``, or the legacy key) in the same namespace. A gangplane Node
maps to the Slurm node named by its ``slinky.slurm.net/slurm-nodename`` label, else to the Slurm node of the
same name (slurm-bridge ``docs/config.md``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from pydantic import ValidationError

from gangplane.api.core import PodSpec
from gangplane.api.scheduling import coscheduling, slurm
from gangplane.clock import parse_rfc3339
from gangplane.runtime.requests import pod_request_amounts
from gangplane.schedulers.slurm.cli import SlurmJob, SlurmNode
from gangplane.schedulers.slurm.model import (
    CONDITION_TYPE,
    DISRUPTION_TARGET,
    POD_FINALIZER,
    POD_GROUP_JOB_ANNOTATION,
    POD_SCHEDULED,
    BridgeView,
    ConditionView,
    GroupView,
    PodView,
    Ref,
    Rejection,
)
from gangplane.schedulers.slurm.spec import GPU_RESOURCES

Object = Mapping[str, Any]


def _meta(obj: Object) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def ref_of(obj: Object) -> Ref:
    meta = _meta(obj)
    return Ref(str(meta.get("namespace") or ""), str(meta.get("name") or ""), str(meta.get("uid") or ""))


def is_managed(pod: Object) -> bool:
    return (pod.get("spec") or {}).get("schedulerName") == slurm.SCHEDULER_NAME


def pod_group_of(pod: Object) -> str:
    labels = _meta(pod).get("labels") or {}
    return str(
        labels.get(coscheduling.POD_GROUP_LABEL) or labels.get(coscheduling.LEGACY_POD_GROUP_LABEL) or ""
    )


def _job_id(value: Any) -> int | None:
    text = str(value or "")
    return int(text) if text.isdigit() else None


def find_condition(obj: Object, type_: str) -> ConditionView | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == type_:
            return ConditionView(
                str(cond.get("status")), str(cond.get("reason") or ""), str(cond.get("message") or "")
            )
    return None


def _transition_time(obj: Object, type_: str) -> float | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == type_ and cond.get("lastTransitionTime"):
            try:
                return parse_rfc3339(str(cond["lastTransitionTime"]))
            except ValueError:
                return None
    return None


def _requests(pod: Object) -> dict[str, Decimal]:
    try:
        return pod_request_amounts(PodSpec.model_validate(pod.get("spec") or {}))
    except ValidationError:  # not a pod the API server would have admitted; ask Slurm for nothing
        return {}


def pod_view(pod: Object) -> PodView:
    spec, meta = pod.get("spec") or {}, _meta(pod)
    requests = _requests(pod)
    return PodView(
        ref=ref_of(pod),
        phase=str((pod.get("status") or {}).get("phase") or "Pending"),
        node_name=str(spec.get("nodeName") or ""),
        terminating=bool(meta.get("deletionTimestamp")),
        cpu_millis=math.ceil(requests.get("cpu", Decimal(0)) * 1000),
        memory_bytes=math.ceil(requests.get("memory", Decimal(0))),
        gpus=math.ceil(max((requests.get(name, Decimal(0)) for name in GPU_RESOURCES), default=Decimal(0))),
        job_id=_job_id((meta.get("labels") or {}).get(slurm.SLURM_JOB_ID_LABEL)),
        scheduled=find_condition(pod, POD_SCHEDULED),
        held=POD_FINALIZER in (meta.get("finalizers") or ()),
        disrupted_at=_transition_time(pod, DISRUPTION_TARGET),
    )


def group_view(group: Object, pods: Sequence[PodView]) -> GroupView:
    meta = _meta(group)
    annotations = {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}
    return GroupView(
        ref=ref_of(group),
        min_member=int((group.get("spec") or {}).get("minMember") or 0),
        pods=tuple(sorted(pods, key=lambda p: p.ref.name)),
        annotations=annotations,
        job_id=_job_id(annotations.get(POD_GROUP_JOB_ANNOTATION)),
        condition=find_condition(group, CONDITION_TYPE),
        deleting=bool(meta.get("deletionTimestamp")),
    )


def node_names(nodes: Iterable[Object]) -> dict[str, str]:
    """Slurm node name -> gangplane Node name; with two Nodes claiming one Slurm node, the first by name."""
    mapping: dict[str, str] = {}
    for node in sorted(nodes, key=lambda n: str(_meta(n).get("name") or "")):
        name = str(_meta(node).get("name") or "")
        slurm_name = str((_meta(node).get("labels") or {}).get(slurm.SLURM_NODE_NAME_LABEL) or name)
        mapping.setdefault(slurm_name, name)
    return mapping


def bridge_view(
    pods: Iterable[Object],
    groups: Iterable[Object],
    nodes: Iterable[Object],
    jobs: Sequence[SlurmJob],
    slurm_nodes: Sequence[SlurmNode],
    *,
    rejections: Mapping[str, Rejection] | None = None,
    default_partition: str = slurm.DEFAULT_PARTITION,
    now: float = 0.0,
    user: str = "",
) -> BridgeView:
    """One cycle's view: managed pods joined to their PodGroups, Nodes mapped to Slurm names."""
    by_group: dict[tuple[str, str], list[PodView]] = {}
    for pod in pods:
        if is_managed(pod):
            view = pod_view(pod)
            by_group.setdefault((view.ref.namespace, pod_group_of(pod)), []).append(view)
    group_views = []
    for group in groups:
        ref = ref_of(group)
        group_views.append(group_view(group, by_group.pop((ref.namespace, ref.name), [])))
    return BridgeView(
        groups=tuple(group_views),
        loose_pods=tuple(p for views in by_group.values() for p in views),
        jobs=tuple(jobs),
        slurm_nodes=tuple(slurm_nodes),
        node_names=node_names(nodes),
        rejections=dict(rejections or {}),
        default_partition=default_partition,
        now=now,
        user=user,
    )


__all__ = [
    "bridge_view",
    "find_condition",
    "group_view",
    "is_managed",
    "node_names",
    "pod_group_of",
    "pod_view",
    "ref_of",
]
