"""Node fit, vectorised over all nodes: resources, nodeSelector, required node affinity, taints and
cordons — kube-scheduler's NodeResourcesFit, NodeAffinity, TaintToleration and NodeUnschedulable filters.

Static parts (labels, taints, cordons) are cached on the snapshot per distinct pod constraint set, so a gang of
identical pods pays for them once. ``explain`` reproduces kube-scheduler's "why pending" text, counting each
node under the first filter that rejects it, in the upstream filter order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from gangplane.schedulers.core.objects import (
    NO_EXECUTE,
    NO_SCHEDULE,
    UNSCHEDULABLE_TAINT,
    PodInfo,
    Requirement,
    Taint,
    Toleration,
)
from gangplane.schedulers.core.resources import PODS, Vector
from gangplane.schedulers.core.snapshot import Snapshot

Mask = npt.NDArray[np.bool_]

UNSCHEDULABLE_REASON = "node(s) were unschedulable"
AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"
TOO_MANY_PODS_REASON = "Too many pods"


def _taint_reason(taint: Taint) -> str:
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


def insufficient_reason(resource: str) -> str:
    return TOO_MANY_PODS_REASON if resource == PODS else f"Insufficient {resource}"


@dataclass(frozen=True, slots=True)
class FitCounts:
    """How many nodes a pod fits, and how many each reason rejected (a node may count under several
    ``Insufficient`` reasons, as upstream)."""

    total: int
    feasible: int
    reasons: Mapping[str, int] = field(default_factory=dict)

    def message(self) -> str:
        """kube-scheduler's text: ``0/8 nodes are available: 3 Insufficient nvidia.com/gpu, 5 ... .``"""
        parts = sorted(f"{count} {reason}" for reason, count in self.reasons.items())
        tail = ": " + ", ".join(parts) if parts else ""
        return f"{self.feasible}/{self.total} nodes are available{tail}."


def _label_values(snapshot: Snapshot, key: str) -> tuple[npt.NDArray[np.object_], Mask]:
    """Each node's value for label ``key`` ("" when absent) and whether the node has the label; cached."""
    cache_key = ("label", key)
    if cache_key not in snapshot.cache:
        values = np.array([node.labels.get(key, "") for node in snapshot.nodes], dtype=object)
        present = np.array([key in node.labels for node in snapshot.nodes], dtype=bool)
        snapshot.cache[cache_key] = (values, present)
    found: tuple[npt.NDArray[np.object_], Mask] = snapshot.cache[cache_key]
    return found


def _as_int(text: object) -> float:
    try:
        return int(str(text))
    except ValueError:
        return float("nan")


def requirement_mask(snapshot: Snapshot, req: Requirement) -> Mask:
    """Nodes whose labels satisfy one requirement (``NotIn`` and ``DoesNotExist`` match absent labels)."""
    values, present = _label_values(snapshot, req.key)
    if req.operator in ("In", "NotIn"):
        hit = np.isin(values, np.array(req.values, dtype=object)) & present
        return hit if req.operator == "In" else ~hit
    if req.operator in ("Exists", "DoesNotExist"):
        return present if req.operator == "Exists" else ~present
    if req.operator in ("Gt", "Lt") and len(req.values) == 1:
        numbers = np.array([_as_int(v) if p else float("nan") for v, p in zip(values, present, strict=True)])
        bound = _as_int(req.values[0])
        with np.errstate(invalid="ignore"):
            return numbers > bound if req.operator == "Gt" else numbers < bound
    return np.zeros(len(snapshot), dtype=bool)


def _term_mask(snapshot: Snapshot, term: tuple[Requirement, ...]) -> Mask:
    if not term:  # an empty term matches no node (upstream nodeaffinity)
        return np.zeros(len(snapshot), dtype=bool)
    mask = np.ones(len(snapshot), dtype=bool)
    for req in term:
        mask &= requirement_mask(snapshot, req)
    return mask


def selector_mask(snapshot: Snapshot, pod: PodInfo) -> Mask:
    """nodeSelector AND (any required affinity term)."""
    mask = np.ones(len(snapshot), dtype=bool)
    for key, value in pod.node_selector.items():
        mask &= requirement_mask(snapshot, Requirement(key, "In", (value,)))
    if pod.affinity:
        mask &= np.logical_or.reduce([_term_mask(snapshot, term) for term in pod.affinity])
    return mask


def _hard_taints(snapshot: Snapshot) -> dict[Taint, Mask]:
    """Every NoSchedule / NoExecute taint in the cluster with the nodes carrying it, in first-seen order."""
    if "taints" not in snapshot.cache:
        found: dict[Taint, Mask] = {}
        for i, node in enumerate(snapshot.nodes):
            for taint in node.taints:
                if taint.effect in (NO_SCHEDULE, NO_EXECUTE):
                    found.setdefault(taint, np.zeros(len(snapshot), dtype=bool))[i] = True
        snapshot.cache["taints"] = found
    taints: dict[Taint, Mask] = snapshot.cache["taints"]
    return taints


def _tolerated(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


def _cordoned(snapshot: Snapshot, pod: PodInfo) -> Mask:
    if _tolerated(pod.tolerations, Taint(UNSCHEDULABLE_TAINT, "", NO_SCHEDULE)):
        return np.zeros(len(snapshot), dtype=bool)
    if "cordoned" not in snapshot.cache:
        snapshot.cache["cordoned"] = np.array([node.unschedulable for node in snapshot.nodes], dtype=bool)
    cordoned: Mask = snapshot.cache["cordoned"]
    return cordoned


def _untolerated(snapshot: Snapshot, pod: PodInfo) -> list[tuple[Taint, Mask]]:
    return [(t, nodes) for t, nodes in _hard_taints(snapshot).items() if not _tolerated(pod.tolerations, t)]


def static_mask(snapshot: Snapshot, pod: PodInfo) -> Mask:
    """Nodes the pod may use regardless of free capacity; cached per constraint set (read-only array)."""
    key = ("static", pod.constraints)
    if key not in snapshot.cache:
        mask = selector_mask(snapshot, pod) & ~_cordoned(snapshot, pod)
        for _, nodes in _untolerated(snapshot, pod):
            mask &= ~nodes
        mask.flags.writeable = False
        snapshot.cache[key] = mask
    found: Mask = snapshot.cache[key]
    return found


def resource_mask(snapshot: Snapshot, requests: Vector) -> Mask:
    """Nodes with room for ``requests`` now (only requested columns are compared)."""
    cols = np.flatnonzero(requests)
    free = snapshot.allocatable[:, cols] - snapshot.requested[:, cols]
    fits: Mask = np.all(free >= requests[cols], axis=1)
    return fits


def feasible(snapshot: Snapshot, pod: PodInfo) -> Mask:
    """Nodes the pod fits on now."""
    return static_mask(snapshot, pod) & resource_mask(snapshot, pod.requests)


def explain(snapshot: Snapshot, pod: PodInfo) -> FitCounts:
    """Per-reason node counts in filter order: cordon, taints, affinity/selector, then resources."""
    reasons: Counter[str] = Counter()
    left = np.ones(len(snapshot), dtype=bool)
    cordoned = _cordoned(snapshot, pod) & left
    reasons[UNSCHEDULABLE_REASON] += int(cordoned.sum())
    left &= ~cordoned
    for taint, nodes in _untolerated(snapshot, pod):
        hit = nodes & left
        reasons[_taint_reason(taint)] += int(hit.sum())
        left &= ~hit
    mismatch = ~selector_mask(snapshot, pod) & left
    reasons[AFFINITY_REASON] += int(mismatch.sum())
    left &= ~mismatch
    free = snapshot.free()
    for col in np.flatnonzero(pod.requests):
        short = left & (free[:, col] < pod.requests[col])
        reasons[insufficient_reason(snapshot.index.names[col])] += int(short.sum())
    fits = left & resource_mask(snapshot, pod.requests)
    return FitCounts(len(snapshot), int(fits.sum()), {r: n for r, n in reasons.items() if n})


__all__ = [
    "AFFINITY_REASON",
    "TOO_MANY_PODS_REASON",
    "UNSCHEDULABLE_REASON",
    "FitCounts",
    "Mask",
    "explain",
    "feasible",
    "insufficient_reason",
    "requirement_mask",
    "resource_mask",
    "selector_mask",
    "static_mask",
]
