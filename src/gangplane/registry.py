"""The one registry shape every plugin table uses: name -> value, in registration order, duplicates rejected.

Order is behaviour wherever a registry is iterated (runtime plugins run in it, schedulers see capacity in it),
so a registry is an explicit list, never filled by import side effects.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from typing import Generic, Self, TypeVar

V = TypeVar("V")


class NamedRegistry(Generic[V]):
    kind = "entry"  # what the values are, for messages

    def __init__(self, entries: Iterable[tuple[str, V]] = ()) -> None:
        self._entries: dict[str, V] = {}
        for name, value in entries:
            self.register(name, value)

    def register(self, name: str, value: V) -> None:
        if name in self._entries:
            raise ValueError(f"a {self.kind} named {name!r} is already registered")
        self._entries[name] = value

    def merge(self, other: NamedRegistry[V]) -> Self:
        """A new registry: this one's entries, then the other's."""
        merged = copy.copy(self)
        merged._entries = dict(self._entries)
        for name, value in other.items():
            merged.register(name, value)
        return merged

    def items(self) -> Iterator[tuple[str, V]]:
        return iter(list(self._entries.items()))

    def names(self) -> list[str]:
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __getitem__(self, name: str) -> V:
        return self._entries[name]


__all__ = ["NamedRegistry"]
