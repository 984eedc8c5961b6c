"""Equal parts of different stored objects held once: the store's objects are never mutated after commit, so
a subtree equal to one already stored (a JobSet's pod template, the ``managedFields`` of every object one
manager applied alike, a container's resources) can be that same dict or list, and a string equal to one
already held the same string. ``SubtreeTable.share`` returns an equal object built that way.

The table maps the hash of a subtree's key (its items, with each child already shared and named by
identity) to the one instance, which a hit must also equal (a hash collision only costs a missed share); an
entry holds that instance and so every child its key names, which keeps the identities in its key valid.
Holding the hash rather than the key tuple itself halved the table's own memory and made sharing cheaper (a
hit compares the instance in C instead of two tuples). It keeps two generations of at most ``capacity``
entries each: a subtree found in the older one moves to the newer, and when the newer fills up the older is
dropped, so what stays in use stays shared and the table's own memory is bounded. Objects stored earlier
keep what they share. Every ``capacity // SWEEPS`` new entries, the entries nothing but the table still holds
(their objects' versions were replaced and left the watch history) are dropped: a past status or condition
list never recurs in a new object, and the table pinned up to a generation of them (1.7 MiB of subtrees after
the memory benchmark's 1,000 TrainJobs). Dropping an entry only forgoes a later share; no object changes.

Within one object no instance is used twice, so a deep copy of one object (``copy.deepcopy`` and pickle
memoize by identity) never ties two of its own parts together. The parts a write left unchanged from the
previous version (``objects.sharing_unchanged``), at any depth, are kept as they are without walking them
again (a binding changes ``spec.nodeName``: the containers stay the previous version's instances), so
versions keep sharing them.
"""

from __future__ import annotations

import sys
from typing import Any

from gangplane.store.base import Object
from gangplane.store.compact import COMPACT_TYPES
from gangplane.store.objects import TypeKey

DEFAULT_CAPACITY = 10_000
SWEEPS = 4  # sweeps for entries only the table holds per generation filled
# sys.getrefcount of an entry nothing else holds, inside _sweep: the table's dict, the loop's name, the argument
_ONLY_THE_TABLE = 3
Key = tuple[Any, ...]
# metadata values no other object holds (a dependent's ownerReference takes its owner's uid string itself):
# interning them would only grow the interpreter's table of interned strings by one entry per object
_OWN_VALUES = frozenset({"uid", "resourceVersion"})


class SubtreeTable:
    """Shares subtrees across the objects passed to ``share``; not thread-safe (the engine's lock guards it)."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        # keyed by the hash of a subtree's key: an int per entry, not a tuple as long as the subtree
        self._young: dict[int, Any] = {}
        self._old: dict[int, Any] = {}
        self._kept: dict[int, Any] = {}  # during ``share``: the previous version's parts it keeps, by id
        self._until_sweep = max(1, capacity // SWEEPS)  # new entries left before the next ``_sweep``

    def __len__(self) -> int:
        return len(self._young) + len(self._old)

    def share(self, obj: Object, previous: Object | None = None) -> Object:
        """An object equal to ``obj`` (same key order) made of instances already held where equal; the parts
        that are ``previous``'s own instances at the same place, at any depth, are kept as they are."""
        used: set[int] = set()
        kept = _unchanged(obj, previous)
        for part in kept.values():
            _mark(part, used)
        self._kept = kept
        try:
            out = {}
            for k, v in obj.items():
                if k == "metadata" and isinstance(v, dict):
                    out[sys.intern(k)] = {
                        sys.intern(f): x if f in _OWN_VALUES else self._value(x, used) for f, x in v.items()
                    }
                else:
                    out[sys.intern(k)] = self._value(v, used)
            return out
        finally:
            self._kept = {}

    def stored(self, tk: TypeKey, obj: Object, previous: Object | None = None) -> Object:
        """``share`` for an object the store is about to hold; Events, held encoded, are left alone."""
        return obj if tk in COMPACT_TYPES else self.share(obj, previous)

    def _value(self, value: Any, used: set[int]) -> Any:
        """``value`` shared; scalars are handled inline (most nodes are), containers recursively (a part kept
        from the previous version as it is)."""
        if self._kept and self._kept.pop(id(value), None) is not None:  # once: no instance used twice
            return value
        if type(value) is dict:
            items: dict[str, Any] = {}
            key: list[Any] = ["d"]
            for k, v in value.items():
                k = sys.intern(k)
                v, named = self._child(v, used)
                items[k] = v
                key += (k, named)
            return self._one(tuple(key), items, used)
        if type(value) is list:
            elements, key = [], ["l"]
            for v in value:
                v, named = self._child(v, used)
                elements.append(v)
                key.append(named)
            return self._one(tuple(key), elements, used)
        return sys.intern(value) if type(value) is str else value

    def _child(self, value: Any, used: set[int]) -> tuple[Any, Any]:
        """The shared child and what names it in its parent's key: a string itself; a dict or list by
        identity (the table entry holding the parent holds it); another scalar with its type, so 1, 1.0 and
        True differ."""
        kind = type(value)
        if kind is str:
            value = sys.intern(value)
            return value, value
        if kind is dict or kind is list:
            value = self._value(value, used)
            return value, id(value)
        return value, (kind, value)

    def _one(self, key: Key, built: Any, used: set[int]) -> Any:
        digest = hash(key)
        found = self._young.get(digest)
        if found is None:
            found = self._old.pop(digest, None)
            if found is None:
                found = built
                self._until_sweep -= 1
            self._young[digest] = found
            if self._until_sweep <= 0:
                self._sweep()
            if len(self._young) >= self._capacity:
                self._old, self._young = self._young, {}
        if id(found) in used or (found is not built and not _same(found, built)):  # used, or a collision
            return built
        used.add(id(found))
        return found

    def _sweep(self) -> None:
        """Drop the entries nothing but the table holds. Newest first: a parent is entered after its
        children, so dropping it frees them, and they are found unheld later in the same pass."""
        self._until_sweep = max(1, self._capacity // SWEEPS)
        for generation in (self._old, self._young):
            for digest in list(reversed(generation.keys())):
                entry = generation[digest]
                if sys.getrefcount(entry) <= _ONLY_THE_TABLE:
                    del generation[digest]
            entry = None


def _same(found: Any, built: Any) -> bool:
    """Whether the table's ``found`` can stand for ``built``: equal, in the same key order. Equal hashes
    of their keys make this all but certain; it is checked so a hash collision can never change an object."""
    return found == built and (type(built) is list or list(found) == list(built))


_ABSENT = object()


def _unchanged(obj: Object, previous: Object | None) -> dict[int, Any]:
    """The containers ``obj`` took from ``previous`` as they were, by identity, at any depth: the walk
    follows the fields both have and stops at a part taken whole, so it costs what changed."""
    found: dict[int, Any] = {}
    if previous is not None:
        _same_parts(obj, previous, found)
        found.pop(id(obj), None)  # the object itself is always built anew
    return found


def _same_parts(new: Any, old: Any, found: dict[int, Any]) -> None:
    if type(new) is dict and type(old) is dict:
        if new is old:
            found[id(new)] = new
            return
        for k, v in new.items():
            was = old.get(k, _ABSENT)
            if was is not _ABSENT:
                _same_parts(v, was, found)
    elif type(new) is list and type(old) is list:
        if new is old:
            found[id(new)] = new
            return
        for v, was in zip(new, old, strict=False):
            _same_parts(v, was, found)


def _mark(value: Any, used: set[int]) -> None:
    """Count every container in ``value`` as used by the object being shared."""
    if type(value) is dict:
        used.add(id(value))
        for v in value.values():
            _mark(v, used)
    elif type(value) is list:
        used.add(id(value))
        for v in value:
            _mark(v, used)


__all__ = ["DEFAULT_CAPACITY", "SubtreeTable"]
