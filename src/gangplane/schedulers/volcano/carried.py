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
from itertools import compress
from operator import is_not

import numpy as np
import numpy.typing as npt

from gangplane.schedulers.core.resources import ResourceIndex, Vector
from gangplane.schedulers.core.snapshot import Matrix
from gangplane.schedulers.volcano import vec
from gangplane.schedulers.volcano.proportion import QueuePolicy
from gangplane.schedulers.volcano.vec import Vec

OrderKey = tuple[int, float, int, tuple[str, str]]
Room = tuple[Vec, Vec | None]  # the overcommit's used and idle vectors
ShapeRows = tuple[Vec, npt.NDArray[np.bool_]]  # minResources shapes as rows, and where each is not positive


class Carried:
    """Per queue, its QueueOrder key and its Overused answer; for enqueue, the Inqueue sum over the leaf
    queues, the overcommit room (what the nodes hold, and the total times the factor less that) and the
    lined ``minResources`` shapes as rows."""

    def __init__(self) -> None:
        # by queue: (allocated, deserved, policy, share policy) and the key they give
        self.order_keys: dict[str, tuple[Vec, Vec, QueuePolicy, object, OrderKey]] = {}
        self.overused: dict[str, tuple[Vec, Vec, bool]] = {}  # by queue: (bound, allocated, answer)
        self._inqueue: tuple[list[Vec], list[bytes], Vec, int] | None = None
        self._room: tuple[bytes, Vec, float | None, Room] | None = None
        self._shapes: tuple[set[bytes], ResourceIndex, list[bytes], Vec, npt.NDArray[np.bool_]] | None = None

    def inqueue_sum(self, parts: list[Vec], dims: int) -> Vec:
        """``sum(parts, start=zeros(dims))``, the same additions in the same order, kept while the parts
        hold the same bytes in the same order: a queue's demand vectors are new whenever one of its jobs
        changes, but its Inqueue part moves only when a job is admitted, starts or leaves."""
        found = self._inqueue
        if found is not None and found[3] == dims and len(found[0]) == len(parts):
            # only the parts that are new vectors are read (``compress``, ``map``: no Python step for the rest)
            moved = compress(zip(parts, found[1], strict=True), map(is_not, parts, found[0]))
            if all(p.tobytes() == b for p, b in moved):
                self._inqueue = (parts, found[1], found[2], dims)  # held: the next pass compares these first
                return found[2]
        total = sum(parts, start=vec.zeros(dims))
        total.flags.writeable = False
        self._inqueue = (parts, [p.tobytes() for p in parts], total, dims)
        return total

    def room(
        self, requested: Matrix, total: Vec, factor: float | None, qvec: Callable[[Vector], Vec]
    ) -> Room:
        """The overcommit's used (``qvec`` of the nodes' requested sums) and idle (``total × factor −
        used``) vectors, kept while the requested matrix holds the same bytes (a pass that binds or frees
        nothing leaves them) and the total and factor are the same objects."""
        key = requested.tobytes()
        found = self._room
        if found is not None and found[0] == key and found[1] is total and found[2] is factor:
            return found[3]
        used = qvec(requested.sum(axis=0))
        idle = None if factor is None else total * factor - used
        for vector in (used, idle):
            if vector is not None:
                vector.flags.writeable = False
        self._room = (key, total, factor, (used, idle))
        return used, idle

    def shape_rows(
        self,
        shapes: set[bytes],
        index: ResourceIndex,
        make: Callable[[list[bytes], ResourceIndex], ShapeRows],
    ) -> tuple[list[bytes], Vec, npt.NDArray[np.bool_]]:
        """The lined ``minResources`` shapes in a fixed order with ``make``'s rows for them, kept while the
        shapes and the resource index are the same (the lines change far less often than passes run)."""
        found = self._shapes
        if found is None or found[1] is not index or found[0] != shapes:
            keys = list(shapes)
            rows, unasked = make(keys, index)
            rows.flags.writeable = unasked.flags.writeable = False
            self._shapes = found = (set(shapes), index, keys, rows, unasked)
        return found[2], found[3], found[4]


__all__ = ["Carried", "OrderKey", "Room"]
