"""The store contract: Kubernetes object semantics over plain JSON dicts.

Objects are unstructured ``dict``s exactly as they travel on the wire (camelCase keys), so nothing a client
sends is ever dropped. Every backend (memory, SQLite) implements ``Store`` with the same semantics, checked by
one conformance suite:

- ``metadata.resourceVersion`` is a decimal string from one monotonic counter per store; it survives restarts
  of durable backends. ``uid`` and ``creationTimestamp`` are set on create; ``generation`` starts at 1 and is
  bumped only when something outside ``metadata`` and ``status`` changes.
- ``update`` with a ``resourceVersion`` that is not the stored one raises ``Conflict``; without one it is an
  unconditional write. ``update`` ignores ``status`` for kinds with a status subresource; ``update_status``
  changes only ``status``.
- ``delete`` of an object with finalizers only sets ``deletionTimestamp``; the object goes when an update
  empties ``finalizers``. Dependents (``ownerReferences``) are garbage-collected: ``Background`` deletes the
  owner first then its dependents, ``Foreground`` adds the ``foregroundDeletion`` finalizer to the owner and
  removes it once every dependent with ``blockOwnerDeletion`` is gone, ``Orphan`` strips the owner references.
- A pod bound to a node an agent serves is deleted gracefully (``graceful.py``): ``delete`` marks it with
  ``deletionTimestamp`` and ``deletionGracePeriodSeconds`` and it stays until a delete with grace 0 (the
  agent's, once its processes stopped, or ``--grace-period=0 --force``).
- ``watch`` delivers ADDED / MODIFIED / DELETED events in resourceVersion order, starting after the given
  resourceVersion; a version older than the kept history raises ``Gone`` (410).
- Admission (defaulting and validation) is injected by the layer above as an ``Admission`` callable; the
  store itself knows nothing about TrainJobs.

The store must not read or write anything outside its own database file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from gangplane.api.jsondata import Object as Object  # re-exported: the one alias


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One served resource: what discovery lists and what every store call is keyed by."""

    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    has_status: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_kind(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind


class Operation(StrEnum):
    CREATE = "CREATE"
    UPDATE = "UPDATE"
    DELETE = "DELETE"


# Called before every write with (type, operation, new object, old object or None); returns the object to
# store (defaulted) or raises ``errors.Invalid`` / ``errors.Forbidden``. Must not write to the store. It may
# report warnings for the client with ``warn`` (the API server sends them as ``Warning`` headers).
Admission = Callable[[ResourceType, Operation, Object, Object | None], Object]


@runtime_checkable
class PassingAdmission(Protocol):
    """An ``Admission`` that can tell, reading its arguments only, that it would store ``new`` unchanged: the
    store then neither copies the objects for it nor calls it (most writes of a running cluster are status
    writes that no admission changes)."""

    def passes(self, rt: ResourceType, op: Operation, new: Object, old: Object | None) -> bool: ...


_WARNINGS: ContextVar[list[str] | None] = ContextVar("gangplane_admission_warnings", default=None)


def warn(message: str) -> None:
    """Report an admission warning to whoever is ``collecting_warnings`` in this context (else dropped)."""
    sink = _WARNINGS.get()
    if sink is not None and message not in sink:
        sink.append(message)


@contextlib.contextmanager
def collecting_warnings() -> Iterator[list[str]]:
    """The warnings admission reports while the block runs (in this thread and context)."""
    found: list[str] = []
    token = _WARNINGS.set(found)
    try:
        yield found
    finally:
        _WARNINGS.reset(token)


class EventType(StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    BOOKMARK = "BOOKMARK"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: EventType
    object: Object
    resource_version: int


class Propagation(StrEnum):
    BACKGROUND = "Background"
    FOREGROUND = "Foreground"
    ORPHAN = "Orphan"


@dataclass(frozen=True, slots=True)
class ListOptions:
    """Filters shared by list, watch and deletecollection."""

    namespace: str | None = None  # None: all namespaces
    label_selector: str = ""  # Kubernetes selector syntax: a=b, a!=b, a in (x,y), !a, a
    field_selector: str = ""  # metadata.name, metadata.namespace, spec.nodeName, status.phase
    limit: int = 0  # 0: no limit
    continue_token: str = ""


@dataclass(frozen=True, slots=True)
class ObjectList:
    items: list[Object]
    resource_version: str
    continue_token: str = ""
    remaining: int | None = None


@dataclass(slots=True)
class Watch:
    """An open watch; iterate to receive events, ``close`` to stop. Thread-safe to close from elsewhere.
    ``ready``: how many events the next iterations would return without waiting (0 when unknown)."""

    events: Iterator[WatchEvent]
    close: Callable[[], None] = field(default=lambda: None)
    ready: Callable[[], int] = field(default=lambda: 0)

    def __iter__(self) -> Iterator[WatchEvent]:
        return self.events


class Store(Protocol):
    """One interface, several backends. All methods are thread-safe."""

    def get(self, rt: ResourceType, namespace: str, name: str) -> Object: ...

    def list(self, rt: ResourceType, options: ListOptions = ListOptions()) -> ObjectList: ...

    # ``dry_run`` (the API's ``dryRun=All``): admit, default and check the write fully, store nothing.
    def create(self, rt: ResourceType, obj: Object, *, dry_run: bool = False) -> Object: ...

    def update(self, rt: ResourceType, obj: Object, *, dry_run: bool = False) -> Object: ...

    def update_status(self, rt: ResourceType, obj: Object, *, dry_run: bool = False) -> Object: ...

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        patch: Any,
        patch_type: str,
        *,
        subresource: str = "",
        field_manager: str = "",
        force: bool = False,
        dry_run: bool = False,
    ) -> Object: ...

    def delete(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        *,
        propagation: Propagation = Propagation.BACKGROUND,
        preconditions: Mapping[str, str] | None = None,
        dry_run: bool = False,
        grace_period: int | None = None,
    ) -> Object:
        """``grace_period`` is ``DeleteOptions.gracePeriodSeconds``; only pods have a graceful deletion
        (``graceful.py``)."""
        ...

    def delete_collection(
        self,
        rt: ResourceType,
        options: ListOptions = ListOptions(),
        *,
        propagation: Propagation = Propagation.BACKGROUND,
    ) -> ObjectList:
        """Delete every object ``list(rt, options)`` would return (ignoring limit/continue); returns them as
        ``delete`` returned each (final state, or marked with ``deletionTimestamp`` if finalizers remain)."""
        ...

    def watch(
        self,
        rt: ResourceType,
        options: ListOptions = ListOptions(),
        resource_version: str = "",
        *,
        bookmarks: bool = False,
        timeout: float | None = None,
    ) -> Watch: ...

    def close(self) -> None: ...
