"""EASY backfill (Lifka 1995), exact and gang-aware: the blocked head gets a reservation at its shadow time,
and a waiting job may start now only if that cannot delay the head.

Lifka's rule, per cycle: start jobs from the head while they fit. For the first that does not, its *shadow
time* is the first instant at which, releasing running jobs in order of their expected end, the head fits.
Then, in queue order, a waiting job starts now if it fits now and either

- it is expected to end by the shadow time (it is gone before the head needs the room), or
- the head still fits at the shadow time with it running (on counted nodes: it uses no more than the
  *extra* nodes, those free at the shadow time beyond the head's need).

The second test is made on a *view* of the cluster at the shadow time — the running jobs expected to outlive
it, on their nodes — with ``schedulers.core.place_gang``. The head's reservation is therefore not pinned to
the first nodes the core finds: a late job is first tried *beside* the head's tentative nodes, and otherwise
anywhere it fits now, after which the head must still fit in the view (it may move to other nodes). On
identical single-GPU nodes this is exactly the counting rule, job for job (tested against a reference).

Run-time estimates are the jobs' ``expected`` times (exact unless ``--estimates``/``--estimate-factor``); a job
that outlives its estimate is taken to end now. The reservation is kept while nothing invalidates it: it is
recomputed when the head changes, a running job leaves before its expected end, or the shadow time passes.
``PolicyOptions.backfill_depth`` optionally caps the jobs examined per gang shape for the shadow-time rule
(Slurm's ``bf_max_job_test``, but per shape); the default examines every waiting job.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gangplane.simulator.cluster import ClusterSpec
from gangplane.simulator.jobs import JobSpec
from gangplane.simulator.placement import GangPlacer
from gangplane.simulator.policies.base import Decision, PolicyOptions, Reject, Start
from gangplane.simulator.policies.fifo import NEVER_FITS, start_heads
from gangplane.simulator.policies.queue import OrderKey, ShapeKey, WaitQueue, order_key, shape_key

EARLY = 1e-9
"""A run that ends this much before its expected end ended early (estimates, failures)."""


@dataclass(slots=True)
class Reservation:
    """The head's promise: it starts by ``shadow``. ``view`` holds the running jobs expected to outlive the
    shadow time on their nodes; ``need`` is where the head would go in it (GPUs per node row); ``extra`` the
    GPUs free in the view beyond the head's (a late job needing more cannot start)."""

    head: JobSpec
    shadow: float
    view: GangPlacer
    need: dict[int, int]
    extra: int
    no_short: dict[ShapeKey, OrderKey] = field(default_factory=dict)
    """Per shape, the order key up to which every waiting job is known to outlive the shadow time."""

    def admits_late(self, job: JobSpec, placer: GangPlacer) -> tuple[str, ...] | None:
        """Start ``job`` (which outlives the shadow time) on ``placer`` if the head still fits; its nodes."""
        if job.gpus > self.extra:
            return None
        nodes = self._beside(job, placer)
        if nodes is None:
            nodes = placer.place_on(job)
            if nodes is None or not self._refit(job, nodes):
                return None
            placer.put(job, nodes)
        else:
            self.view.put(job, nodes)
        self.extra -= job.gpus
        return nodes

    def _beside(self, job: JobSpec, placer: GangPlacer) -> tuple[str, ...] | None:
        """Place ``job`` where it leaves the head's tentative nodes enough room at the shadow time: on each of
        them at most the view's free GPUs minus the head's need (what the early jobs free is not ours)."""
        at_shadow, now = self.view.free_gpus(), placer.free_gpus()
        blocked = {row: int(max(0, gpus - (at_shadow[row] - now[row]))) for row, gpus in self.need.items()}
        token = placer.block(blocked)
        nodes = placer.place(job)
        placer.unblock(token, keep=job.id if nodes is not None else None)
        return nodes

    def _refit(self, job: JobSpec, nodes: tuple[str, ...]) -> bool:
        """Put ``job`` on ``nodes`` in the view; keep it there only if the head still fits (and move the
        head's tentative nodes to where it now fits)."""
        self.view.put(job, nodes)
        token = self.view.snapshot.checkpoint()
        need = self.view.trial(self.head)
        self.view.snapshot.rollback(token)
        if need is None:
            self.view.release(job.id)
            return False
        self.need = need
        return True


def shadow_reservation(
    placer: GangPlacer, head: JobSpec, ends: dict[int, float], now: float, jobs: dict[int, JobSpec]
) -> Reservation | None:
    """The head's reservation, or ``None`` if it does not fit even with every running job gone."""
    order = sorted(((max(end, now), job_id) for job_id, end in ends.items()))
    token = placer.snapshot.checkpoint()
    try:
        for i, (end, job_id) in enumerate(order):
            placer.vacate(job_id)
            if (i + 1 < len(order) and order[i + 1][0] == end) or not placer.might_fit(head):
                continue
            if placer.trial(head) is not None:
                late = [job_id for _, job_id in order[i + 1 :]]
                break
        else:
            return None
    finally:
        placer.snapshot.rollback(token)
    return _at_shadow(placer, head, end, [jobs[job_id] for job_id in late])


def _at_shadow(placer: GangPlacer, head: JobSpec, shadow: float, late: list[JobSpec]) -> Reservation:
    view = placer.empty_like()
    for job in late:
        view.put(job, placer.nodes_of(job.id))
    token = view.snapshot.checkpoint()
    need = view.trial(head)
    view.snapshot.rollback(token)
    assert need is not None, "the head fitted with the same jobs released"
    extra = int(np.maximum(view.free_gpus(), 0).sum()) - head.gpus
    return Reservation(head, shadow, view, need, extra)


@dataclass(slots=True)
class _Line:
    """One gang shape's waiting jobs (the queue's live list) during one backfill pass."""

    shape: ShapeKey
    jobs: list[tuple[OrderKey, JobSpec]]
    pos: int
    late_ok: bool = True
    """Whether a job of this shape may still start past the shadow time (only ever turns false)."""
    dead: bool = False
    """Nothing of this shape fits now (free capacity only shrinks within a cycle)."""
    scanned: int = 0


class EasyBackfill:
    name = "backfill"

    def __init__(self, cluster: ClusterSpec, options: PolicyOptions) -> None:
        self.placer = GangPlacer(cluster, options.strategy)
        self.queue = WaitQueue()
        self.depth = options.backfill_depth
        self.window = options.backfill_window
        self._jobs: dict[int, JobSpec] = {}
        self._ends: dict[int, float] = {}
        self._reservation: Reservation | None = None

    def submit(self, job: JobSpec, now: float) -> None:
        self._jobs[job.id] = job
        self.queue.push(job)
        held = self._reservation
        known = held.no_short.get(shape_key(job)) if held is not None else None
        if held is not None and known is not None and order_key(job) < known:
            del held.no_short[shape_key(job)]  # it lands among jobs already scanned: scan again

    def release(self, job_id: int, now: float) -> None:
        self.placer.release(job_id)
        del self._jobs[job_id]
        if now < self._ends.pop(job_id) - EARLY:
            self._reservation = None  # it ended before expected: the shadow time may come sooner

    def schedule(self, now: float) -> Sequence[Decision]:
        decisions: list[Decision] = []
        while (head := self._start_heads(decisions)) is not None:
            self._record_ends(decisions, now)
            reservation = self._reserve(head, now)
            if reservation is not None:
                self._backfill(reservation, now, decisions)
                break
            self.queue.remove(head)
            decisions.append(Reject(head.id, NEVER_FITS))
        self._record_ends(decisions, now)
        return decisions

    def next_cycle(self, now: float) -> float | None:
        return None

    def _start_heads(self, decisions: list[Decision]) -> JobSpec | None:
        """Start jobs from the head while they fit; the blocked head, if any. A job that started ahead of the
        reserved head (a higher-priority arrival that jumped the line) holds room the reservation did not
        count, so the shadow time is computed again."""
        before = len(decisions)
        head = start_heads(self.placer, self.queue, decisions)
        if len(decisions) > before:
            self._reservation = None
        return head

    @property
    def reservation(self) -> Reservation | None:
        return self._reservation

    def _record_ends(self, decisions: list[Decision], now: float) -> None:
        for decision in decisions:
            if isinstance(decision, Start) and decision.job_id not in self._ends:
                self._ends[decision.job_id] = now + self._jobs[decision.job_id].expected

    def _reserve(self, head: JobSpec, now: float) -> Reservation | None:
        held = self._reservation
        if held is None or held.head.id != head.id or now >= held.shadow:
            self._reservation = shadow_reservation(self.placer, head, self._ends, now, self._jobs)
        return self._reservation

    def _backfill(self, reservation: Reservation, now: float, decisions: list[Decision]) -> None:
        """Lifka's single pass in queue order, one gang shape at a time: every job of a shape fits now or
        none does, and a late start of one is allowed exactly when it is for the next."""
        slack = reservation.shadow - now
        cutoff = self.queue.cutoff(self.window) if self.window is not None else None
        lines: list[_Line] = []
        heap: list[tuple[OrderKey, int]] = []
        for jobs in self.queue.shapes():
            first = 1 if jobs[0][1].id == reservation.head.id else 0
            self._push(heap, lines, _Line(shape_key(jobs[0][1]), jobs, first), reservation, slack)
        while heap:
            key, index = heapq.heappop(heap)
            if cutoff is not None and key > cutoff:
                break
            line = lines[index]
            job = line.jobs[line.pos][1]
            nodes = self._try(job, line, reservation, slack)
            if nodes is not None:  # it leaves the list, so ``pos`` already points at the next job
                self.queue.remove(job)
                decisions.append(Start(job.id, nodes))
                self._ends[job.id] = now + job.expected
            elif line.dead:
                continue
            else:
                line.pos += 1  # a late job that may not start; look for an early one behind it
            self._push(heap, lines, line, reservation, slack, index)

    def _try(
        self, job: JobSpec, line: _Line, reservation: Reservation, slack: float
    ) -> tuple[str, ...] | None:
        if not self.placer.might_fit(job):
            line.dead = True
            return None
        if job.expected <= slack:
            nodes = self.placer.place(job)
            line.dead = nodes is None
            return nodes
        nodes = reservation.admits_late(job, self.placer)
        if nodes is None:
            line.late_ok = False
        return nodes

    def _push(
        self,
        heap: list[tuple[OrderKey, int]],
        lines: list[_Line],
        line: _Line,
        reservation: Reservation,
        slack: float,
        index: int | None = None,
    ) -> None:
        """Queue ``line``'s next candidate: the job at ``pos``, or, once late starts are ruled out, the next
        job expected to end by the shadow time."""
        if not line.late_ok:
            found = self._next_early(line, reservation, slack)
            if found is None:
                return
            line.pos = found
        if line.pos >= len(line.jobs):
            return
        if index is None:
            lines.append(line)
            index = len(lines) - 1
        heapq.heappush(heap, (line.jobs[line.pos][0], index))

    def _next_early(self, line: _Line, reservation: Reservation, slack: float) -> int | None:
        known = reservation.no_short.get(line.shape)
        for pos in range(line.pos, len(line.jobs)):
            key, job = line.jobs[pos]
            if known is not None and key <= known:
                continue
            if self.depth is not None and line.scanned >= self.depth:
                return None
            line.scanned += 1
            if job.expected <= slack:
                return pos
            reservation.no_short[line.shape] = key  # slack only shrinks while this reservation holds
        return None


__all__ = ["EasyBackfill", "Reservation", "shadow_reservation"]
