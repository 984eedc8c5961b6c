"""What the engine needs from a backend to make its changes durable (``sqlite.py``; none in memory)."""

from __future__ import annotations

from typing import Protocol

from gangplane.store.base import Object, ResourceType
from gangplane.store.objects import Key


class Journal(Protocol):
    """Durability for the engine. ``put`` (given the object and its validated JSON ``body``) and ``remove``
    buffer a change, in version order; ``flush`` makes everything buffered durable in one transaction (or
    raises, having kept none of it); ``load`` returns the last committed version and every stored object
    with its type, leaving out (quarantining) rows it cannot serve."""

    def load(self) -> tuple[int, list[tuple[ResourceType, Object]]]: ...

    def put(self, rt: ResourceType, obj: Object, rv: int, body: str) -> None: ...

    def remove(self, rt: ResourceType, key: Key, rv: int) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


__all__ = ["Journal"]
