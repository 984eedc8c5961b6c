"""The replay's no-progress guard: a run that goes on without getting anywhere is stopped, not waited for.

A policy can cycle forever: two gangs evicting each other every scheduling period, a preempted job restarted
only to be preempted before its restart cost is paid, a periodic scheduler waking with jobs it never
starts. The engine cannot tell a slow schedule from an endless one in general, so it watches for the signs
of progress — an arrival, a job finishing or rejected, a preempted run keeping real work (checkpoint-restart)
— and gives up on a stretch without any of them that no sound schedule needs:

- ``starts``: more than ``start_budget + per_job x`` (jobs arrived and not settled) runs started, each
  preempted or failed without keeping work (every start either ends a job, which is progress, or is undone);
- ``idle``: more than ``idle_cycles`` scheduling cycles with nothing running and no arrival left (only the
  policy's own wake-ups are left, and none of them started anything).

The limits are far above what a sound schedule needs (a job running alone for days under a 1 s periodic
scheduler starts nothing and is not idle; a preemptive policy restarts each waiting job a few times between
two completions) and low enough that a stuck replay of a small trace stops within seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SHOWN = 10
"""Stuck jobs named in the message (the rest are counted)."""


@dataclass(frozen=True, slots=True)
class Stall:
    """Why a replay stopped before its events ran out."""

    kind: str
    """``starts`` (runs started and undone over and over) or ``idle`` (cycles with nothing running)."""
    since: float
    """Virtual time of the last progress (an arrival, a job settled, a preempted run that kept work)."""
    at: float
    """Virtual time the replay stopped."""
    cycles: int
    starts: int
    cycling: tuple[int, ...]
    """Jobs started and undone since the last progress (ids, ascending)."""
    waiting: tuple[int, ...]
    """Jobs arrived and never settled (ids, ascending), ``cycling`` included."""

    def message(self) -> str:
        what = (
            f"{self.starts} runs started and undone"
            if self.kind == "starts"
            else f"{self.cycles} scheduling cycles with nothing running and no arrival left"
        )
        lines = [f"no progress from {self.since:,.1f} s to {self.at:,.1f} s ({what}); replay stopped"]
        if self.cycling:
            lines.append(f"jobs started and undone again and again: {_ids(self.cycling)}")
        lines.append(f"jobs left unfinished: {_ids(self.waiting)}")
        return "; ".join(lines)


def _ids(ids: tuple[int, ...]) -> str:
    shown = ", ".join(map(str, ids[:SHOWN]))
    return shown + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


@dataclass(slots=True)
class Watchdog:
    """Counts what happened since the last progress; ``check`` says when that is a stall."""

    start_budget: int = 1000
    per_job: int = 4
    idle_cycles: int = 1000
    since: float = 0.0
    cycles: int = 0
    idle: int = 0
    starts: int = 0
    cycling: set[int] = field(default_factory=set)

    def progressed(self, now: float) -> None:
        self.since, self.cycles, self.idle, self.starts = now, 0, 0, 0
        self.cycling.clear()

    def started(self, job_id: int) -> None:
        self.starts += 1
        self.cycling.add(job_id)

    def kept(self, now: float, work: float, run_length: float) -> None:
        """A preempted run kept ``work`` seconds of a job of ``run_length``: progress unless it is next to
        nothing (a run preempted just as its restart ended keeps a rounding error)."""
        if work > 0 and work >= min(1.0, 1e-3 * run_length):
            self.progressed(now)

    def check(self, *, running: int, arrivals_left: bool, active: int) -> str | None:
        """After a cycle: the kind of stall (``Stall.kind``) when the run should stop, else ``None``."""
        self.cycles += 1
        self.idle = self.idle + 1 if running == 0 and not arrivals_left else 0
        if self.starts > self.start_budget + self.per_job * active:
            return "starts"
        if self.idle > self.idle_cycles:
            return "idle"
        return None

    def stall(self, kind: str, now: float, waiting: tuple[int, ...]) -> Stall:
        return Stall(kind, self.since, now, self.cycles, self.starts, tuple(sorted(self.cycling)), waiting)


__all__ = ["Stall", "Watchdog"]
