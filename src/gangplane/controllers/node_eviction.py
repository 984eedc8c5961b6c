"""The per-zone rate limit on NoExecute tainting (kube-controller-manager's node lifecycle controller:
``zoneNoExecuteTainter``, a ``RateLimitedTimedQueue`` per zone in ``pkg/controller/nodelifecycle/scheduler``).

A node that needs a NoExecute taint it does not carry yet joins its zone's queue (once; first come, first
tainted); the head is tainted when the zone's token bucket has a token (``flowcontrol.NewTokenBucketRateLimiter
(qps, 1)``: burst 1, so a new zone taints its first node at once and then one every ``1/qps`` seconds). A rate
of 0 taints nothing (``NewFakeNeverRateLimiter``). Swapping the rate keeps an empty bucket empty
(``SwapLimiter``'s drain). A swap between the unreachable and not-ready taints, and removing them, is not
limited (``processTaintBaseEviction``). Time comes from the injected ``Clock``; this module writes nothing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from gangplane.clock import Clock

# kube-controller-manager's defaults (``--node-eviction-rate``, ``--secondary-node-eviction-rate``,
# ``--large-cluster-size-threshold``).
NODE_EVICTION_RATE = 0.1
SECONDARY_NODE_EVICTION_RATE = 0.01
LARGE_CLUSTER_SIZE_THRESHOLD = 50


@dataclass(frozen=True)
class EvictionRates:
    """The flags that set a zone's tainting rate (``setLimiterInZone``, ``ReducedQPSFunc``)."""

    node_eviction_rate: float = NODE_EVICTION_RATE
    secondary_node_eviction_rate: float = SECONDARY_NODE_EVICTION_RATE
    large_cluster_size_threshold: int = LARGE_CLUSTER_SIZE_THRESHOLD


@dataclass
class TokenBucket:
    """golang.org/x/time/rate with burst 1: ``tokens`` refill at ``qps`` up to one."""

    qps: float
    tokens: float
    at: float

    def refill(self, now: float) -> None:
        if self.qps > 0:
            self.tokens = min(1.0, self.tokens + (now - self.at) * self.qps)
        self.at = now

    def wait(self, now: float) -> float | None:
        """Seconds until a token is there (0: now); None at rate 0 (never)."""
        self.refill(now)
        if self.tokens >= 1.0:
            return 0.0
        return (1.0 - self.tokens) / self.qps if self.qps > 0 else None


class ZoneTainters:
    """Every zone's queue and bucket; thread-safe (the controller's workers share it)."""

    def __init__(self, clock: Clock, rates: EvictionRates | None = None) -> None:
        self.clock, self.rates = clock, rates or EvictionRates()
        self._buckets: dict[str, TokenBucket] = {}
        self._queues: dict[str, dict[str, None]] = {}  # zone -> node names, first added first
        self._lock = threading.Lock()

    def _bucket(self, zone: str) -> TokenBucket:
        """``addPodEvictorForNewZone``: a new zone's bucket is full, at the primary rate."""
        if zone not in self._buckets:
            self._buckets[zone] = TokenBucket(self.rates.node_eviction_rate, 1.0, self.clock.now())
        return self._buckets[zone]

    def swap(self, zone: str, qps: float) -> None:
        """``SwapLimiter``: a new rate; the new bucket starts empty when the old one was."""
        with self._lock:
            bucket, now = self._bucket(zone), self.clock.now()
            if bucket.qps == qps:
                return
            empty = bucket.wait(now) != 0.0
            self._buckets[zone] = TokenBucket(qps, 0.0 if empty or qps <= 0 else 1.0, now)

    def admit(self, zone: str, node: str) -> float | None:
        """Queue ``node`` and take a token for it when it is first in line: 0 when it may be tainted now,
        else the seconds until its turn comes at the current rate (None: never at this rate)."""
        with self._lock:
            queue = self._queues.setdefault(zone, {})
            queue.setdefault(node, None)
            bucket = self._bucket(zone)
            wait = bucket.wait(self.clock.now())
            if wait is None:
                return None
            ahead = list(queue).index(node)
            if ahead == 0 and wait == 0.0:
                bucket.tokens -= 1.0
                del queue[node]
                return 0.0
            return wait + ahead / bucket.qps

    def forget(self, node: str) -> list[str]:
        """Take ``node`` out of line (ready again, deleted); returns those now nearer their turn."""
        with self._lock:
            for queue in self._queues.values():
                if node in queue:
                    names = list(queue)
                    del queue[node]
                    return names[names.index(node) + 1 :]
            return []

    def queued(self, zone: str) -> list[str]:
        with self._lock:
            return list(self._queues.get(zone, {}))


__all__ = [
    "LARGE_CLUSTER_SIZE_THRESHOLD",
    "NODE_EVICTION_RATE",
    "SECONDARY_NODE_EVICTION_RATE",
    "EvictionRates",
    "TokenBucket",
    "ZoneTainters",
]
