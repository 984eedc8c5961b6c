"""Writes made durable together: a thread that writes several objects in a row (a batch of bindings, the
Events queued behind one another) buffers them in the in-process store's cache and commits them in one
journal transaction (``Engine.deferred`` + ``sync``), instead of one transaction each."""

from __future__ import annotations

import contextlib
from typing import Protocol

from gangplane.errors import ApiError
from gangplane.store.base import Store
from gangplane.store.core import ObjectStore


class GroupWrites(Protocol):
    """A store whose writes can be buffered and made durable together (``Engine.deferred`` + ``sync``)."""

    epoch: int  # counts failed transactions: a write that saw it change may have been lost

    def deferred(self, *, borrow: bool = False) -> contextlib.AbstractContextManager[None]: ...

    def sync(self) -> None: ...


def group_writes_of(store: Store) -> GroupWrites | None:
    """``store`` if it is the in-process store (whose writes can share a transaction), else None."""
    return store if isinstance(store, ObjectStore) else None


def durable(group: GroupWrites, epoch: int) -> Exception | None:
    """Make what ``group`` buffered durable; the failure that lost it, if any (also when another thread's
    transaction that carried it failed since ``epoch``)."""
    try:
        group.sync()
    except Exception as exc:
        return exc
    if group.epoch != epoch:
        return ApiError("the store could not commit these writes (a transaction failed)")
    return None
