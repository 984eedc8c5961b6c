"""Scheduler-facing values of nodes and pods, converted once from Kubernetes wire dicts.

``node_info`` and ``pod_info`` are pure: the same dict gives the same value. Everything a fit check needs is
extracted here so that the snapshot and the fit functions never touch a dict again. Nothing here performs I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gangplane.clock import parse_rfc3339
from gangplane.schedulers.core.resources import ResourceIndex, Vector, amounts

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
DEFAULT_SCHEDULER = "default-scheduler"
NEVER = "Never"  # ``spec.preemptionPolicy`` of a pod that must never preempt others
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
BROKEN_INPUT = (ValueError, TypeError, KeyError, AttributeError)
"""What converting a malformed wire dict raises; callers catch it per object so one bad object stays alone."""

GroupKey = Callable[[Mapping[str, Any]], "str | None"]
"""Maps a pod dict to its gang key ``"<namespace>/<group name>"``, or ``None`` for a pod outside any gang."""


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal | Exists
    value: str = ""
    effect: str = ""  # "" matches every effect

    def tolerates(self, taint: Taint) -> bool:
        """``v1.Toleration.ToleratesTaint``: an empty key with ``Exists`` tolerates everything."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return bool(self.key) and self.value == taint.value


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``matchExpressions`` entry of a node selector term: In | NotIn | Exists | DoesNotExist | Gt | Lt."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeInfo:
    name: str
    allocatable: Mapping[str, int]  # integer amounts (resources.amounts)
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False


@dataclass(frozen=True, slots=True, eq=False)
class PodInfo:
    """A pod as schedulers see it. ``requests`` is the effective request row (``pods`` slot = 1).

    ``affinity`` holds the required node-affinity terms: the pod fits a node that matches *any* term, and a
    term matches when *all* its requirements do (``nodeSelectorTerms`` semantics); empty = no constraint.
    """

    key: str  # "<namespace>/<name>"
    namespace: str
    name: str
    uid: str
    requests: Vector
    priority: int = 0
    scheduler_name: str = DEFAULT_SCHEDULER
    group: str | None = None
    created: float = 0.0
    node_name: str = ""
    phase: str = "Pending"
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: tuple[tuple[Requirement, ...], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    gated: bool = False  # spec.schedulingGates is non-empty: not yet schedulable
    terminating: bool = False  # metadata.deletionTimestamp is set: still counted, going away
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    priority_class_name: str = ""
    preemption_policy: str = "PreemptLowerPriority"
    claims: tuple[str, ...] = ()  # the PersistentVolumeClaims its volumes name (VolumeBinding reads them)

    @property
    def constraints(self) -> tuple[object, ...]:
        """Everything besides requests that decides fit; pods with equal constraints share one node mask."""
        return (tuple(sorted(self.node_selector.items())), self.affinity, self.tolerations)


def no_group(pod: Mapping[str, Any]) -> str | None:
    return None


def pod_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


def _status_taints(obj: Mapping[str, Any]) -> tuple[Taint, ...]:
    """The taints the node lifecycle controller adds for a Ready condition that is False or Unknown."""
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready" and cond.get("status") == "False":
            return (Taint(NOT_READY_TAINT, "", NO_SCHEDULE),)
        if cond.get("type") == "Ready" and cond.get("status") == "Unknown":
            return (Taint(UNREACHABLE_TAINT, "", NO_SCHEDULE),)
    return ()


def node_info(obj: Mapping[str, Any]) -> NodeInfo:
    """A Node dict as a ``NodeInfo``; a node without a Ready condition counts as ready."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    taints = tuple(
        Taint(t["key"], str(t.get("value") or ""), t.get("effect") or NO_SCHEDULE)
        for t in spec.get("taints") or ()
    )
    return NodeInfo(
        name=obj["metadata"]["name"],
        allocatable=amounts(status.get("allocatable") or status.get("capacity") or {}),
        labels=dict((obj.get("metadata") or {}).get("labels") or {}),
        taints=taints + _status_taints(obj),
        unschedulable=bool(spec.get("unschedulable")),
    )


def _container_requests(container: Mapping[str, Any]) -> dict[str, int]:
    return amounts(((container.get("resources") or {}).get("requests")) or {})


def _add(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    return {name: a.get(name, 0) + b.get(name, 0) for name in a.keys() | b.keys()}


def _max(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    return {name: max(a.get(name, 0), b.get(name, 0)) for name in a.keys() | b.keys()}


def effective_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """The pod's effective request, as kube-scheduler computes it (same rule as ``runtime.requests``):
    ``max(sum(containers) + sidecars, max over init containers of (init + sidecars started before it))``
    plus ``overhead``; resources given only under ``limits`` count nothing."""
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for init in spec.get("initContainers") or ():
        if init.get("restartPolicy") == "Always":
            sidecars = _add(sidecars, _container_requests(init))
        else:
            init_peak = _max(init_peak, _add(_container_requests(init), sidecars))
    regular: dict[str, int] = {}
    for container in spec.get("containers") or ():
        regular = _add(regular, _container_requests(container))
    return _add(_max(_add(regular, sidecars), init_peak), amounts(spec.get("overhead") or {}))


def _requirements(term: Mapping[str, Any]) -> tuple[Requirement, ...]:
    return tuple(
        Requirement(e["key"], e["operator"], tuple(str(v) for v in e.get("values") or ()))
        for e in term.get("matchExpressions") or ()
    )


def required_affinity(spec: Mapping[str, Any]) -> tuple[tuple[Requirement, ...], ...]:
    """``requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`` (matchFields are not modelled)."""
    node_affinity = ((spec.get("affinity") or {}).get("nodeAffinity")) or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    return tuple(_requirements(term) for term in required.get("nodeSelectorTerms") or ())


def _tolerations(spec: Mapping[str, Any]) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(
            t.get("key") or "", t.get("operator") or "Equal", str(t.get("value") or ""), t.get("effect") or ""
        )
        for t in spec.get("tolerations") or ()
    )


def _created(meta: Mapping[str, Any]) -> float:
    stamp = meta.get("creationTimestamp")
    return parse_rfc3339(stamp) if stamp else 0.0


def pod_info(
    obj: Mapping[str, Any],
    index: ResourceIndex,
    *,
    group_of: GroupKey = no_group,
    requests: Mapping[str, int] | None = None,
) -> PodInfo:
    """A Pod dict as a ``PodInfo`` over ``index`` (``KeyError`` if it requests a resource outside it).

    ``requests`` may pass the pod's ``effective_requests`` when the caller computed them already."""
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    if requests is None:
        requests = effective_requests(spec)
    return PodInfo(
        key=pod_key(obj),
        namespace=meta.get("namespace") or "default",
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        requests=index.pod_vector(requests),
        priority=int(spec.get("priority") or 0),
        scheduler_name=spec.get("schedulerName") or DEFAULT_SCHEDULER,
        group=group_of(obj),
        created=_created(meta),
        node_name=spec.get("nodeName") or "",
        phase=(obj.get("status") or {}).get("phase") or "Pending",
        node_selector=dict(spec.get("nodeSelector") or {}),
        affinity=required_affinity(spec),
        tolerations=_tolerations(spec),
        gated=bool(spec.get("schedulingGates")),
        terminating=bool(meta.get("deletionTimestamp")),
        labels=dict(meta.get("labels") or {}),
        annotations=dict(meta.get("annotations") or {}),
        priority_class_name=spec.get("priorityClassName") or "",
        preemption_policy=spec.get("preemptionPolicy") or "PreemptLowerPriority",
        claims=_claims(spec),
    )


def _claims(spec: Mapping[str, Any]) -> tuple[str, ...]:
    volumes = spec.get("volumes") or ()
    return tuple(
        str(v["persistentVolumeClaim"].get("claimName") or "")
        for v in volumes
        if v.get("persistentVolumeClaim")
    )


def is_terminal(obj: Mapping[str, Any]) -> bool:
    return (obj.get("status") or {}).get("phase") in TERMINAL_PHASES
