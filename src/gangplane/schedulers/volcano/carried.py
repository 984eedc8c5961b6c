"""Answers a kept session's queue book and ``enqueue`` give each pass, carried to the next pass while what
each is computed from is the very same objects.

A kept session's queue vectors (a queue's demand sums, its deserved share and real capability, the cluster
total) are replaced, never changed in place, when they move; most passes move one queue or none, so most
answers recur. Every input is held here with its answer, so its id cannot be reused by another object, and
the vectors handed out are read-only, so nobody changes a shared answer in place. A book without a kept
session gets an empty ``Carried`` of its own (``filling.LastFilling``): its answers only recur within the
pass.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import is_

from gangplane.schedulers.volcano import vec
from gangplane.schedulers.volcano.proportion import QueuePolicy
from gangplane.schedulers.volcano.vec import Vec

OrderKey = tuple[int, float, int, tuple[str, str]]
Room = tuple[Vec, Vec | None]  # the overcommit's used and idle vectors


class Carried:
    """Per queue, its QueueOrder key and its Overused answer; for enqueue, the Inqueue sum over the leaf
    queues, the overcommit room (what the nodes hold, and the total times the factor less that) and the
    overcommit verdict of each ``minResources`` shape at that sum and room."""

    def __init__(self) -> None:
        # by queue: (allocated, deserved, policy, share policy) and the key they give
        self.order_keys: dict[str, tuple[Vec, Vec, QueuePolicy, object, OrderKey]] = {}
        self.overused: dict[str, tuple[Vec, Vec, bool]] = {}  # by queue: (bound, allocated, answer)
        self._inqueue: tuple[list[Vec], Vec] | None = None
        self._room: tuple[bytes, tuple[object, ...], Room] | None = None
        self._verdicts: tuple[Vec, Vec | None, dict[bytes, bool]] = (_NONE, None, {})

    def inqueue_sum(self, parts: list[Vec], dims: int) -> Vec:
        """``sum(parts, start=zeros(dims))``, the same additions in the same order, kept while the parts
        are the same vectors in the same order."""
        found = self._inqueue
        if found is not None and len(found[0]) == len(parts) and all(map(is_, found[0], parts)):
            return found[1]
        total = sum(parts, start=vec.zeros(dims))
        total.flags.writeable = False
        self._inqueue = (parts, total)
        return total

    def room(self, requested: bytes, inputs: tuple[object, ...], compute: Callable[[], Room]) -> Room:
        """``compute()`` (the overcommit's used and idle vectors), kept while the nodes' requested matrix
        holds the same bytes and ``inputs`` (the total, the factor, the resource index) are the same
        objects."""
        found = self._room
        if (
            found is not None
            and found[0] == requested
            and len(found[1]) == len(inputs)
            and all(map(is_, found[1], inputs))
        ):
            return found[2]
        answer = compute()
        for vector in answer:
            if vector is not None:
                vector.flags.writeable = False
        self._room = (requested, inputs, answer)
        return answer

    def verdicts(self, inqueue: Vec, idle: Vec | None) -> dict[bytes, bool]:
        """The verdicts known at this Inqueue sum and room (by shape): a new dict once either moved."""
        found = self._verdicts
        if found[0] is not inqueue or found[1] is not idle:
            self._verdicts = found = (inqueue, idle, {})
        return found[2]


_NONE = vec.zeros(0)  # no Inqueue sum answered yet (held: its id is never another's)

__all__ = ["Carried", "OrderKey"]
