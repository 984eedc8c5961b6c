"""How many more pods of one shape the cluster can hold, kept current as a victim search removes and
restores pods, so the search runs a full gang placement only when it can succeed.

For a gang whose pending members all share one shape (requests and constraints), placement on the allowed
nodes succeeds exactly when the per-node capacities sum to the gang minimum (``place_gang`` takes as many
members as the nodes hold), so ``total < minimum`` rules a placement out without trying it. Callers still
confirm a possible placement with the real one, which also applies their own rules (quotas, roles).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Generic, TypeVar

import numpy as np

from gangplane.schedulers.core.fit import Mask, static_mask
from gangplane.schedulers.core.gang import member_capacity
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.resources import Vector
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
        self.freed: dict[int, Vector] = {}  # row -> requests counted free by ``shift`` (not in the snapshot)

    def helps(self, rows: Iterable[int]) -> bool:
        """Could freeing these nodes make room at all? (No, on nodes the shape can never use.)"""
        return any(self.usable[row] for row in rows)

    def shift(self, loads: Iterable[tuple[int, Vector]], sign: int) -> None:
        """Count pods as freed (``sign`` 1) or held again (-1) without touching the snapshot: ``loads`` are
        (node row, requests) of the pods. Only nodes with a nonzero shift differ from ``refresh``."""
        touched = set()
        for row, requests in loads:
            self.freed[row] = self.freed.get(row, 0) + sign * requests
            touched.add(row)
        for row in touched:
            free = self.snapshot.allocatable[row] - self.snapshot.requested[row] + self.freed[row]
            cols = np.flatnonzero(self.requests)
            fresh = int(max(int((free[cols] // self.requests[cols]).min(initial=np.iinfo(np.int64).max)), 0))
            fresh *= int(self.mask[row])
            self.total += fresh - int(self.per_node[row])
            self.per_node[row] = fresh
            if not self.freed[row].any():
                del self.freed[row]

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
    # Optional, for the counted fast path: a victim's (node row, requests) and its queue-book half of
    # ``take``/``give_back``. With them (and ``exact``), victims are counted free without touching the
    # snapshot until the count says the job fits; the reprieve is decided on counts too, and only the kept
    # victims are taken for real. Same choices as the plain search, far fewer snapshot updates.
    loads: Callable[[V], Sequence[tuple[int, Vector]]] | None = None
    book_take: Callable[[V], None] | None = None
    book_give: Callable[[V], None] | None = None
    _confirmed: bool = False

    def run(self, victims: Iterable[V], accept: Callable[[V], bool]) -> list[tuple[V, U]] | None:
        """The victims to evict, already removed; ``None`` (nothing changed) when all are not enough, ``[]``
        when the job fits as things stand (upstream checks the node's future idle before each victim, so a
        fit without evictions evicts nothing: volcano ``reclaim_test.go``/``preempt_test.go`` "only commit
        evictions on the node where ... succeeds")."""
        if (self.room is None or self.room.total >= self.needed) and self.fits():
            return []
        rest: Iterator[V] = iter(victims)
        taken: list[tuple[V, U]] = []
        if self._counted():
            found, rest = self._run_counted(rest, accept, taken)
            if found is not None:
                return found
        for victim in rest:
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

    def _counted(self) -> bool:
        return (
            self.exact and self.room is not None and None not in (self.loads, self.book_take, self.book_give)
        )

    def _run_counted(
        self, victims: Iterator[V], accept: Callable[[V], bool], taken: list[tuple[V, U]]
    ) -> tuple[list[tuple[V, U]] | None, Iterator[V]]:
        """The plain search's greedy phase and reprieve on counts: the kept victims (taken for real) when a
        real placement confirms them, ``[]``-free ``None`` with the victims left when all were not enough
        (nothing changed). Otherwise every victim counted so far is taken for real into ``taken`` and the
        plain search carries on with the returned victims."""
        assert self.room is not None and self.loads and self.book_take
        counted: list[V] = []
        for victim in victims:
            if not self.room.helps(self.rows(victim)) or not accept(victim):
                continue
            if not self.independent(victim):  # the job's own quota moves: only real tries can tell
                taken.extend(self._for_real(counted))
                return None, chain([victim], victims)
            self.book_take(victim)
            self.room.shift(self.loads(victim), 1)
            counted.append(victim)
            if self.room.total >= self.needed:
                break
        else:
            self._uncount(counted)
            return None, iter(())
        chosen = self._for_real(self._reprieve_counted(counted))
        if self.fits():  # the count decides placement (exact), so only quota can say no here
            self._confirmed = True
            return chosen, iter(())
        for victim, undo in reversed(chosen):  # back to the plain search's state: everything counted, taken
            self._give_back(victim, undo)
        taken.extend(self._for_real(counted))
        return None, victims

    def _reprieve_counted(self, counted: list[V]) -> list[V]:
        """Newest choice first, give back each victim the count can spare (the last one always stays)."""
        assert self.room is not None and self.loads and self.book_give and self.book_take
        kept = [counted[-1]]
        for victim in reversed(counted[:-1]):
            self.book_give(victim)
            self.room.shift(self.loads(victim), -1)
            if self.room.total < self.needed:
                self.book_take(victim)
                self.room.shift(self.loads(victim), 1)
                kept.append(victim)
        kept.reverse()
        return kept

    def _uncount(self, counted: list[V]) -> None:
        assert self.room is not None and self.loads and self.book_give
        for victim in counted:
            self.book_give(victim)
            self.room.shift(self.loads(victim), -1)

    def _for_real(self, counted: list[V]) -> list[tuple[V, U]]:
        """Turn counted victims into real takes (the counted half undone first; ``take`` does both halves)."""
        self._uncount(counted)
        return [(victim, self._take(victim)) for victim in counted]

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
