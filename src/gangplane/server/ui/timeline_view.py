"""Recent scheduling events, newest first, read off the objects themselves. Pure.

Sources: pods' ``PodScheduled=True`` (bound) and ``DisruptionTarget`` (evicted / preempted) conditions,
Workloads' ``QuotaReserved`` (admitted), ``Evicted`` and ``Preempted`` conditions, and every stored core/v1
Event (the TrainJob controller's waiting-reason events among them). A transition is shown once, at its
``lastTransitionTime``; objects already deleted keep only what their Events say.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gangplane.api.scheduling import kueue_workload as kw
from gangplane.server.ui import facts
from gangplane.server.ui.detail_view import event_row
from gangplane.store.base import Object

KINDS = ("admitted", "bound", "running", "preempted", "reclaimed", "evicted", "waiting", "other")


@dataclass(frozen=True, slots=True)
class TimelineRow:
    at: float
    age: str
    kind: str
    object: str
    job: str
    message: str


# First match wins: "PodsReadyTimeout" evictions are evictions, "StartingContainers" is still waiting.
_WORDS = (
    ("preempt", "preempted"), ("reclaim", "reclaimed"), ("evict", "evicted"), ("admit", "admitted"),
    ("quotareserved", "admitted"), ("scheduled", "bound"), ("bound", "bound"), ("allpodsrunning", "running"),
    ("starting", "waiting"), ("wait", "waiting"), ("queued", "waiting"), ("unschedulable", "waiting"),
    ("gang", "waiting"), ("pending", "waiting"),
)  # fmt: skip


def classify(reason: str) -> str:
    """The timeline kind of an event or condition reason."""
    text = reason.lower()
    for word, kind in _WORDS:
        if word in text:
            return kind
    return "other"


def _at(cond: Mapping[str, Any]) -> float | None:
    return facts.timestamp(cond.get("lastTransitionTime"))


def pod_rows(pod: Object, now: float) -> Iterable[TimelineRow]:
    job, name = facts.job_of(pod) or "", f"Pod/{facts.meta(pod).get('name')}"
    scheduled = facts.condition(pod, "PodScheduled")
    node = (pod.get("spec") or {}).get("nodeName")
    if scheduled and scheduled.get("status") == "True" and (at := _at(scheduled)) is not None:
        yield TimelineRow(at, facts.age(at, now), "bound", name, job, f"bound to {node}")
    disruption = facts.condition(pod, "DisruptionTarget")
    if disruption and disruption.get("status") == "True" and (at := _at(disruption)) is not None:
        reason = str(disruption.get("reason") or "Evicted")
        kind = classify(reason)
        yield TimelineRow(
            at,
            facts.age(at, now),
            kind if kind != "other" else "evicted",
            name,
            job,
            f"{reason}: {disruption.get('message') or ''}".rstrip(": "),
        )


def eviction_row(pod: Object, job: Object | None, now: float) -> TimelineRow | None:
    """The row for a pod taken off its node: marked for deletion (or deleted) while bound and unfinished,
    with its Job still there, which is how the gang schedulers evict, preempt and reclaim (the deletes carry
    no reason) and how a Job suspended by Kueue loses its pods. ``job`` is the pod's Job now, if any."""
    node = (pod.get("spec") or {}).get("nodeName")
    if not node or facts.phase(pod) in ("Succeeded", "Failed") or job is None or facts.deleting(job):
        return None
    name = f"Pod/{facts.meta(pod).get('name')}"
    if (job.get("spec") or {}).get("suspend"):
        message = f"taken off {node}: its Job was suspended (Kueue eviction or preemption)"
    else:
        message = (
            f"taken off {node} while running; its Job remains (a scheduler's eviction, or a manual delete)"
        )
    return TimelineRow(now, facts.age(now, now), "evicted", name, facts.job_of(pod) or "", message)


def _owner_job(workload: Mapping[str, Any]) -> str:
    for ref in facts.meta(workload).get("ownerReferences") or []:
        if ref.get("kind") == "TrainJob":
            return f"{facts.meta(workload).get('namespace')}/{ref.get('name')}"
    return ""


def workload_rows(workload: Object, now: float) -> Iterable[TimelineRow]:
    name, job = f"Workload/{facts.meta(workload).get('name')}", _owner_job(workload)
    for cond in facts.conditions(workload):
        at = _at(cond)
        if cond.get("status") != "True" or at is None:
            continue
        type_ = cond.get("type")
        if type_ == kw.WorkloadConditionType.QUOTA_RESERVED:
            kind = "admitted"
        elif type_ in (kw.WorkloadConditionType.EVICTED, kw.WorkloadConditionType.PREEMPTED):
            found = classify(f"{cond.get('reason')}")
            kind = found if found in ("preempted", "reclaimed") else "evicted"
        else:
            continue
        yield TimelineRow(
            at, facts.age(at, now), kind, name, job, str(cond.get("message") or cond.get("reason"))
        )


def _event_job(event: Mapping[str, Any]) -> str:
    involved = event.get("involvedObject") or {}
    return f"{involved.get('namespace')}/{involved.get('name')}" if involved.get("kind") == "TrainJob" else ""


def timeline_rows(
    pods: Iterable[Object],
    workloads: Iterable[Object],
    events: Iterable[Object],
    now: float,
    limit: int = 300,
    recorded: Iterable[TimelineRow] = (),
) -> list[TimelineRow]:
    """The ``limit`` most recent rows, newest first; ``recorded`` rows (evictions seen by the recorder)
    have their ages brought up to ``now``."""
    rows = [TimelineRow(r.at, facts.age(r.at, now), r.kind, r.object, r.job, r.message) for r in recorded]
    rows += [r for p in pods for r in pod_rows(p, now)]
    rows += [r for w in workloads for r in workload_rows(w, now)]
    for event in events:
        e = event_row(event, now)
        rows.append(
            TimelineRow(
                e.at, e.age, classify(e.reason), e.object, _event_job(event), f"{e.reason}: {e.message}"
            )
        )
    rows.sort(key=lambda r: (-r.at, r.object))
    return rows[:limit]


@dataclass(frozen=True, slots=True)
class Bucket:
    """One column of the timeline's chart: the rows of ``width`` seconds ending ``ago`` seconds before now."""

    ago: float
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def histogram(rows: Iterable[TimelineRow], now: float, count: int = 30) -> tuple[float, list[Bucket]]:
    """Scheduling rows (not "other") over time, oldest column first: ``count`` columns spanning the oldest
    row's age (at least a second each), and the column width in seconds."""
    rows = [r for r in rows if r.kind != "other"]
    span = max((now - r.at for r in rows), default=0.0)
    width = max(span, float(count)) / count * 1.0001  # the oldest row still falls in the first column
    columns = [Bucket((count - i - 1) * width, dict.fromkeys(KINDS[:-1], 0)) for i in range(count)]
    for row in rows:
        index = count - 1 - min(count - 1, max(0, int((now - row.at) // width)))
        columns[index].counts[row.kind] += 1
    return width, columns


def kind_counts(rows: Iterable[TimelineRow]) -> dict[str, int]:
    counts = dict.fromkeys(KINDS, 0)
    for row in rows:
        counts[row.kind] += 1
    return counts


__all__ = [
    "KINDS",
    "Bucket",
    "TimelineRow",
    "classify",
    "eviction_row",
    "histogram",
    "kind_counts",
    "pod_rows",
    "timeline_rows",
    "workload_rows",
]
