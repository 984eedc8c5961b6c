"""Waiting in tests for what another thread or process does: poll a check until it holds or a deadline passes.

Every test that waits uses these two (no private loops): ``wait_for`` fails the test with what it waited for,
``poll`` hands the last value back for tests that look at a timeout themselves. The check runs once more at
the deadline, so a loaded machine that slept past it still sees a condition that came true meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def poll(check: Callable[[], T], timeout: float, interval: float = 0.02) -> T:
    """Call ``check`` every ``interval`` seconds until it returns something truthy or ``timeout`` seconds have
    passed; its last value (falsy when it timed out)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def wait_for(check: Callable[[], T], timeout: float, what: str = "condition", interval: float = 0.02) -> T:
    """``poll``'s truthy value; ``AssertionError`` naming ``what`` when ``timeout`` seconds pass without one."""
    value = poll(check, timeout, interval)
    if not value:
        raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
    return value


__all__ = ["poll", "wait_for"]
