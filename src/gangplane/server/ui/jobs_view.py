"""TrainJobs as dashboard rows: state, gang progress, scheduler and queue, and why it waits. Pure.

The why-pending line is the TrainJob's own ``gangplane.dev/Waiting`` condition (controllers/pending.py), so
the dashboard says exactly what ``gangplane describe`` says, numbers included.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gangplane.api.scheduling import kai, kueue, volcano
from gangplane.server.ui import facts
from gangplane.store.base import Object

WAITING = (
    "gangplane.dev/Waiting"  # controllers/pending.py WAITING_CONDITION (a layer the server may not import)
)
DEFAULT_SCHEDULER = "default-scheduler"


@dataclass(frozen=True, slots=True)
class JobRow:
    namespace: str
    name: str
    state: str
    bound: int
    running: int
    total: int
    scheduler: str
    queue: str
    reason: str
    message: str
    waiting_for: str
    age: str
    created: float

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def expected_pods(jobset: Mapping[str, Any] | None) -> int:
    """Pods a JobSet asks for: replicas x parallelism over its replicated jobs."""
    total = 0
    for rjob in ((jobset or {}).get("spec") or {}).get("replicatedJobs") or []:
        parallelism = (((rjob.get("template") or {}).get("spec") or {}).get("parallelism")) or 1
        total += int(rjob.get("replicas") or 1) * int(parallelism)
    return total


def _pod_template_scheduler(jobset: Mapping[str, Any] | None) -> str | None:
    for rjob in ((jobset or {}).get("spec") or {}).get("replicatedJobs") or []:
        pod = (((rjob.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
        if pod.get("schedulerName"):
            return str(pod["schedulerName"])
    return None


def scheduler_of(pods: Sequence[Object], jobset: Mapping[str, Any] | None) -> str:
    for pod in pods:
        if (name := (pod.get("spec") or {}).get("schedulerName")) is not None:
            return str(name)
    return _pod_template_scheduler(jobset) or DEFAULT_SCHEDULER


def queue_of(trainjob: Mapping[str, Any]) -> str:
    """The queue the TrainJob names, prefixed by who reads it (Kueue label, KAI label, Volcano annotation)."""
    labels = facts.meta(trainjob).get("labels") or {}
    annotations = facts.meta(trainjob).get("annotations") or {}
    for system, value in (
        ("kueue", labels.get(kueue.QUEUE_NAME_LABEL)),
        ("kai", labels.get(kai.QUEUE_LABEL)),
        ("volcano", annotations.get(volcano.QUEUE_NAME_ANNOTATION)),
    ):
        if value:
            return f"{system}/{value}"
    return ""


def _state(trainjob: Mapping[str, Any], running: int, bound: int, total: int) -> str:
    for final in ("Complete", "Failed"):
        if facts.is_true(trainjob, final):
            return final
    if facts.is_true(trainjob, WAITING):
        return "Waiting"
    if (trainjob.get("spec") or {}).get("suspend"):
        return "Suspended"
    if total and running >= total:
        return "Running"
    return "Starting" if bound else "Pending"


def _bound(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def job_row(trainjob: Object, pods: Sequence[Object], jobset: Mapping[str, Any] | None, now: float) -> JobRow:
    live = [p for p in pods if not facts.deleting(p) and facts.phase(p) not in ("Failed",)]
    bound = sum(1 for p in live if _bound(p))
    running = sum(1 for p in live if facts.phase(p) in ("Running", "Succeeded"))
    total = expected_pods(jobset) or len(live)
    waiting = facts.condition(trainjob, WAITING)
    active = waiting is not None and waiting.get("status") == "True"
    m = facts.meta(trainjob)
    created = facts.created(trainjob)
    return JobRow(
        namespace=str(m.get("namespace") or ""),
        name=str(m.get("name") or ""),
        state=_state(trainjob, running, bound, total),
        bound=bound,
        running=running,
        total=total,
        scheduler=scheduler_of(pods, jobset),
        queue=queue_of(trainjob),
        reason=str(waiting.get("reason") or "") if waiting and active else "",
        message=str(waiting.get("message") or "") if waiting and active else "",
        waiting_for=facts.age(facts.timestamp(waiting.get("lastTransitionTime")), now)
        if waiting and active
        else "",
        age=facts.age(created, now),
        created=created,
    )


def job_rows(
    trainjobs: Iterable[Object], pods: Iterable[Object], jobsets: Iterable[Object], now: float
) -> list[JobRow]:
    """One row per TrainJob, newest first (the one just submitted is the one a user looks for)."""
    grouped = facts.pods_by_job(pods)
    sets = facts.by_key(jobsets)
    rows = [job_row(t, grouped.get(facts.key(t), []), sets.get(facts.key(t)), now) for t in trainjobs]
    rows.sort(key=lambda r: (-r.created, r.namespace, r.name))
    return rows


STATE_ORDER = ("Waiting", "Pending", "Starting", "Running", "Suspended", "Complete", "Failed")


def filter_rows(rows: Sequence[JobRow], state: str = "", text: str = "") -> list[JobRow]:
    """Rows in ``state`` (any when empty) whose name, queue or reason contains ``text``."""
    needle = text.lower()
    return [
        r
        for r in rows
        if (not state or r.state == state)
        and (not needle or needle in f"{r.key} {r.queue} {r.scheduler} {r.reason} {r.message}".lower())
    ]


def state_counts(rows: Iterable[JobRow]) -> dict[str, int]:
    counts = dict.fromkeys(STATE_ORDER, 0)
    for row in rows:
        counts[row.state] = counts.get(row.state, 0) + 1
    return counts


__all__ = [
    "STATE_ORDER",
    "WAITING",
    "JobRow",
    "expected_pods",
    "filter_rows",
    "job_row",
    "job_rows",
    "queue_of",
    "scheduler_of",
    "state_counts",
]
