"""Time, injected: every component that needs "now" or a timer takes a ``Clock``.

No module outside this one reads the wall clock, so the same scheduler and controller cores run live, in the
virtual-time simulator and in unit tests.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from functools import lru_cache
from typing import Protocol


class Clock(Protocol):
    """A source of time in seconds since the epoch."""

    def now(self) -> float: ...


class WallClock:
    """The real clock."""

    def now(self) -> float:
        return time.time()


class ManualClock:
    """A clock that only moves when told to; for tests and the simulator."""

    def __init__(self, start: float = 1_767_225_600.0) -> None:  # 2026-01-01T00:00:00Z
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock never moves backwards")
        self._now += seconds

    def set(self, when: float) -> None:
        if when < self._now:
            raise ValueError("a clock never moves backwards")
        self._now = when


def to_datetime(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def rfc3339(seconds: float) -> str:
    """Kubernetes timestamp format: second precision, ``Z`` suffix."""
    return _rfc3339(seconds)


@lru_cache(maxsize=64, typed=True)
def _rfc3339(seconds: float) -> str:
    """The formatting, remembered for the last instants asked: a scheduling pass stamps many objects with
    its one ``now``, and a replayed job's pods share its arrival. Keyed by type and value, and equal values
    of one type give one timestamp, so a remembered text is the one formatting would give."""
    at = to_datetime(seconds)
    if at.year < 1000:  # ``%Y`` writes such a year unpadded; the fields below are what it writes for the rest
        return at.strftime("%Y-%m-%dT%H:%M:%SZ")
    fields = (at.year, at.month, at.day, at.hour, at.minute, at.second)
    return "%04d-%02d-%02dT%02d:%02d:%02dZ" % fields  # noqa: UP031 (a third of strftime's cost)


def parse_rfc3339(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


__all__ = ["Clock", "ManualClock", "WallClock", "parse_rfc3339", "rfc3339", "to_datetime"]
