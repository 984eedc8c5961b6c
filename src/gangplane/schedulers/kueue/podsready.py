"""waitForPodsReady: Kueue's only gang guard (kueue.md §8, kueue ``workload_controller.go``).

An admitted workload whose pods are not all ready within ``timeout`` of admission (``recovery_timeout`` after
a failure) is evicted with ``PodsReadyTimeout`` and requeued after an exponential backoff:
``requeueAt = eviction + min(base * 2^(count-1), max)``. Past ``backoff_limit_count`` it is deactivated.
Kueue adds a small random jitter to the backoff; gangplane does not, so runs are reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass
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
