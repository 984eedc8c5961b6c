"""waitForPodsReady: Kueue's only gang guard (kueue.md §8, kueue ``workload_controller.go``).

An admitted workload whose pods are not all ready within ``timeout`` of admission (``recovery_timeout`` after
a failure) is evicted with ``PodsReadyTimeout`` and requeued after an exponential backoff:
``requeueAt = eviction + min(base * 2^(count-1), max)``. Past ``backoff_limit_count`` it is deactivated.
Kueue adds a small random jitter to the backoff; gangplane does not, so runs are reproducible.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from enum import StrEnum


class RequeuingTimestamp(StrEnum):
    EVICTION = "Eviction"
    CREATION = "Creation"


@dataclass(frozen=True)
class WaitForPodsReady:
    """Defaults of Kueue >= 0.19, where it is on unless ``DisableWaitForPodsReady`` is set."""

    enabled: bool = True
    timeout: float = 1800.0
    recovery_timeout: float | None = 1800.0
    block_admission: bool = False
    timestamp: RequeuingTimestamp = RequeuingTimestamp.EVICTION
    backoff_limit_count: int | None = None
    backoff_base_seconds: float = 60.0
    backoff_max_seconds: float = 3600.0


def backoff_seconds(config: WaitForPodsReady, count: int) -> float:
    """Delay before the ``count``-th requeue (count >= 1)."""
    return float(min(config.backoff_base_seconds * 2 ** (count - 1), config.backoff_max_seconds))


def exceeds_backoff_limit(config: WaitForPodsReady, count: int) -> bool:
    return config.backoff_limit_count is not None and count > config.backoff_limit_count


def pods_ready_deadline(
    config: WaitForPodsReady, admitted_at: float, recovering_since: float | None
) -> float:
    """When an admitted workload without ready pods is evicted."""
    if recovering_since is not None and config.recovery_timeout is not None:
        return recovering_since + config.recovery_timeout
    return admitted_at + config.timeout


@dataclass
class ReadinessDeadlines:
    """The admitted workloads whose pods are not all ready, with their deadlines, kept up to date per workload
    as it changes, so a pass costs what changed and not every admitted workload: the earliest deadline and the
    due ones come off a heap (entries of a changed deadline are dropped lazily)."""

    deadlines: dict[str, float] = field(default_factory=dict)
    _heap: list[tuple[float, str]] = field(default_factory=list)

    def set(self, key: str, deadline: float | None) -> None:
        """``key``'s deadline, or None once it is ready, gone, or no longer admitted."""
        if deadline is None:
            self.deadlines.pop(key, None)
        elif self.deadlines.get(key) != deadline:
            self.deadlines[key] = deadline
            heapq.heappush(self._heap, (deadline, key))
        if len(self._heap) > 2 * len(self.deadlines) + 64:  # mostly stale: rebuild, amortised O(1)
            self._heap = [(d, k) for k, d in self.deadlines.items()]
            heapq.heapify(self._heap)

    def earliest(self) -> float | None:
        heap = self._heap
        while heap and self.deadlines.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def due(self, now: float) -> list[str]:
        """The workloads whose deadline has passed, by key, taken off."""
        keys = []
        while (earliest := self.earliest()) is not None and earliest <= now:
            keys.append(heapq.heappop(self._heap)[1])
            del self.deadlines[keys[-1]]
        return sorted(keys)

    def __len__(self) -> int:
        return len(self.deadlines)
