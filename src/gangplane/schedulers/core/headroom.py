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
from gangplane.schedulers.core.gang import Counts, member_capacity
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.resources import Vector
from gangplane.schedulers.core.snapshot import Snapshot

Saved = tuple[Counts, int, dict[int, list[int]]]  # a ``Headroom``'s counts, as ``save`` keeps them


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
        # ``shift`` works on plain ints over the shape's nonzero columns: a victim search shifts thousands
        # of small per-node vectors, where numpy's per-call overhead dominates.
        self.cols = cols
        self.need: list[int] = pod.requests[cols].tolist()
        self.freed: dict[int, list[int]] = {}  # row -> requests (shape's columns) counted free by ``shift``
        self._free: dict[int, list[int]] = {}  # row -> free in the snapshot (shape's columns), as read

    def save(self) -> Saved:
        """The counts as they stand, for ``restore`` (cheaper than shifting many victims back)."""
        return self.per_node.copy(), self.total, {row: list(v) for row, v in self.freed.items()}

    def restore(self, saved: Saved) -> None:
        """Back to a ``save``; valid while the snapshot is as it was then (no ``refresh`` since)."""
        per_node, self.total, freed = saved
        self.per_node = per_node.copy()
        self.freed = {row: list(v) for row, v in freed.items()}

    def helps(self, rows: Iterable[int]) -> bool:
        """Could freeing these nodes make room at all? (No, on nodes the shape can never use.)"""
        return any(self.usable[row] for row in rows)

    def shift(self, loads: Iterable[tuple[int, Vector]], sign: int) -> None:
        """Count pods as freed (``sign`` 1) or held again (-1) without touching the snapshot: ``loads`` are
        (node row, requests) of the pods. Only nodes with a nonzero shift differ from ``refresh``."""
        touched = set()
        for row, requests in loads:
            moved = requests[self.cols].tolist()
            freed = self.freed.get(row)
            self.freed[row] = (
                [sign * m for m in moved]
                if freed is None
                else [f + sign * m for f, m in zip(freed, moved, strict=True)]
            )
            touched.add(row)
        for row in touched:
            freed = self.freed[row]
            fresh = self._capacity(row, freed) if self.mask[row] else 0
            self.total += fresh - int(self.per_node[row])
            self.per_node[row] = fresh
            if not any(freed):
                del self.freed[row]

    def _capacity(self, row: int, freed: list[int]) -> int:
        """``member_capacity`` of one node with ``freed`` counted free, on plain ints."""
        free: list[int] | None = self._free.get(row)
        if free is None:
            snap = self.snapshot
            free = self._free[row] = (
                snap.allocatable[row, self.cols] - snap.requested[row, self.cols]
            ).tolist()
        if not self.need:
            return int(np.iinfo(np.int64).max)
        return int(max(min((f + d) // n for f, d, n in zip(free, freed, self.need, strict=True)), 0))

    def refresh(self, rows: Iterable[int]) -> None:
        """Recompute the nodes in ``rows`` after pods were added to or removed from them."""
        changed = np.unique(np.fromiter(rows, dtype=np.int64))
        if changed.size == 0:
            return
        for row in changed.tolist():
            self._free.pop(row, None)
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
        start = self.room.save()
        counted: list[V] = []
        for victim in victims:
            loads = self.loads(victim)  # also where it runs: the snapshot does not move while counting
            if not self.room.helps(row for row, _ in loads) or not accept(victim):
                continue
            if not self.independent(victim):  # the job's own quota moves: only real tries can tell
                taken.extend(self._for_real(counted))
                return None, chain([victim], victims)
            self.book_take(victim)
            self.room.shift(loads, 1)
            counted.append(victim)
            if self.room.total >= self.needed:
                break
        else:
            self._uncount(counted)
            return None, iter(())
        chosen = self._for_real(self._reprieve_counted(counted, start))
        if self.fits():  # the count decides placement (exact), so only quota can say no here
            self._confirmed = True
            return chosen, iter(())
        for victim, undo in reversed(chosen):  # back to the plain search's state: everything taken for real
            self._give_back(victim, undo)
        taken.extend((victim, self._take(victim)) for victim in counted)  # none is counted any more
        return None, victims

    def _reprieve_counted(self, counted: list[V], start: Saved) -> list[V]:
        """Newest choice first, give back each victim the count can spare (the last one always stays).

        Room only grows with what is freed, so when the last victim alone makes enough room (``start`` is
        the count before any victim), every other one is given back: that is decided with one shift."""
        assert self.room is not None and self.loads and self.book_give and self.book_take
        kept = [counted[-1]]
        if len(counted) > 1 and self._alone_enough(counted[-1], start):
            for victim in reversed(counted[:-1]):
                self.book_give(victim)
            return kept
        for victim in reversed(counted[:-1]):
            self.book_give(victim)
            self.room.shift(self.loads(victim), -1)
            if self.room.total < self.needed:
                self.book_take(victim)
                self.room.shift(self.loads(victim), 1)
                kept.append(victim)
        kept.reverse()
        return kept

    def _alone_enough(self, last: V, start: Saved) -> bool:
        """Counting only ``last`` from ``start``, is there room? If so the count is left that way, else as
        it was."""
        assert self.room is not None and self.loads
        now = self.room.save()
        self.room.restore(start)
        self.room.shift(self.loads(last), 1)
        if self.room.total >= self.needed:
            return True
        self.room.restore(now)
        return False

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
