"""What the engine stamps on a create: the uid (a version-4 UUID from its random source) and the
creationTimestamp (the clock's second), formatted without the ``uuid`` and ``datetime`` round trips."""

from __future__ import annotations

import random
import uuid

from gangplane.clock import ManualClock, rfc3339
from gangplane.store import MemoryStore
from gangplane.store.objects import uuid4_text

from .conftest import POD, pod


def test_uuid4_text_is_the_uuid_modules_version_4_text() -> None:
    rng = random.Random(17)
    for bits in [0, 2**128 - 1, *(rng.getrandbits(128) for _ in range(2000))]:
        assert uuid4_text(bits) == str(uuid.UUID(int=bits, version=4))


def test_creation_timestamps_follow_the_clock_second_by_second() -> None:
    clock = ManualClock(1_767_225_600.25)
    store = MemoryStore(clock=clock)
    stamps = []
    for step in (0.0, 0.5, 0.2, 1.0, 59.0, 3600.0):
        clock.advance(step)
        created = store.create(POD, pod(f"p{len(stamps)}"))
        stamps.append(created["metadata"]["creationTimestamp"])
        assert stamps[-1] == rfc3339(clock.now())
    assert stamps[:3] == ["2026-01-01T00:00:00Z"] * 3
    assert stamps[3:] == ["2026-01-01T00:00:01Z", "2026-01-01T00:01:00Z", "2026-01-01T01:01:00Z"]
