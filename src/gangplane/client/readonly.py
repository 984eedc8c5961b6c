"""A checking mode for objects shared by reference: informers hand every handler and reader the store's own
committed dicts (no copies), so one in-place edit anywhere would change what the store, its watch history
and every other reader see. With ``GANGPLANE_CHECK_SHARED=1`` in the environment (the test suite sets it,
and subprocesses inherit it) informers cache deeply frozen copies instead, and any mutation raises
``SharedMutation`` at the line that attempted it.

The frozen types subclass ``dict`` and ``list`` so every reader works unchanged (``isinstance``, ``json``,
``{**obj}``, pydantic); ``copy.copy``/``copy.deepcopy`` and ``dict(...)``/``list(...)`` give plain, mutable
copies of the top level, which is how a consumer edits: copy what it changes (copy-on-write).
"""

from __future__ import annotations

import os
from typing import Any, NoReturn

from gangplane.api.jsondata import clone as thaw  # a plain deep copy of frozen data too

CHECK_ENV = "GANGPLANE_CHECK_SHARED"


def checking() -> bool:
    """Whether informers freeze what they cache (read once per informer, at construction)."""
    return os.environ.get(CHECK_ENV) == "1"


class SharedMutation(TypeError):
    """An in-place edit of an object shared through an informer: copy it first."""


def _refuse(*_: Any, **__: Any) -> NoReturn:
    raise SharedMutation("informer objects are shared with the store and every reader: copy before editing")


class FrozenDict(dict[str, Any]):
    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self),)


class FrozenList(list[Any]):
    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = clear = extend = insert = pop = remove = reverse = sort = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __reduce__(self) -> tuple[Any, ...]:
        return list, (list(self),)


def freeze(value: Any) -> Any:
    """A deep copy of JSON data whose dicts and lists refuse every in-place change."""
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return FrozenList(freeze(v) for v in value)
    return value


__all__ = ["CHECK_ENV", "FrozenDict", "FrozenList", "SharedMutation", "checking", "freeze", "thaw"]
