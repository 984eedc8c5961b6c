"""The in-memory backend: the engine with a journal that keeps nothing. Everything is lost on close."""

from __future__ import annotations

import random

from gangplane.clock import Clock
from gangplane.store.base import Admission, Object, ResourceType
from gangplane.store.core import ObjectStore
from gangplane.store.history import DEFAULT_HISTORY_BYTES
from gangplane.store.objects import Key


class _NoJournal:
    """Durability of the in-memory store: none; the version counter starts at 0."""

    def load(self) -> tuple[int, list[tuple[ResourceType, Object]]]:
        return 0, []

    def put(self, rt: ResourceType, obj: Object, rv: int, body: str) -> None:
        pass

    def remove(self, rt: ResourceType, key: Key, rv: int) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class MemoryStore(ObjectStore):
    """A ``Store`` held in process memory. ``history_size`` bounds watch resume; ``rng`` seeds uids and
    generated names; ``bookmark_interval`` is the idle time after which a bookmarking watch gets one."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        admission: Admission | None = None,
        history_size: int = 10_000,
        history_bytes: int = DEFAULT_HISTORY_BYTES,
        rng: random.Random | None = None,
        bookmark_interval: float = 1.0,
    ) -> None:
        super().__init__(
            _NoJournal(),
            clock=clock,
            admission=admission,
            history_size=history_size,
            history_bytes=history_bytes,
            rng=rng,
            bookmark_interval=bookmark_interval,
        )
