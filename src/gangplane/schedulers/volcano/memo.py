"""What a Volcano scheduler keeps between sessions, so a session costs what changed rather than every object
parsed again: each job as parsed from its PodGroup and pods, with its queue demand, reused while their
resourceVersions (and the pods' infos) are the same; and the PodGroups whose status a session recomputed as
it stood.

Upstream keeps the same in its scheduler cache (``pkg/scheduler/cache``: ``JobInfo``/``TaskInfo`` updated by
informer events, cloned into each session). A kept job is handed to the next session with its phase and task
statuses as parsed (a session changes them). Only objects with a ``resourceVersion`` are kept (a store always
sets one); without one a job is parsed every session, as before. Jobs not seen in a session are dropped when
it closes. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from copy import deepcopy
from dataclasses import dataclass
from typing import Any

from gangplane.schedulers.core.evicting import Evicting
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.resources import ResourceIndex
from gangplane.schedulers.volcano.book import QueueDemand
from gangplane.schedulers.volcano.jobs import Job, TaskStatus, phase_of, same_group
from gangplane.schedulers.volcano.proportion import QueuePolicy

Members = Sequence[tuple[Mapping[str, Any], PodInfo]]
PodFacts = tuple[str, str, str]  # a pod's scheduler name, key and job key ("": not read yet)


def revision(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


@dataclass(slots=True)
class _Kept:
    inputs: tuple[object, ...]  # the PodGroup's resourceVersion and what else the parse depended on
    pods: list[tuple[str, PodInfo, Mapping[str, Any]]]  # each member's resourceVersion, info and object
    job: Job
    phase: str
    statuses: tuple[TaskStatus, ...]
    demand: QueueDemand | None = None

    def same(self, inputs: tuple[object, ...], members: Members) -> bool:
        return self.inputs == inputs and self._same_pods(members)

    def restatused(self, pg: Mapping[str, Any], inputs: tuple[object, ...], members: Members) -> bool:
        """Is ``pg`` the PodGroup the job was parsed from but for its status (this scheduler's own write, most
        often), with the same context and pods? Nothing else a parse reads moved (``jobs.same_group``)."""
        return self.inputs[1:] == inputs[1:] and self._same_pods(members) and same_group(self.job, pg)

    def _same_pods(self, members: Members) -> bool:
        """The same member infos at the same resourceVersions, in order (the same pod object has the same
        version: read-only, held here; a loop, not a generator: asked of every kept job every session)."""
        if len(self.pods) != len(members):
            return False
        for (rv, info, was), (pod, now) in zip(self.pods, members, strict=True):
            if info is not now or (pod is not was and rv != revision(pod)):
                return False
        return True

    def renew(self, pg: Mapping[str, Any], inputs: tuple[object, ...]) -> Job:
        """The kept job as a parse of ``pg`` would build it (``restatused``): its tasks, priority and shape come
        from the spec, the context and the pods, which stand; the phase, the object and the PodGroup's
        resourceVersion are ``pg``'s. Its queue demand reads the phase: kept only if the phase is."""
        job = self.reset()
        job.obj, job.phase, job.revision = pg, phase_of(pg), (str(inputs[0]), *job.revision[1:])
        if job.phase != self.phase:
            self.demand = None
        self.inputs, self.phase = inputs, job.phase
        return job

    def reset(self) -> Job:
        self.job.phase = self.phase
        for task, status in zip(self.job.tasks, self.statuses, strict=True):
            self.job.set_status(task, status)
        return self.job


@dataclass(frozen=True, slots=True)
class Settled:
    """A PodGroup whose recomputed status equalled the stored one, with the inputs it was computed from and
    its phase for queue counts: while those inputs recur, the status is the same and is not recomputed."""

    inputs: tuple[object, ...]
    phase: str


class Memo:
    """Kept jobs by key, settled PodGroup statuses by key, and Queue policies by name (few: never swept)."""

    def __init__(self) -> None:
        self._jobs: dict[str, _Kept] = {}
        self._policies: dict[str, tuple[tuple[str, ResourceIndex], QueuePolicy, tuple[object, ...]]] = {}
        self.settled: dict[str, Settled] = {}
        self._seen: set[str] = set()
        # the last session's pods by id, and what was read of each (``session._members``): two tables so that
        # the facts, strings only, are no containers the cyclic garbage collector walks
        self.pods: dict[int, Mapping[str, Any]] = {}
        self.pod_facts: dict[int, PodFacts] = {}

    def job(
        self,
        pg: Mapping[str, Any],
        key: str,
        members: Members,
        context: tuple[object, ...],
        build: Callable[[], Job],
    ) -> Job:
        """The job of PodGroup ``pg`` and its ``members``: the kept one when nothing it was parsed from
        changed (same resourceVersions, same member infos, same ``context``: priority, resource index,
        HyperNode tiers) or only the PodGroup's status did (renewed), else ``build()``, kept when every
        object has a resourceVersion."""
        self._seen.add(key)
        inputs = (revision(pg), *context)
        kept = self._jobs.get(key)
        if kept is not None and inputs[0] and kept.same(inputs, members):
            return kept.reset()
        if kept is not None and inputs[0] and kept.restatused(pg, inputs, members):
            return kept.renew(pg, inputs)
        self._jobs.pop(key, None)
        job = build()
        pods = [(revision(pod), info, pod) for pod, info in members]
        if stamp(job, inputs[0], [rv for rv, _, _ in pods]):
            statuses = tuple(t.status for t in job.tasks)
            self._jobs[key] = _Kept(inputs, pods, job, job.phase, statuses)
        return job

    def policy(
        self, obj: Mapping[str, Any], index: ResourceIndex, parse: Callable[[], QueuePolicy]
    ) -> QueuePolicy:
        """Queue ``obj``'s policy, parsed once per resourceVersion and resource index, or while what it reads
        recurs (``parse`` may raise)."""
        meta = obj.get("metadata") or {}
        name, rv = str(meta.get("name")), revision(obj)
        kept = self._policies.get(name)
        if rv and kept is not None and kept[0] == (rv, index):
            return kept[1]
        if kept is not None and kept[0][1] == index and kept[2] == read_by_policy(obj):
            # a status write (counts, allocation) changed nothing the policy reads, or a built-in queue
            # (root, default: no resourceVersion) is the same as last pass
            self._policies[name] = ((rv, index), kept[1], kept[2])
            return kept[1]
        policy = parse()
        self._policies[name] = ((rv, index), policy, deepcopy(read_by_policy(obj)))  # not a view
        return policy

    def demand(self, job: Job, compute: Callable[[Job], QueueDemand]) -> QueueDemand:
        """``compute(job)`` at session open, once per kept job."""
        kept = self._jobs.get(job.key)
        if kept is None or kept.job is not job:
            return compute(job)
        if kept.demand is None:
            kept.demand = compute(job)
        return kept.demand

    def forget(self, keys: Iterable[str]) -> None:
        """Parse these jobs again next session whatever their resourceVersions say."""
        for key in keys:
            self._jobs.pop(key, None)

    def sweep(self) -> None:
        """Forget the jobs the session just closed did not see (deleted PodGroups)."""
        for table in (self._jobs, self.settled):
            for key in [k for k in table if k not in self._seen]:
                del table[key]
        self._seen = set()


class Stamping(Memo):
    """A memo that keeps nothing: each job is built and stamped with the resourceVersions it was parsed from
    (``Job.revision``) as ``Memo.job`` stamps a job it keeps. A kept session (``reopen``) keeps its jobs
    itself and reads only the stamp; an empty memo did the same with a record per job it threw away."""

    def job(
        self,
        pg: Mapping[str, Any],
        key: str,
        members: Members,
        context: tuple[object, ...],
        build: Callable[[], Job],
    ) -> Job:
        job = build()
        stamp(job, revision(pg), [revision(pod) for pod, _ in members])
        return job


def stamp(job: Job, group: object, pods: Sequence[str]) -> bool:
    """Stamp ``job`` with the resourceVersions it was parsed from (``Job.revision``) when every object has
    one; whether it did."""
    if not group or not all(pods):
        return False
    job.revision = (str(group), *pods)
    return True


class Victims:
    """The pods this scheduler evicted, Releasing until the view shows their deletion (``Evicting``), and
    their jobs: a job with a victim in flight is parsed again every session (its tasks' statuses depend on
    the marks, not only on its objects), and once more the session after its last mark ends.

    Upstream Volcano's cache sets an evicted task Releasing at once (``pkg/scheduler/cache/cache.go``
    ``Evict``: ``task.Status = Releasing``, for the statement's committed evictions) and reads the deletion
    from its informers later; our shell may run the next session before the deletion is written."""

    def __init__(self) -> None:
        self.evicting = Evicting()
        self._jobs: dict[str, str] = {}  # victim pod key -> its job key

    def begin(self, now: float) -> set[str]:
        """Expire lost writes; the jobs to parse again this session."""
        self.evicting.expire(now)
        return set(self._jobs.values())

    def end(self, evicted: Mapping[str, tuple[str, str]], now: float) -> None:
        """Keep the victims still in flight and add this session's (pod key -> (uid, job key))."""
        self._jobs = {pod: job for pod, job in self._jobs.items() if pod in self.evicting}
        self.evicting.add({pod: uid for pod, (uid, _) in evicted.items()}, now)
        self._jobs.update((pod, job) for pod, (_, job) in evicted.items())


def read_by_policy(obj: Mapping[str, Any]) -> tuple[object, ...]:
    """What ``queues.policy_of`` reads from a Queue: its spec, its state, and its name, creation time, uid
    and annotations."""
    meta = obj.get("metadata") or {}
    keys = ("name", "creationTimestamp", "uid", "annotations")
    return (obj.get("spec"), (obj.get("status") or {}).get("state"), *(meta.get(k) for k in keys))


__all__ = ["Memo", "PodFacts", "Settled", "Stamping", "Victims", "read_by_policy", "revision", "stamp"]
