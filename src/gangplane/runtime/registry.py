"""An explicit, ordered plugin registry where each plugin is registered at the extension points it implements.

Registry order is the order plugins run in within each phase, so it is part of the behaviour and tested.

Contracts are checked twice, so a wrong plugin can neither pass the type checker nor load:
- statically: ``plugin(name, Factory).at(BUILD, STATUS)`` type-checks only when ``Factory`` builds an object
  satisfying each phase's Protocol (``Phase`` is contravariant; mypy reports a wrong arity, a wrong type or a
  misspelled method as an incompatible ``Phase`` argument);
- at registration (so at import of a module that builds a registry): each declared phase's method exists with
  the Protocol's parameters; a method named like an extension point that is not declared, or a public method
  whose name is one typo away from an extension point, is an error naming the fix.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from gangplane.registry import NamedRegistry
from gangplane.runtime.points import PHASES, Handle, Phase

T = TypeVar("T")
PluginFactory = Callable[[Handle], Any]
_POINTS = {phase.method: phase for phase in PHASES}


class PluginContractError(TypeError):
    """A plugin that does not match the extension points it is registered at."""


@dataclass(frozen=True)
class Entry:
    name: str
    factory: PluginFactory
    phases: tuple[Phase[Any], ...]

    def implements(self, phase: Phase[Any]) -> bool:
        return phase in self.phases


@dataclass(frozen=True)
class Registration(Generic[T]):
    name: str
    factory: Callable[[Handle], T]

    def at(self, *phases: Phase[T]) -> Entry:
        """The entry running this plugin at ``phases`` (mypy checks the factory's product against each)."""
        return Entry(self.name, self.factory, phases)


def plugin(name: str, factory: Callable[[Handle], T]) -> Registration[T]:
    return Registration(name, factory)


def _parameters(function: object) -> list[tuple[str, object]]:
    params = list(inspect.signature(function).parameters.values())  # type: ignore[arg-type]
    unbound = inspect.isfunction(function)  # a plain function on the class still takes self
    return [(p.name, p.kind) for p in params[1 if unbound else 0 :]]


def _names(params: list[tuple[str, object]]) -> str:
    return ", ".join(name for name, _ in params)


def check_contract(cls: type, entry: Entry) -> None:
    """Raise ``PluginContractError`` unless ``cls`` implements exactly ``entry``'s phases, with their arity."""
    where = f"plugin {entry.name!r} ({cls.__qualname__})"
    if getattr(cls, "name", None) != entry.name:
        raise PluginContractError(
            f"{where}: registered as {entry.name!r} but calls itself {getattr(cls, 'name', None)!r}"
        )
    for phase in entry.phases:
        method = getattr(cls, phase.method, None)
        if not callable(method):
            raise PluginContractError(f"{where}: registered at {phase.method!r} but has no such method")
        have, want = _parameters(method), _parameters(getattr(phase.protocol, phase.method))
        if have != want:
            raise PluginContractError(f"{where}: {phase.method}({_names(have)}) does not match "
                                      f"{phase.protocol.__name__}.{phase.method}({_names(want)})")  # fmt: skip
    for attr in dir(cls):
        if (
            attr.startswith("_")
            or not callable(getattr(cls, attr))
            or any(attr == p.method for p in entry.phases)
        ):
            continue
        if attr in _POINTS:
            raise PluginContractError(f"{where}: implements {attr!r} but is not registered at it")
        close = difflib.get_close_matches(attr, list(_POINTS), n=1, cutoff=0.75)
        if close:
            raise PluginContractError(
                f"{where}: {attr!r} is not an extension point; did you mean {close[0]!r}?"
            )


class Registry(NamedRegistry[Entry]):
    kind = "plugin"

    def __init__(self, entries: list[Entry] | None = None) -> None:
        super().__init__((entry.name, entry) for entry in entries or ())

    def register(self, name: str, value: Entry) -> None:
        if inspect.isclass(value.factory):
            check_contract(value.factory, value)
        super().register(name, value)

    def add(self, entry: Entry) -> None:
        self.register(entry.name, entry)

    def entries(self) -> list[Entry]:
        return [entry for _, entry in self.items()]


__all__ = [
    "Entry",
    "PluginContractError",
    "PluginFactory",
    "Registration",
    "Registry",
    "check_contract",
    "plugin",
]
