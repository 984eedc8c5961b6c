"""How many more pods of one shape the cluster can hold, kept current as a victim search removes and
restores pods, so the search runs a full gang placement only when it can succeed.

For a gang whose pending members all share one shape (requests and constraints), placement on the allowed
nodes succeeds exactly when the per-node capacities sum to the gang minimum (``place_gang`` takes as many
members as the nodes hold), so ``total < minimum`` rules a placement out without trying it. Callers still
confirm a possible placement with the real one, which also applies their own rules (quotas, roles).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from gangplane.schedulers.core.fit import Mask, static_mask
from gangplane.schedulers.core.gang import member_capacity
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.snapshot import Snapshot


class Headroom:
    """Per-node capacity for pods shaped like ``pod`` on the nodes it may use (``allowed`` narrows them)."""

    def __init__(self, snapshot: Snapshot, pod: PodInfo, allowed: Mask | None = None) -> None:
        self.snapshot, self.requests = snapshot, pod.requests
        mask = static_mask(snapshot, pod)
        self.mask = mask if allowed is None else mask & allowed
        rows = np.arange(len(snapshot))
        self.per_node = member_capacity(snapshot, pod.requests, rows) * self.mask
        self.total = int(self.per_node.sum())
        cols = np.flatnonzero(pod.requests)
        roomy = np.all(snapshot.allocatable[:, cols] >= pod.requests[cols], axis=1)
        self.usable: Mask = self.mask & roomy  # nodes that could hold one such pod if emptied

    def helps(self, rows: Iterable[int]) -> bool:
        """Could freeing these nodes make room at all? (No, on nodes the shape can never use.)"""
        return any(self.usable[row] for row in rows)

    def refresh(self, rows: Iterable[int]) -> None:
        """Recompute the nodes in ``rows`` after pods were added to or removed from them."""
        changed = np.unique(np.fromiter(rows, dtype=np.int64))
        if changed.size == 0:
            return
        fresh = member_capacity(self.snapshot, self.requests, changed) * self.mask[changed]
        self.total += int(fresh.sum() - self.per_node[changed].sum())
        self.per_node[changed] = fresh


def single_shape(pods: Sequence[PodInfo]) -> bool:
    first = pods[0] if pods else None
    return first is not None and all(
        p.constraints == first.constraints and np.array_equal(p.requests, first.requests) for p in pods
    )


V = TypeVar("V")  # a victim (a gang, or one unit of one)
U = TypeVar("U")  # what undoing its removal needs


@dataclass
class VictimSearch(Generic[V, U]):
    """The greedy victim search Volcano's and KAI's reclaim and preempt share: take acceptable victims in
    order until the starving job fits, then reprieve the needless ones, newest choice first.

    ``take`` removes a victim from snapshot and queue book (returning how to undo it), ``give_back`` undoes
    that, ``fits`` is a real placement try. A ``room`` count spares the tries that cannot succeed, and —
    when ``exact`` (one shape, so the count decides placement) — the tries whose answer a real try already
    gave: after a success, moving victims that are ``independent`` of the job's own quota changes the answer
    only through the count. Victims on nodes the job can never use are passed over."""

    take: Callable[[V], U]
    give_back: Callable[[V, U], None]
    fits: Callable[[], bool]
    rows: Callable[[V], Iterable[int]]
    independent: Callable[[V], bool]
    room: Headroom | None = None
    needed: int = 1
    exact: bool = False
    _confirmed: bool = False

    def run(self, victims: Iterable[V], accept: Callable[[V], bool]) -> list[tuple[V, U]] | None:
        """The victims to evict, already removed; ``None`` (nothing changed) when all are not enough, ``[]``
        when the job fits as things stand (upstream checks the node's future idle before each victim, so a
        fit without evictions evicts nothing: volcano ``reclaim_test.go``/``preempt_test.go`` "only commit
        evictions on the node where ... succeeds")."""
        if (self.room is None or self.room.total >= self.needed) and self.fits():
            return []
        taken: list[tuple[V, U]] = []
        for victim in victims:
            if self.room is not None and not self.room.helps(self.rows(victim)):
                continue
            if accept(victim):
                taken.append((victim, self._take(victim)))
                if self._check(victim):
                    break
        else:
            for victim, undo in reversed(taken):
                self._give_back(victim, undo)
            return None
        kept = [taken[-1]]
        for victim, undo in reversed(taken[:-1]):
            self._give_back(victim, undo)
            if not self._check(victim):
                kept.append((victim, self._take(victim)))
        return list(reversed(kept))

    def _take(self, victim: V) -> U:
        rows = list(self.rows(victim))  # where it runs, read before it is removed
        undo = self.take(victim)
        if self.room is not None:
            self.room.refresh(rows)
        return undo

    def _give_back(self, victim: V, undo: U) -> None:
        self.give_back(victim, undo)
        if self.room is not None:
            self.room.refresh(self.rows(victim))

    def _check(self, moved: V) -> bool:
        """Does the job fit now that ``moved`` was taken or given back?"""
        if not self.independent(moved):
            self._confirmed = False
        if self.room is not None and self.room.total < self.needed:
            return False
        if self._confirmed and self.exact:
            return True
        self._confirmed = self.fits()
        return self._confirmed


__all__ = ["Headroom", "VictimSearch", "single_shape"]
