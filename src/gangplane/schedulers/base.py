"""The contract between embedded schedulers and the loop that runs them.

A scheduler is a pure decision function over one ``ClusterView``: it reads the snapshot, the pods waiting for
it and the cluster objects it declared in ``watches``, and returns a ``CycleResult`` of instructions —
bindings, evictions, status writes and "why pending" reasons. It never writes to the store, never reads the
clock (``view.now`` is the time) and never raises for an ordinary scheduling outcome: outcomes are values
(``Status``). The shell (``loop.py``, or the simulator) owns all I/O and applies the result.

Order within one pass, fixed by the shell:
1. one snapshot of all nodes with every bound, non-terminal pod of *every* scheduler counted (and every pod
   whose binding is being written), kept up to date incrementally by the loop's cache;
2. for each scheduler in registry order: take a checkpoint, call ``cycle``, roll the snapshot back to the
   checkpoint, then count the returned bindings and drop the evicted pods — so the next scheduler sees this
   one's decisions whatever the scheduler did to the snapshot while deciding;
3. assume every binding of the pass in the cache before the next pass starts (a gang is bound within one
   pass); the writes follow on the binding worker.

A scheduler may assume into ``view.snapshot`` while deciding (``place_gang`` does); it must not keep the
snapshot, the view or any ``PodInfo`` beyond the call. It may keep its own small state between cycles
(e.g. back-off times), keyed by object keys, provided the same sequence of views gives the same results.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from gangplane.schedulers.core.gang import Binding
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.snapshot import Snapshot
from gangplane.store.base import ResourceType


class Status(StrEnum):
    """What happens next for a pod or gang (kube-scheduler ``framework.Code``).

    The shell reads it: ``ERROR`` (broken input, or a scheduler that failed its pass) also records a Warning
    Event on each pod when its condition changes; ``SKIP`` writes nothing; every other status becomes the
    pods' ``PodScheduled=False`` condition with the reason's ``reason`` and ``message``."""

    SUCCESS = "Success"  # placed; bindings follow
    WAIT = "Wait"  # not placeable yet for a reason expected to clear by itself (gang incomplete, back-off)
    UNSCHEDULABLE = "Unschedulable"  # does not fit now; preemption or freed capacity may help
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"  # preemption cannot help
    ERROR = "Error"  # the input is broken (e.g. a PodGroup with an invalid spec)
    SKIP = "Skip"  # not this scheduler's business this cycle


class Queueing(StrEnum):
    """How the loop's scheduling queue feeds a scheduler (``schedulers/queue.py``), read from an optional
    ``queueing`` attribute. ``PER_UNIT``: ``view.pending`` holds the active units only — each gang or lone
    pod that is new, changed, or requeued by an event that may help it. ``SESSION`` (the default): every
    pending pod of the scheduler, whenever any of them is active or an object it watches changed. A
    scheduler may also define ``may_attempt(group, changes) -> bool``, the QueueingHint for a new member of
    ``group``: ``False`` lets the member wait with its gang without an attempt (``intake.py``)."""

    PER_UNIT = "PerUnit"
    SESSION = "Session"


@dataclass(frozen=True, slots=True)
class Eviction:
    """Delete pod ``pod_key`` (preemption victim); ``reason`` is a CamelCase word, ``message`` for humans."""

    pod_key: str
    reason: str
    message: str = ""


@dataclass(frozen=True, slots=True)
class StatusWrite:
    """The next ``status`` of one object (``namespace`` is ``""`` for cluster-scoped kinds).

    ``base`` is the status it was computed from: then only the top-level fields that differ from it are
    written onto the object's current status (a merge patch, as controller-runtime's ``MergeFrom``), so a
    field another writer set since (e.g. Slurm Bridge's PodGroup condition) is kept. Without ``base`` the
    whole status is replaced."""

    rt: ResourceType
    namespace: str
    name: str
    status: Mapping[str, Any]
    base: Mapping[str, Any] | None = None

    def applied_to(self, current: Mapping[str, Any]) -> dict[str, Any]:
        """The status to store over ``current``."""
        if self.base is None:
            return dict(self.status)
        merged = {k: v for k, v in current.items() if k in self.status or k not in self.base}
        merged.update((k, v) for k, v in self.status.items() if k not in self.base or self.base[k] != v)
        return merged


@dataclass(frozen=True, slots=True)
class PendingReason:
    """Why pods stay pending; written as their ``PodScheduled=False`` condition (``reason``, ``message``).

    ``group`` names the gang when the reason is about a whole gang.
    """

    pod_keys: tuple[str, ...]
    status: Status
    message: str
    reason: str = "Unschedulable"
    group: str | None = None


@dataclass(slots=True)
class CycleResult:
    bindings: list[Binding] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    status_writes: list[StatusWrite] = field(default_factory=list)
    pending: list[PendingReason] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Changes:
    """What the loop knows about a ``PER_UNIT`` scheduler's groups beyond the object lists, so that its cycle
    costs what changed: ``groups``, the group keys (``"<namespace>/<name>"``) whose members or group object
    changed since its last cycle in a way its statuses read (a member added or gone, its phase, deletion or
    owners; the group object added, deleted or its spec changed; a status write of it that lost a race);
    ``members``, the pod dicts of every scheduler whose ``group_of`` names a group, in key order; ``get``, one
    watched object by type and key, or ``None``; ``pending``, where the loop can say it, the ``PodInfo`` that
    ``ClusterView.pending`` holds for one pod key, or ``None`` when that pod is not pending (without it a
    scheduler, and the pass checking its bindings, looks pods up in the whole sequence)."""

    groups: frozenset[str]
    members: Callable[[str], Sequence[Mapping[str, Any]]]
    get: Callable[[ResourceType, str], Mapping[str, Any] | None]
    pending: Callable[[str], PodInfo | None] | None = None


@dataclass(frozen=True, slots=True)
class ClusterView:
    """One scheduler's input for one cycle.

    ``pending`` are this scheduler's unbound, non-terminal, not-deleting pods — all of them, or only the active
    units for a ``Queueing.PER_UNIT`` scheduler — oldest first (creation time, then key), gated pods included
    (``PodInfo.gated``; a per-unit scheduler gets them only once ungated). It is a read-only sequence that
    may be lazy (the simulator's shell lists its waiting jobs' pods only when read), so a scheduler that
    keeps its own state reads it only when it must. ``objects`` holds, per type in the scheduler's
    ``watches``, every object of that type as a wire dict (read-only by contract), in (namespace, name)
    order. ``changes`` says what changed since the scheduler's last cycle (see ``Changes``): the loop gives
    it to a ``PER_UNIT`` scheduler, the simulator's shell (``simulator/policies/shell.py``) to the
    schedulers it runs; ``None`` (``plan_pass``, tests) means nothing is known to be unchanged: read
    ``objects`` whole.
    """

    now: float
    snapshot: Snapshot
    pending: Sequence[PodInfo]
    objects: Mapping[ResourceType, Sequence[Mapping[str, Any]]] = field(default_factory=dict)
    changes: Changes | None = None

    def objects_of(self, rt: ResourceType) -> Sequence[Mapping[str, Any]]:
        return self.objects.get(rt, ())


class Scheduler(Protocol):
    """An embedded scheduler: one name (``spec.schedulerName``), the object types it reads, and its cycle."""

    @property
    def name(self) -> str: ...

    @property
    def watches(self) -> tuple[ResourceType, ...]:
        """Types (``gangplane.store.catalog`` constants) whose objects must appear in ``ClusterView.objects``.
        Nodes are always in the snapshot; list ``PODS`` to also receive raw pod dicts (e.g. for group status)."""
        ...

    def group_of(self, pod: Mapping[str, Any]) -> str | None:
        """The gang key ``"<namespace>/<group>"`` of a pod dict as this scheduler defines membership, or
        ``None``. Called by the shell when building ``PodInfo``s; must be cheap and pure."""
        ...

    def cycle(self, view: ClusterView) -> CycleResult:
        """Decide for the pending pods. Called when some of its pods are active in the loop's queue (new,
        changed, requeued by a cluster event, or out of back-off: a ``Wait`` reason is retried on a timer),
        or an object it watches changed; never on a fixed period. Must be deterministic in ``view`` and the
        scheduler's own state; must not do I/O or read the clock."""
        ...


__all__ = [
    "Binding",
    "Changes",
    "ClusterView",
    "CycleResult",
    "Eviction",
    "PendingReason",
    "Queueing",
    "Scheduler",
    "Status",
    "StatusWrite",
]
