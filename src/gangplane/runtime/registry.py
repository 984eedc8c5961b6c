"""An explicit, ordered plugin registry: name -> factory, duplicates rejected.

Registry order is the order plugins run in within each phase, so it is part of the behaviour and tested.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from gangplane.runtime.points import Handle

PluginFactory = Callable[[Handle], Any]


class Registry:
    def __init__(self, entries: list[tuple[str, PluginFactory]] | None = None) -> None:
        self._entries: dict[str, PluginFactory] = {}
        for name, factory in entries or []:
            self.register(name, factory)

    def register(self, name: str, factory: PluginFactory) -> None:
        if name in self._entries:
            raise ValueError(f"a plugin named {name!r} is already registered")
        self._entries[name] = factory

    def merge(self, other: Registry) -> Registry:
        """A new registry: this one's plugins, then the other's."""
        merged = Registry(list(self.items()))
        for name, factory in other.items():
            merged.register(name, factory)
        return merged

    def items(self) -> Iterator[tuple[str, PluginFactory]]:
        return iter(self._entries.items())

    def names(self) -> list[str]:
        return list(self._entries)
