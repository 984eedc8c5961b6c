"""A de-duplicating, rate-limited work queue on an injected clock (client-go ``workqueue`` semantics).

Contract:
- a key is queued at most once; adding a key that is being processed marks it dirty, and ``done`` queues it
  again, so one key is never processed by two workers at once and no change is lost;
- ``add_after`` delays a key by clock time; the earliest pending deadline of a key wins;
- ``add_rate_limited`` delays by a per-key exponential back-off (``base_delay * 2**(failures-1)``, capped at
  ``max_delay``) until ``forget`` resets it;
- ``get`` blocks (real time, at most ``timeout``) until a key is ready or the queue shuts down.

Delays are measured on the injected ``Clock``: under a ``ManualClock`` a delayed key becomes ready only after
the test advances the clock, and ``get(timeout=0)`` then returns it.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from gangplane.clock import Clock, WallClock

K = TypeVar("K", bound=Hashable)

# Another clock moves without telling the queue (a test advances it): re-check delayed keys this often (seconds
# of real time) while blocked. A wall clock's waiter sleeps until the earliest key is due (an earlier one
# notifies it), waking at least every _WALL_RECHECK in case the wall clock was set forward.
_POLL = 0.05
_WALL_RECHECK = 5.0


class WorkQueue(Generic[K]):
    def __init__(self, clock: Clock, *, base_delay: float = 0.005, max_delay: float = 60.0) -> None:
        self._clock = clock
        self._base, self._max = base_delay, max_delay
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._delayed: list[tuple[float, int, K]] = []
        self._due: dict[K, float] = {}
        self._failures: dict[K, int] = {}
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._shutdown = False

    def add(self, key: K) -> None:
        with self._cond:
            self._add_locked(key)

    def _add_locked(self, key: K) -> None:
        if self._shutdown or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.append(key)
            self._cond.notify()

    def add_after(self, key: K, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            due = self._clock.now() + delay
            if self._shutdown or self._due.get(key, float("inf")) <= due:
                return
            self._due[key] = due
            heapq.heappush(self._delayed, (due, next(self._seq), key))
            self._cond.notify()

    def add_rate_limited(self, key: K) -> None:
        with self._cond:
            failures = self._failures[key] = self._failures.get(key, 0) + 1
        self.add_after(key, min(self._base * 2 ** (failures - 1), self._max))

    def forget(self, key: K) -> None:
        with self._cond:
            self._failures.pop(key, None)

    def failures(self, key: K) -> int:
        with self._cond:
            return self._failures.get(key, 0)

    def get(self, timeout: float | None = None) -> K | None:
        """The next ready key (now marked processing; call ``done``), or None on timeout or shutdown."""
        with self._cond:
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                self._promote_due()
                if self._queue:
                    key = self._queue.popleft()
                    self._dirty.discard(key)
                    self._processing.add(key)
                    return key
                left = None if deadline is None else deadline - time.monotonic()
                if self._shutdown or (left is not None and left <= 0):
                    return None
                self._cond.wait(self._wait_step() if left is None else min(self._wait_step(), left))

    def _wait_step(self) -> float:
        """How long a blocked ``get`` may sleep before the earliest delayed key could be due."""
        if not isinstance(self._clock, WallClock):
            return _POLL
        if not self._delayed:
            return _WALL_RECHECK
        return min(max(self._delayed[0][0] - self._clock.now(), 0.001), _WALL_RECHECK)

    def _promote_due(self) -> None:
        now = self._clock.now()
        while self._delayed and self._delayed[0][0] <= now:
            due, _, key = heapq.heappop(self._delayed)
            if self._due.get(key) == due:
                del self._due[key]
                self._add_locked(key)

    def done(self, key: K) -> None:
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._cond.notify()

    def next_due(self) -> float | None:
        """Clock time of the earliest delayed key, if any (the simulator and tests advance to it)."""
        with self._cond:
            return min(self._due.values(), default=None)

    def shutdown(self) -> None:
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()

    @property
    def shutting_down(self) -> bool:
        return self._shutdown

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

    def idle(self) -> bool:
        """True when nothing is queued or being processed (delayed keys do not count)."""
        with self._cond:
            return not self._queue and not self._processing


__all__ = ["WorkQueue"]
