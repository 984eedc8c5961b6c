"""The work queue: de-duplication, processing exclusivity, delays on the injected clock, back-off."""

from __future__ import annotations

import threading
import time

from gangplane.client.workqueue import WorkQueue
from gangplane.clock import ManualClock, WallClock


def test_a_key_added_twice_is_processed_once() -> None:
    q: WorkQueue[str] = WorkQueue(ManualClock())
    q.add("a")
    q.add("a")
    q.add("b")
    assert [q.get(0), q.get(0), q.get(0)] == ["a", "b", None]


def test_a_key_added_while_processing_comes_back_after_done() -> None:
    q: WorkQueue[str] = WorkQueue(ManualClock())
    q.add("a")
    assert q.get(0) == "a"
    q.add("a")
    assert q.get(0) is None  # never handed to a second worker while the first holds it
    q.done("a")
    assert q.get(0) == "a"


def test_delays_follow_the_injected_clock() -> None:
    clock = ManualClock()
    q: WorkQueue[str] = WorkQueue(clock)
    q.add_after("late", 10)
    q.add_after("early", 5)
    q.add_after("late", 20)  # a later deadline does not postpone the earlier one
    assert q.get(0) is None
    assert q.next_due() == clock.now() + 5
    clock.advance(5)
    assert q.get(0) == "early"
    clock.advance(5)
    assert q.get(0) == "late"


def test_rate_limited_keys_back_off_exponentially_until_forgotten() -> None:
    clock = ManualClock()
    q: WorkQueue[str] = WorkQueue(clock, base_delay=1, max_delay=3)
    delays = []
    for _ in range(4):
        start = clock.now()
        q.add_rate_limited("k")
        due = q.next_due()
        assert due is not None
        delays.append(due - start)
        clock.set(due)
        assert q.get(0) == "k"
        q.done("k")
    assert delays == [1, 2, 3, 3]
    q.forget("k")
    assert q.failures("k") == 0


def test_shutdown_wakes_blocked_getters() -> None:
    q: WorkQueue[str] = WorkQueue(ManualClock())
    got: list[str | None] = []
    worker = threading.Thread(target=lambda: got.append(q.get()))
    worker.start()
    q.shutdown()
    worker.join(timeout=2)
    assert got == [None]


class _CountingCondition(threading.Condition):
    """A condition that counts how often its waiters woke."""

    def __init__(self) -> None:
        super().__init__()
        self.wakeups = 0

    def wait(self, timeout: float | None = None) -> bool:
        self.wakeups += 1
        return super().wait(timeout)


def test_an_idle_wall_clock_queue_sleeps_instead_of_polling() -> None:
    """An idle cluster uses no CPU: a worker blocked on an empty queue is not woken every 50 ms."""
    queue: WorkQueue[str] = WorkQueue(WallClock())
    queue._cond = counting = _CountingCondition()  # the wake-ups are what is measured
    assert queue.get(timeout=0.5) is None
    assert counting.wakeups <= 2


def test_a_wall_clock_delayed_key_comes_when_due_and_an_earlier_one_wakes_the_waiter() -> None:
    queue: WorkQueue[str] = WorkQueue(WallClock())
    queue.add_after("late", 30.0)
    got: list[tuple[str | None, float]] = []
    started = time.monotonic()
    waiter = threading.Thread(target=lambda: got.append((queue.get(timeout=10), time.monotonic() - started)))
    waiter.start()
    time.sleep(0.05)
    queue.add_after("soon", 0.2)  # earlier than the key the waiter sleeps towards
    waiter.join(timeout=10)
    ((key, waited),) = got
    assert key == "soon" and 0.15 <= waited < 5.0
