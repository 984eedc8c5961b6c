"""The event heap: ``(time, kind, sequence)`` ordered, so equal instants replay in one fixed order.

At one instant, completions and failures free nodes before arrivals join the queue, and explicit cycle
wake-ups come last; the engine runs one scheduling cycle after the whole batch. Cancelled events (a
completion whose job was preempted) are skipped lazily by an epoch number per job.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from enum import IntEnum


class EventKind(IntEnum):
    COMPLETION = 0
    FAILURE = 1
    ARRIVAL = 2
    CYCLE = 3


@dataclass(slots=True)
class EventQueue:
    _heap: list[tuple[float, int, int, int, int]] = field(default_factory=list)
    _sequence: int = 0

    def push(self, when: float, kind: EventKind, job_id: int = -1, epoch: int = 0) -> None:
        self._sequence += 1
        heapq.heappush(self._heap, (when, int(kind), self._sequence, job_id, epoch))

    def peek_time(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def due(self, now: float, before: EventKind) -> bool:
        """Whether the earliest event is at ``now`` and of a kind ordered before ``before``."""
        return bool(self._heap) and self._heap[0][0] == now and self._heap[0][1] < before

    def pop(self) -> tuple[float, EventKind, int, int]:
        """``(time, kind, job_id, epoch)`` of the earliest event."""
        when, kind, _, job_id, epoch = heapq.heappop(self._heap)
        return when, EventKind(kind), job_id, epoch

    def __len__(self) -> int:
        return len(self._heap)


__all__ = ["EventKind", "EventQueue"]
