"""Pending workloads: one heap per ClusterQueue, an inadmissible set, backoff waits and batched requeues.

After kueue ``pkg/cache/queue/`` (kueue.md §3, §5). Heap order: the sticky preemptor first, then higher
priority, earlier queue time, UID. Workloads that cannot be admitted with the current quota wait in the
inadmissible set until a quota-freeing event requeues their ClusterQueue, which happens in batches one second
after the event (``inadmissible_workloads.go``). A workload whose ClusterQueue was requeued after it was
popped goes straight back to the heap. Evicted workloads in backoff wait until their ``requeueAt``.

Equivalence (Kueue's ``SchedulingEquivalenceHashing``, on by default since 0.18): when a head turns out
inadmissible, every queued workload of the same shape — pod sets, selectors, tolerations and, here, priority,
so preemption chances are equal too — moves to the inadmissible set with it instead of being popped and
failing one per cycle (kueue#9715).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

from gangplane.api.scheduling.kueue import QueueingStrategy
from gangplane.schedulers.kueue.workloads import WorkloadState

REQUEUE_BATCH_SECONDS = 1.0


def heap_order(state: WorkloadState) -> tuple[int, float, str]:
    return -state.priority, state.queue_time, state.request.uid or state.key


def equivalence_key(state: WorkloadState) -> tuple[object, ...]:
    if state.shape is None:
        state.shape = _shape(state)
    return state.shape


def _shape(state: WorkloadState) -> tuple[object, ...]:
    request = state.request
    shapes = tuple(
        (p.name, p.count, tuple(sorted(p.requests.items())), tuple(sorted(p.node_selector.items())),
         tuple(t.model_dump_json() for t in p.tolerations), p.affinity)
        for p in request.pod_sets
    )  # fmt: skip
    return request.priority, request.namespace, shapes


Shape = tuple[object, ...]
_Entry = tuple[tuple[int, float, str], int, str]  # (heap order, version, key)


def _merge(first: list[_Entry] | None, second: list[_Entry] | None) -> list[_Entry]:
    """One heap of both heaps' entries: the smaller one's are pushed onto the larger (which is reused)."""
    if not first or not second:
        return first or second or []
    small, large = (first, second) if len(first) < len(second) else (second, first)
    for entry in small:
        heapq.heappush(large, entry)
    return large


@dataclass
class ClusterQueueQueue:
    """The pending workloads of one ClusterQueue, grouped by equivalence class.

    Each class is a heap of its members; the queue's heap holds one entry per active class, for its best
    member, so popping merges the class heaps in exactly the order one heap of all workloads would give.
    Parking or requeueing a whole class moves its heap at once. An entry is live while ``members`` holds
    its key with the same version; stale entries are dropped when they surface.
    """

    name: str
    strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    sticky: str | None = None
    generation: int = 0
    heap: list[tuple[tuple[int, float, str], int, Shape]] = field(default_factory=list)
    classes: dict[Shape, list[_Entry]] = field(default_factory=dict)
    parked: dict[Shape, list[_Entry]] = field(default_factory=dict)
    members: dict[str, tuple[int, WorkloadState]] = field(default_factory=dict)
    _heads: dict[Shape, int] = field(default_factory=dict)

    def _live(self, entry: _Entry) -> bool:
        member = self.members.get(entry[2])
        return member is not None and member[0] == entry[1]

    def _clean(self, entries: list[_Entry]) -> None:
        while entries and not self._live(entries[0]):
            heapq.heappop(entries)

    def _register_head(self, shape: Shape) -> None:
        entries = self.classes.get(shape)
        if entries:
            self._clean(entries)
        if not entries:
            self.classes.pop(shape, None)
            self._heads.pop(shape, None)
            return
        top = entries[0]
        if self._heads.get(shape) != top[1]:
            self._heads[shape] = top[1]
            heapq.heappush(self.heap, (top[0], top[1], shape))

    def push(self, state: WorkloadState, version: int) -> None:
        self.members[state.key] = (version, state)
        shape = equivalence_key(state)
        heapq.heappush(self.classes.setdefault(shape, []), (heap_order(state), version, state.key))
        self._register_head(shape)

    def park(self, state: WorkloadState, version: int) -> None:
        """``state`` is inadmissible: it and every queued workload of its class wait in the parked set. The
        class's heap moves whole (no copy), so parking costs the same for a class of one or of thousands."""
        self.members[state.key] = (version, state)
        shape = equivalence_key(state)
        self._heads.pop(shape, None)
        parked = _merge(self.parked.pop(shape, None), self.classes.pop(shape, None))
        heapq.heappush(parked, (heap_order(state), version, state.key))
        self.parked[shape] = parked
        self._keep_sticky_queued(shape)

    def _keep_sticky_queued(self, shape: Shape) -> None:
        """The sticky preemptor stays queued when its class parks: a second live entry for it goes back to
        the class's heap (the parked one turns stale once it is popped)."""
        member = self.members.get(self.sticky) if self.sticky is not None else None
        if member is None or self.sticky is None or equivalence_key(member[1]) != shape:
            return
        self.classes[shape] = [(heap_order(member[1]), member[0], self.sticky)]
        self._register_head(shape)

    def unpark_all(self) -> None:
        for shape, parked in self.parked.items():
            self.classes[shape] = _merge(self.classes.get(shape), parked)
            self._heads.pop(shape, None)
            self._register_head(shape)
        self.parked.clear()

    def pop(self) -> WorkloadState | None:
        if self.sticky is not None and self.sticky in self.members:  # never parked: see park()
            state = self.members.pop(self.sticky)[1]
            self._register_head(equivalence_key(state))
            return state
        while self.heap:
            _, version, shape = heapq.heappop(self.heap)
            if self._heads.get(shape) != version:
                continue
            entries = self.classes[shape]
            self._clean(entries)
            if not entries or entries[0][1] != version:
                self._heads.pop(shape, None)
                self._register_head(shape)
                continue
            key = heapq.heappop(entries)[2]
            self._heads.pop(shape, None)
            self._register_head(shape)
            return self.members.pop(key)[1]
        return None

    def remove(self, key: str) -> None:
        member = self.members.pop(key, None)
        if member is not None:
            self._register_head(equivalence_key(member[1]))
        if self.sticky == key:
            self.sticky = None

    def _live_in(self, groups: dict[Shape, list[_Entry]]) -> dict[str, WorkloadState]:
        return {e[2]: self.members[e[2]][1] for entries in groups.values() for e in entries if self._live(e)}

    @property
    def active(self) -> dict[str, WorkloadState]:
        return self._live_in(self.classes)

    @property
    def inadmissible(self) -> dict[str, WorkloadState]:
        parked = self._live_in(self.parked)
        if self.sticky is not None:  # also has a parked entry when its class parked (_keep_sticky_queued)
            parked.pop(self.sticky, None)
        return parked

    def pending(self) -> list[WorkloadState]:
        """Active and inadmissible workloads in heap order (the visibility API's positions)."""
        ordered = sorted(self.members.values(), key=lambda m: heap_order(m[1]))
        states = [m[1] for m in ordered]
        if self.sticky is not None:
            states.sort(key=lambda s: s.key != self.sticky)
        return states

    def __len__(self) -> int:
        return len(self.members)


class QueueManager:
    """All ClusterQueue queues plus backoff waits and scheduled requeues; time is always passed in."""

    def __init__(self) -> None:
        self.queues: dict[str, ClusterQueueQueue] = {}
        self.backoff: dict[str, WorkloadState] = {}
        self._versions = itertools.count()
        self._requeue_due: dict[str, float] = {}
        self._popped_generation: dict[str, int] = {}

    def queue(self, cq: str) -> ClusterQueueQueue:
        if (found := self.queues.get(cq)) is None:
            found = self.queues[cq] = ClusterQueueQueue(cq)
        return found

    def set_strategy(self, cq: str, strategy: QueueingStrategy) -> None:
        self.queue(cq).strategy = strategy

    def push(self, state: WorkloadState, now: float) -> None:
        """Queue ``state``; one in backoff waits until its ``requeue_at``."""
        if state.requeue_at is not None and state.requeue_at > now:
            self.backoff[state.key] = state
            return
        self.backoff.pop(state.key, None)
        self.queue(state.cluster_queue).push(state, next(self._versions))

    def pop(self, cq: str) -> WorkloadState | None:
        queue = self.queue(cq)
        state = queue.pop()
        if state is not None:
            self._popped_generation[state.key] = queue.generation
        return state

    def pop_heads(self) -> list[WorkloadState]:
        """One head per ClusterQueue, in name order (a cycle's heads); an empty queue is passed over without
        a pop, since at trace scale most queues are empty in most cycles."""
        heads = []
        for cq in sorted(self.queues):
            queue = self.queues[cq]
            if (queue.heap or queue.sticky is not None) and (state := self.pop(cq)) is not None:
                heads.append(state)
        return heads

    def requeue(self, state: WorkloadState, *, inadmissible: bool) -> None:
        """Put a popped head back: to the heap, or to the inadmissible set unless its queue was requeued since."""
        queue = self.queue(state.cluster_queue)
        popped = self._popped_generation.pop(state.key, queue.generation)
        if inadmissible and popped == queue.generation:
            queue.park(state, next(self._versions))
        else:
            queue.push(state, next(self._versions))

    def forget(self, key: str, cq: str) -> None:
        self.queue(cq).remove(key)
        self.backoff.pop(key, None)
        self._popped_generation.pop(key, None)

    def schedule_requeue(self, cqs: Iterable[str], now: float, *, popped_heads_too: bool = True) -> None:
        """A quota-freeing event: requeue these queues' inadmissible workloads after the batching delay, and
        (``popped_heads_too``) the heads popped before it, when they come back inadmissible."""
        for cq in cqs:
            if popped_heads_too:
                self.queue(cq).generation += 1
            self._requeue_due.setdefault(cq, now + REQUEUE_BATCH_SECONDS)

    def flush(self, now: float) -> list[WorkloadState]:
        """Move due requeues and finished backoffs into the heaps; returns the workloads whose backoff ended."""
        for cq, due in list(self._requeue_due.items()):
            if due <= now:
                del self._requeue_due[cq]
                self.queue(cq).unpark_all()
        woken = [s for s in self.backoff.values() if s.requeue_at is not None and s.requeue_at <= now]
        for state in sorted(woken, key=lambda s: s.key):
            del self.backoff[state.key]
            self.queue(state.cluster_queue).push(state, next(self._versions))
        return woken

    def next_wakeup(self) -> float | None:
        times = [*self._requeue_due.values(), *(s.requeue_at for s in self.backoff.values() if s.requeue_at)]
        return min(times, default=None)
