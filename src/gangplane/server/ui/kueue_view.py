"""Kueue's ClusterQueues and Cohorts as a tree of rows: nominal, used, borrowed and lent per flavor and
resource, fair-share weights, admitted and pending workloads. Pure.

Usage is rebuilt the way the embedded Kueue keeps it: the cohort tree of ``schedulers/kueue/quota.py`` with
the ``status.admission`` of every Workload holding quota added in. ``borrowed`` is usage above the node's
nominal quota (``flavorsUsage.borrowed`` upstream). Kueue records no lender for borrowed quota, so ``lent``
attributes a cohort's borrowing to its members' unused lendable quota in name order (docs/dashboard.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gangplane.api.scheduling import kueue_workload as kw
from gangplane.schedulers.kueue.convert import assignment_from_admission, cluster_queue_spec, cohort_spec
from gangplane.schedulers.kueue.model import FlavorResource, format_amount
from gangplane.schedulers.kueue.quota import QuotaNode, QuotaTree
from gangplane.server.ui import facts
from gangplane.store.base import Object


@dataclass(frozen=True, slots=True)
class FlavorUsage:
    flavor: str
    resource: str
    nominal: int
    used: int
    borrowed: int
    lent: int

    @property
    def percent(self) -> int:
        if self.nominal <= 0:
            return 100 if self.used else 0
        return min(100, round(100 * self.used / self.nominal))

    def text(self, amount: int) -> str:
        return format_amount(self.resource, amount)


@dataclass(frozen=True, slots=True)
class WorkloadRow:
    namespace: str
    name: str
    position: int
    priority: int
    local_queue: str
    message: str


@dataclass(slots=True)
class QueueRow:
    kind: str  # "Cohort" | "ClusterQueue"
    name: str
    depth: int
    weight: float
    usage: list[FlavorUsage]
    admitted: list[WorkloadRow] = field(default_factory=list)
    pending: list[WorkloadRow] = field(default_factory=list)
    pending_source: str = ""  # "visibility" (queue order) or "workloads" (creation order)


def holds_quota(workload: Mapping[str, Any]) -> bool:
    return facts.is_true(workload, kw.WorkloadConditionType.QUOTA_RESERVED) and not facts.is_true(
        workload, kw.WorkloadConditionType.FINISHED
    )


def _admission(workload: Mapping[str, Any]) -> kw.Admission | None:
    raw = (workload.get("status") or {}).get("admission")
    return kw.Admission.model_validate(raw) if raw else None


def quota_tree(
    cluster_queues: Iterable[Object], cohorts: Iterable[Object], workloads: Iterable[Object]
) -> QuotaTree:
    tree = QuotaTree([cluster_queue_spec(o) for o in cluster_queues], [cohort_spec(o) for o in cohorts])
    for workload in workloads:
        admission = _admission(workload) if holds_quota(workload) else None
        if admission is None or not admission.cluster_queue or admission.cluster_queue not in tree.cqs:
            continue
        for pod_set in assignment_from_admission(admission).pod_sets:
            tree.add_usage(admission.cluster_queue, pod_set.usage)
    return tree


def _lendable_spare(node: QuotaNode, fr: FlavorResource) -> int:
    """Quota ``node`` offers its parent and does not use itself."""
    offered = node.subtree.get(fr, 0) - node.local.get(fr, 0)
    contribution = max(0, node.usage.get(fr, 0) - node.local.get(fr, 0))
    return max(0, offered - contribution)


def _borrowed(node: QuotaNode, fr: FlavorResource) -> int:
    return max(0, node.usage.get(fr, 0) - node.subtree.get(fr, 0))


def lent(tree: QuotaTree) -> dict[tuple[str, FlavorResource], int]:
    """``(node name, fr) -> lent``: each cohort's borrowing children served from its own quota first, then
    from the spare of its other children in name order."""
    found: dict[tuple[str, FlavorResource], int] = {}
    for cohort in tree.cohorts.values():
        frs = {fr for child in cohort.children for fr in child.usage}
        for fr in frs:
            need = sum(_borrowed(c, fr) for c in cohort.children) - cohort.nominal(fr)
            for child in sorted(cohort.children, key=lambda c: c.name):
                give = min(max(0, need), _lendable_spare(child, fr))
                if give:
                    found[(child.name, fr)] = give
                    need -= give
    return found


def _usage(node: QuotaNode, lent_by: Mapping[tuple[str, FlavorResource], int]) -> list[FlavorUsage]:
    frs = sorted(set(node.quotas) | set(node.usage) | set(node.subtree))
    nominal = node.quotas if node.is_cq else {fr: None for fr in node.subtree}
    rows = []
    for fr in frs:
        quota = node.nominal(fr) if node.is_cq else node.subtree.get(fr, 0)
        used = node.usage.get(fr, 0)
        if fr in nominal or used:
            rows.append(
                FlavorUsage(fr[0], fr[1], quota, used, max(0, used - quota), lent_by.get((node.name, fr), 0))
            )
    return rows


def _walk(
    node: QuotaNode, depth: int, lent_by: Mapping[tuple[str, FlavorResource], int]
) -> Iterable[QueueRow]:
    yield QueueRow(
        "ClusterQueue" if node.is_cq else "Cohort", node.name, depth, node.weight, _usage(node, lent_by)
    )
    for child in sorted(node.children, key=lambda c: (c.is_cq, c.name)):
        yield from _walk(child, depth + 1, lent_by)


def _admitted(workloads: Iterable[Object]) -> dict[str, list[WorkloadRow]]:
    by_cq: dict[str, list[tuple[float, WorkloadRow]]] = {}
    for workload in workloads:
        admission = _admission(workload) if holds_quota(workload) else None
        if admission is None:
            continue
        reserved = facts.condition(workload, kw.WorkloadConditionType.QUOTA_RESERVED) or {}
        at = facts.timestamp(reserved.get("lastTransitionTime")) or 0.0
        m, spec = facts.meta(workload), workload.get("spec") or {}
        row = WorkloadRow(
            str(m.get("namespace") or ""),
            str(m.get("name") or ""),
            0,
            int(spec.get("priority") or 0),
            str(spec.get("queueName") or ""),
            str(reserved.get("message") or ""),
        )
        by_cq.setdefault(admission.cluster_queue or "", []).append((at, row))
    return {cq: [r for _, r in sorted(rows, key=lambda x: x[0])] for cq, rows in by_cq.items()}


def pending_rows(items: Sequence[Mapping[str, Any]]) -> list[WorkloadRow]:
    """Rows from the visibility API's ``PendingWorkload`` items (already in queue order)."""
    return [
        WorkloadRow(
            str(facts.meta(i).get("namespace") or ""),
            str(facts.meta(i).get("name") or ""),
            int(i.get("positionInClusterQueue") or 0),
            int(i.get("priority") or 0),
            str(i.get("localQueueName") or ""),
            str(i.get("message") or i.get("reason") or ""),
        )
        for i in items
    ]


def _unadmitted(workloads: Iterable[Object], local_queues: Mapping[str, str]) -> dict[str, list[WorkloadRow]]:
    """Workloads without quota by ClusterQueue, oldest first (used when no visibility API answers)."""
    found: dict[str, list[Object]] = {}
    for w in workloads:
        spec = w.get("spec") or {}
        if holds_quota(w) or facts.is_true(w, kw.WorkloadConditionType.FINISHED):
            continue
        cq = local_queues.get(f"{facts.meta(w).get('namespace')}/{spec.get('queueName')}")
        if cq:
            found.setdefault(cq, []).append(w)
    return {
        cq: [
            WorkloadRow(
                str(facts.meta(w).get("namespace")),
                str(facts.meta(w).get("name")),
                n,
                int((w.get("spec") or {}).get("priority") or 0),
                str((w.get("spec") or {}).get("queueName") or ""),
                str((facts.condition(w, kw.WorkloadConditionType.QUOTA_RESERVED) or {}).get("message") or ""),
            )
            for n, w in enumerate(sorted(ws, key=facts.created))
        ]
        for cq, ws in found.items()
    }


def queue_rows(
    cluster_queues: Sequence[Object],
    cohorts: Sequence[Object],
    local_queues: Iterable[Object],
    workloads: Sequence[Object],
    pending: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> list[QueueRow]:
    """The cohort forest flattened depth-first (cohorts before their ClusterQueues, each by name).
    ``pending`` maps a ClusterQueue to its visibility API items; without it pending work is listed by age."""
    tree = quota_tree(cluster_queues, cohorts, workloads)
    lent_by = lent(tree)
    rows = [
        row
        for root in sorted(tree.roots(), key=lambda n: (n.is_cq, n.name))
        for row in _walk(root, 0, lent_by)
    ]
    admitted = _admitted(workloads)
    lq_to_cq = {facts.key(q): str((q.get("spec") or {}).get("clusterQueue") or "") for q in local_queues}
    fallback = _unadmitted(workloads, lq_to_cq) if pending is None else {}
    for row in rows:
        if row.kind != "ClusterQueue":
            continue
        row.admitted = admitted.get(row.name, [])
        if pending is not None:
            row.pending, row.pending_source = pending_rows(pending.get(row.name, [])), "visibility"
        else:
            row.pending, row.pending_source = fallback.get(row.name, []), "workloads"
    return rows


__all__ = [
    "FlavorUsage",
    "QueueRow",
    "WorkloadRow",
    "holds_quota",
    "lent",
    "pending_rows",
    "queue_rows",
    "quota_tree",
]
