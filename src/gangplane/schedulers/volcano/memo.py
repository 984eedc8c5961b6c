"""What a Volcano scheduler keeps between sessions, so a session costs what changed rather than every object
parsed again: PodGroups and pods parsed once per resourceVersion, and the PodGroups whose status a session
recomputed as it stood.

Upstream keeps the same in its scheduler cache (``pkg/scheduler/cache``: ``JobInfo``/``TaskInfo`` updated by
informer events, cloned into each session's snapshot). Only objects with a ``resourceVersion`` are kept (a
store always sets one); a dict without one is parsed every session, as before. Entries of objects that are
gone are dropped at the end of each session. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.resources import ResourceIndex
from gangplane.schedulers.volcano import jobs as jb
from gangplane.schedulers.volcano.jobs import Job, Task, TaskStatus


def revision(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


@dataclass(frozen=True, slots=True)
class PodFacts:
    """A pod's task facts that do not depend on the session (its ``PodInfo`` does: it comes from the view)."""

    status: TaskStatus
    role: str
    best_effort: bool


@dataclass(frozen=True, slots=True)
class Settled:
    """A PodGroup whose recomputed status equalled the stored one, with the inputs it was computed from and
    its phase for queue counts: while those inputs recur, the status is the same and is not recomputed."""

    inputs: tuple[object, ...]
    phase: str


class Memo:
    """Parsed PodGroups and pods by key, each with the resourceVersion (and resource index) it was parsed at."""

    def __init__(self) -> None:
        self._pods: dict[str, tuple[str, ResourceIndex, PodFacts]] = {}
        self._groups: dict[str, tuple[tuple[object, ...], Job]] = {}
        self.settled: dict[str, Settled] = {}
        self._seen_pods: set[str] = set()
        self._seen_groups: set[str] = set()

    def task(self, pod: Mapping[str, Any], info: PodInfo, index: ResourceIndex) -> Task:
        """A fresh ``Task`` (sessions change task statuses) from facts parsed once per resourceVersion."""
        rv = revision(pod)
        self._seen_pods.add(info.key)
        kept = self._pods.get(info.key)
        if rv and kept is not None and kept[0] == rv and kept[1] == index:
            facts = kept[2]
        else:
            task = jb.new_task(pod, info, index)
            facts = PodFacts(task.status, task.role, task.best_effort)
            if rv:
                self._pods[info.key] = (rv, index, facts)
        return Task(info, facts.status, facts.role, facts.best_effort)

    def job(
        self, pg: Mapping[str, Any], key: str, context: tuple[object, ...], build: Callable[[], Job]
    ) -> Job:
        """A fresh ``Job`` for PodGroup ``pg``: a copy of the one parsed at this resourceVersion in this
        ``context`` (priority, resource index, HyperNode tiers), else ``build()``."""
        rv = revision(pg)
        self._seen_groups.add(key)
        kept = self._groups.get(key)
        if rv and kept is not None and kept[0] == (rv, *context):
            return copy_job(kept[1])
        job = build()
        if rv:
            self._groups[key] = ((rv, *context), copy_job(job))
        return job

    def sweep(self) -> None:
        """Forget what the session just closed did not see (deleted pods and PodGroups)."""
        for table, seen in ((self._pods, self._seen_pods), (self._groups, self._seen_groups)):
            for key in [k for k in table if k not in seen]:
                del table[key]
        for key in [k for k in self.settled if k not in self._seen_groups]:
            del self.settled[key]
        self._seen_pods, self._seen_groups = set(), set()


def copy_job(job: Job) -> Job:
    """The parsed fields of ``job``, without tasks (they are the session's own)."""
    return Job(
        job.key,
        job.namespace,
        job.name,
        job.queue,
        job.priority,
        job.min_member,
        job.min_task_member,
        job.min_resources,
        job.topology,
        job.phase,
        job.order,
        job.obj,
        synthetic=job.synthetic,
        revision=job.revision,
    )


__all__ = ["Memo", "PodFacts", "Settled", "copy_job", "revision"]
