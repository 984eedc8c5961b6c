"""One TrainJob in depth: the JobSet -> Jobs -> pods tree, its conditions and its events. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gangplane.server.ui import facts
from gangplane.server.ui.jobs_view import JobRow, job_row
from gangplane.store.base import Object


@dataclass(frozen=True, slots=True)
class PodNode:
    name: str
    phase: str
    node: str
    ready: str
    restarts: int
    containers: tuple[str, ...]
    message: str


@dataclass(frozen=True, slots=True)
class JobNode:
    name: str
    replicated_job: str
    active: int
    succeeded: int
    failed: int
    pods: list[PodNode] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ConditionRow:
    type: str
    status: str
    reason: str
    message: str
    age: str


@dataclass(frozen=True, slots=True)
class EventRow:
    type: str
    reason: str
    object: str
    message: str
    count: int
    age: str
    at: float


@dataclass(frozen=True, slots=True)
class JobDetail:
    row: JobRow
    jobset: str
    jobset_conditions: list[ConditionRow]
    jobs: list[JobNode]
    conditions: list[ConditionRow]
    events: list[EventRow]


def condition_rows(obj: Mapping[str, Any], now: float) -> list[ConditionRow]:
    return [
        ConditionRow(
            str(c.get("type") or ""),
            str(c.get("status") or ""),
            str(c.get("reason") or ""),
            str(c.get("message") or ""),
            facts.age(facts.timestamp(c.get("lastTransitionTime")), now),
        )
        for c in facts.conditions(obj)
    ]


def _pod_message(pod: Mapping[str, Any]) -> str:
    scheduled = facts.condition(pod, "PodScheduled")
    if scheduled is not None and scheduled.get("status") == "False":
        return str(scheduled.get("message") or scheduled.get("reason") or "")
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        for state in (status.get("state") or {}).values():
            if isinstance(state, dict) and (state.get("reason") or state.get("message")):
                return str(state.get("message") or state.get("reason"))
    return ""


def pod_node(pod: Mapping[str, Any]) -> PodNode:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    ready = sum(1 for s in statuses if s.get("ready"))
    spec = pod.get("spec") or {}
    containers = tuple(str(c.get("name")) for c in spec.get("containers") or [])
    return PodNode(
        name=str(facts.meta(pod).get("name") or ""),
        phase="Terminating" if facts.deleting(pod) else facts.phase(pod),
        node=str(spec.get("nodeName") or ""),
        ready=f"{ready}/{len(containers)}",
        restarts=sum(int(s.get("restartCount") or 0) for s in statuses),
        containers=containers,
        message=_pod_message(pod),
    )


def _owner(obj: Mapping[str, Any], kind: str) -> str | None:
    for ref in facts.meta(obj).get("ownerReferences") or []:
        if ref.get("kind") == kind:
            return str(ref.get("name"))
    return None


def job_nodes(jobs: Iterable[Object], pods: Sequence[Object]) -> list[JobNode]:
    """Each Job of the JobSet with its pods (pods whose Job is gone are kept under an empty Job)."""
    by_job: dict[str, list[Object]] = {}
    for pod in pods:
        by_job.setdefault(_owner(pod, "Job") or "", []).append(pod)
    nodes = []
    for job in sorted(jobs, key=lambda j: str(facts.meta(j).get("name"))):
        name = str(facts.meta(job).get("name") or "")
        status = job.get("status") or {}
        labels = facts.meta(job).get("labels") or {}
        children = sorted(by_job.pop(name, []), key=lambda p: str(facts.meta(p).get("name")))
        nodes.append(
            JobNode(
                name,
                str(labels.get("jobset.sigs.k8s.io/replicatedjob-name") or ""),
                int(status.get("active") or 0),
                int(status.get("succeeded") or 0),
                int(status.get("failed") or 0),
                [pod_node(p) for p in children],
            )
        )
    orphans = [pod_node(p) for group in by_job.values() for p in group]
    if orphans:
        nodes.append(JobNode("", "", 0, 0, 0, sorted(orphans, key=lambda p: p.name)))
    return nodes


def event_row(event: Mapping[str, Any], now: float) -> EventRow:
    involved = event.get("involvedObject") or {}
    stamp = event.get("lastTimestamp") or event.get("eventTime") or facts.meta(event).get("creationTimestamp")
    at = facts.timestamp(stamp) or 0.0
    return EventRow(
        type=str(event.get("type") or "Normal"),
        reason=str(event.get("reason") or ""),
        object=f"{involved.get('kind', '')}/{involved.get('name', '')}",
        message=str(event.get("message") or ""),
        count=int(event.get("count") or 1),
        age=facts.age(at, now),
        at=at,
    )


def _about(event: Mapping[str, Any], names: set[str]) -> bool:
    involved = event.get("involvedObject") or {}
    return str(involved.get("name")) in names


def job_detail(
    trainjob: Object,
    jobset: Object | None,
    jobs: Iterable[Object],
    pods: Sequence[Object],
    events: Iterable[Object],
    now: float,
) -> JobDetail:
    """``jobs``, ``pods`` and ``events`` may be the namespace's; only the TrainJob's own are kept."""
    name = str(facts.meta(trainjob).get("name"))
    mine_jobs = [j for j in jobs if _owner(j, "JobSet") == name]
    mine_pods = [p for p in pods if facts.job_of(p) == facts.key(trainjob)]
    names = {name} | {str(facts.meta(o).get("name")) for o in [*mine_jobs, *mine_pods]}
    rows = sorted((event_row(e, now) for e in events if _about(e, names)), key=lambda e: -e.at)
    return JobDetail(
        row=job_row(trainjob, mine_pods, jobset, now),
        jobset=str(facts.meta(jobset).get("name") or "") if jobset else "",
        jobset_conditions=condition_rows(jobset, now) if jobset else [],
        jobs=job_nodes(mine_jobs, mine_pods),
        conditions=condition_rows(trainjob, now),
        events=rows[:100],
    )


__all__ = [
    "ConditionRow",
    "EventRow",
    "JobDetail",
    "JobNode",
    "PodNode",
    "condition_rows",
    "event_row",
    "job_detail",
    "job_nodes",
    "pod_node",
]
