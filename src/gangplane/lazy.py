"""Package exports imported on first use (PEP 562), so importing one light submodule (``store.base``,
``server.home``) does not load a whole package's backends, server or models; the CLI's start-up depends on it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports ``table[name]`` (a module) and returns its
    ``name``, then keeps it in the package so the next lookup is a plain attribute."""

    def __getattr__(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(table[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


__all__ = ["exports"]
