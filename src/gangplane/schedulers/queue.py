"""The scheduling queue: pending pods in an active queue, a back-off queue and an unschedulable pool.

kube-scheduler's ``internal/queue/scheduling_queue.go`` in our terms. The unit of queueing is what a
scheduler places at once: a gang (the pod's group key, so siblings are activated together, as Coscheduling's
``PodsToActivate`` does) or a lone pod. A pass takes the active units; after it, each unit that was not
placed goes, by the status its scheduler gave:
- ``Unschedulable`` / ``UnschedulableAndUnresolvable`` / ``Skip`` / no reason -> the unschedulable pool,
  which it leaves only on a cluster event that may help (``move``, ``activate``: the loop's QueueingHints);
- ``Wait`` / ``Error`` -> the back-off queue, until an exponential back-off expires (1 s doubling to 10 s,
  ``podInitialBackoffSeconds`` / ``podMaxBackoffSeconds``): the only timers there are.
A unit that an event touched while its pass ran goes back to the active queue (kube's ``moveRequestCycle``),
so an event never falls between a snapshot and the pool. A unit waiting longer than
``MAX_IN_UNSCHEDULABLE`` in the pool is flushed back (kube's leftover flush, a safety net).

Differences from kube-scheduler: a unit moved out of the pool by an event goes straight to the active queue
(kube sends it through the back-off queue when its back-off has not expired), so a requeue never waits for a
timer. A scheduler in ``SESSION`` mode (Volcano, KAI: one session decides for every pending job, as upstream
does every second) sees all its pending pods whenever any unit of it is active or it is ``dirty`` (an event
on an object it watches, which its statuses depend on); in ``PER_UNIT`` mode it sees the active units only.
Pure: no clock (``now`` is passed in), no I/O, not thread-safe.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from gangplane.schedulers.base import CycleResult, Queueing, Status
from gangplane.schedulers.core.objects import PodInfo

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
MAX_IN_UNSCHEDULABLE = 300.0


class State(StrEnum):
    ACTIVE = "Active"
    BACKOFF = "Backoff"
    UNSCHEDULABLE = "Unschedulable"
    GATED = "Gated"  # PreEnqueue: every pending pod of the unit has scheduling gates


@dataclass(slots=True)
class Unit:
    scheduler: str
    key: str
    pods: dict[str, PodInfo] = field(default_factory=dict)
    state: State = State.ACTIVE
    attempts: int = 0
    since: float = 0.0  # when it entered its state (the pool) or when its back-off expires (BACKOFF)
    touched: int = 0  # the queue's event sequence number when an event last activated it


@dataclass(slots=True)
class Batch:
    """What one pass takes: per scheduler, the pods its cycle sees and the units they came from."""

    seq: int
    pending: dict[str, tuple[PodInfo, ...]] = field(default_factory=dict)
    units: dict[str, list[Unit]] = field(default_factory=dict)
    groups: dict[str, frozenset[str]] = field(default_factory=dict)  # changed groups (``mark_dirty``)

    def __bool__(self) -> bool:
        return bool(self.pending)


def _unit_key(pod: PodInfo) -> str:
    return pod.group or pod.key


class SchedulingQueue:
    def __init__(self, modes: Mapping[str, Queueing]) -> None:
        self.modes = dict(modes)
        self.units: dict[tuple[str, str], Unit] = {}
        self._of: dict[str, tuple[str, str]] = {}  # pod key -> unit id
        self._backoff: list[tuple[float, int, tuple[str, str]]] = []  # heap: (expiry, tie, unit id)
        self._dirty: dict[str, set[str]] = {}  # scheduler -> groups changed since its last cycle
        self._in: dict[State, dict[tuple[str, str], Unit]] = {state: {} for state in State}  # units by state
        self._moved: dict[str | None, int] = {}  # scheduler (None: all) -> seq of its last move
        self.seq = 0  # bumped by every event that activates or moves something

    # -- membership ------------------------------------------------------------------------------------
    def add(self, pod: PodInfo) -> None:
        """A pod became pending, or a pending pod's spec changed: (re)activate its unit."""
        self.remove(pod.key)
        uid = (pod.scheduler_name, _unit_key(pod))
        unit = self.units.get(uid)
        if unit is None:
            unit = self.units[uid] = Unit(*uid)
            self._in[unit.state][uid] = unit
        unit.pods[pod.key] = pod
        self._of[pod.key] = uid
        self._activate(unit)

    def join(self, pod: PodInfo) -> None:
        """A new pod whose unit no event can help yet (its gang still lacks members): it waits with its unit,
        in the unit's state, without an attempt. Without a unit to join it is added as usual."""
        uid = (pod.scheduler_name, _unit_key(pod))
        unit = self.units.get(uid)
        if unit is None or pod.key in self._of:
            self.add(pod)
            return
        unit.pods[pod.key] = pod
        self._of[pod.key] = uid

    def refresh(self, pod: PodInfo) -> None:
        """A queued pod's info was rebuilt (a new resourceVersion) without a change that warrants a retry."""
        uid = self._of.get(pod.key)
        if uid is not None:
            self.units[uid].pods[pod.key] = pod

    def remove(self, key: str) -> None:
        """A pod is no longer pending (bound, assumed, deleted, terminal)."""
        uid = self._of.pop(key, None)
        if uid is None:
            return
        unit = self.units[uid]
        unit.pods.pop(key, None)
        if not unit.pods:
            del self.units[uid]
            del self._in[unit.state][uid]

    def __contains__(self, key: object) -> bool:
        return key in self._of

    # -- hints -----------------------------------------------------------------------------------------
    def activate(self, scheduler: str, unit_key: str) -> None:
        """An event concerning one unit (a gang's PodGroup changed, a sibling was bound)."""
        unit = self.units.get((scheduler, unit_key))
        if unit is not None:
            self._activate(unit)

    def move(self, scheduler: str | None = None) -> None:
        """A cluster event that may make any waiting unit (of ``scheduler``, or of all) schedulable."""
        self.seq += 1
        self._moved[scheduler] = self.seq  # units in a pass now stay active after it (``done``)
        for unit in list(self._in[State.UNSCHEDULABLE].values()):
            if scheduler in (None, unit.scheduler):
                self._activate(unit)

    def mark_dirty(self, scheduler: str, group: str | None = None) -> None:
        """Run ``scheduler``'s cycle in the next pass even with nothing active (its statuses may change);
        ``group``: the group whose status may change, handed to that cycle (``Batch.groups``)."""
        groups = self._dirty.setdefault(scheduler, set())
        if group is not None:
            groups.add(group)
        self.seq += 1

    def _activate(self, unit: Unit) -> None:
        self.seq += 1
        unit.touched = self.seq
        gated = all(p.gated for p in unit.pods.values())
        self._set(unit, State.GATED if gated else State.ACTIVE)

    def _set(self, unit: Unit, state: State) -> None:
        uid = (unit.scheduler, unit.key)
        del self._in[unit.state][uid]
        unit.state = state
        self._in[state][uid] = unit

    # -- passes ----------------------------------------------------------------------------------------
    def pop(self, now: float) -> Batch:
        """The active units (after back-offs and leftovers that are due), grouped by scheduler."""
        self._flush(now)
        batch = Batch(self.seq)
        for unit in self._in[State.ACTIVE].values():
            batch.units.setdefault(unit.scheduler, []).append(unit)
        for name in self.modes:
            if name not in batch.units and name not in self._dirty:
                continue
            if self.modes[name] is Queueing.SESSION:
                batch.units[name] = [u for u in self.units.values() if u.scheduler == name]
            pods = [p for u in batch.units.get(name, ()) for p in u.pods.values()]
            batch.pending[name] = tuple(sorted(pods, key=lambda p: (p.created, p.key)))
            batch.groups[name] = frozenset(self._dirty.get(name, ()))
        self._dirty.clear()
        return batch

    def done(self, batch: Batch, name: str, result: CycleResult, now: float) -> None:
        """Place the units of ``name`` that ``batch`` gave it, by ``result`` (bound pods were removed)."""
        statuses: dict[tuple[str, str], set[Status]] = {}
        for reason in result.pending:
            for key in reason.pod_keys:
                uid = self._of.get(key)
                if uid is not None:
                    statuses.setdefault(uid, set()).add(reason.status)
        for unit in batch.units.get(name, ()):
            if self.units.get((unit.scheduler, unit.key)) is not unit or unit.state is not State.ACTIVE:
                continue  # gone, or moved elsewhere since the pass took it
            moved = max(self._moved.get(None, 0), self._moved.get(name, 0))
            if unit.touched > batch.seq or moved > batch.seq:
                continue  # an event touched it, or moved waiting units, during the pass: stays active
            self._settle(unit, statuses.get((unit.scheduler, unit.key), set()), now)

    def backoff(self, key: str, now: float) -> None:
        """Send the unit of pod ``key`` to the back-off queue (its binding failed)."""
        uid = self._of.get(key)
        if uid is not None:
            self._settle(self.units[uid], {Status.ERROR}, now)

    def _settle(self, unit: Unit, statuses: set[Status], now: float) -> None:
        unit.attempts += 1
        if statuses & {Status.WAIT, Status.ERROR}:
            delay = min(INITIAL_BACKOFF * 2 ** (unit.attempts - 1), MAX_BACKOFF)
            self._set(unit, State.BACKOFF)
            unit.since = now + delay
            heapq.heappush(self._backoff, (unit.since, id(unit), (unit.scheduler, unit.key)))
        else:
            self._set(unit, State.UNSCHEDULABLE)
            unit.since = now

    def _flush(self, now: float) -> None:
        while self._backoff and self._backoff[0][0] <= now:
            expiry, _, uid = heapq.heappop(self._backoff)
            unit = self.units.get(uid)
            if unit is not None and unit.state is State.BACKOFF and unit.since == expiry:
                self._activate(unit)
        for unit in list(self._in[State.UNSCHEDULABLE].values()):
            if now - unit.since >= MAX_IN_UNSCHEDULABLE:
                self._activate(unit)

    def next_due(self) -> float | None:
        """When the next timer fires (a back-off expiry or a leftover flush); ``None``: nothing to wait for."""
        due = [u.since for u in self._in[State.BACKOFF].values()]
        due += [u.since + MAX_IN_UNSCHEDULABLE for u in self._in[State.UNSCHEDULABLE].values()]
        return min(due, default=None)

    def has_work(self) -> bool:
        return bool(self._dirty) or bool(self._in[State.ACTIVE])

    def counts(self) -> dict[State, int]:
        """Pending pods per state."""
        return {state: sum(len(u.pods) for u in units.values()) for state, units in self._in.items()}

    def units_of(self, scheduler: str) -> Iterable[Unit]:
        return (u for u in self.units.values() if u.scheduler == scheduler)


__all__ = [
    "INITIAL_BACKOFF",
    "MAX_BACKOFF",
    "MAX_IN_UNSCHEDULABLE",
    "Batch",
    "Queueing",
    "SchedulingQueue",
    "State",
    "Unit",
]
