"""Placing one job's pending tasks: the ``place`` step of Volcano's allocate (volcano.md §7) and the
HyperNode gradient search of network-topology-aware jobs (§9).

A try assumes tasks in the snapshot and returns them; it never binds and never touches the queue book, so
callers decide to commit (bind), pipeline (keep the reservation only) or roll back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gangplane.schedulers.core.fit import Mask
from gangplane.schedulers.core.gang import place_gang
from gangplane.schedulers.core.resources import PODS
from gangplane.schedulers.volcano.hypernodes import HyperNodeInfo
from gangplane.schedulers.volcano.jobs import Job, Task
from gangplane.schedulers.volcano.session import Session
from gangplane.schedulers.volcano.vec import Vec


@dataclass(frozen=True, slots=True)
class Attempt:
    ok: bool
    placed: tuple[tuple[Task, int], ...] = ()  # (task, node row), assumed in the snapshot
    message: str = ""


_REFUSED = Attempt(False)  # the quota test's refusal without text: shared, the same every time


def needed(job: Job) -> int:
    """Tasks still missing for the gang minimum (0 for a ready job growing elastically)."""
    return max(job.min_member - job.ready_count(), 0)


def quota_allowed(session: Session, job: Job, tasks: list[Task] | None = None) -> tuple[list[Task], str]:
    """``tasks`` (default: the pending, non-best-effort ones) in task order that the queue's ``Allocatable``
    admits one after another, a refused one skipped; the reason of the first refusal comes back with them."""
    candidates = [t for t in job.pending() if not t.best_effort] if tasks is None else tasks
    requests = [session.qvec(t.pod.requests) for t in candidates]
    if candidates and session.book.allocatable(job.queue, sum(requests[1:], start=requests[0])):
        # every prefix sum is ≤ the total on each dimension it requests, so each check below would pass
        return list(candidates), ""
    admitted: list[Task] = []
    held = np.zeros(len(session.index), dtype=np.float64)
    refusal = ""
    for task, request in zip(candidates, requests, strict=True):
        if session.book.allocatable(job.queue, held + request):
            admitted.append(task)
            held += request
        elif not refusal:
            refusal = session.book.allocatable_reason(job.queue, held + request) or ""
    return admitted, refusal


def try_place(session: Session, job: Job, allowed: Mask | None = None, explain: bool = True) -> Attempt:
    """Assume enough tasks to make ``job`` ready (or, if ready, every admitted task that fits), or nothing.

    The queue's ``Allocatable`` is checked on the tasks the nodes can actually take, in task order (upstream
    checks each task as it allocates it): a task no node can hold never uses up the queue's room for the
    others. Then ``minTaskMember`` picks which placed tasks to keep."""
    missing = needed(job)
    candidates = [t for t in job.pending() if not t.best_effort]
    if len(candidates) < max(missing, 1):
        return Attempt(False, message=_short_of_quota(job, missing, len(candidates), ""))
    if not explain:  # nobody reads the refusal: the test alone, no text
        if quota_refuses(session, job, candidates, max(missing, 1)):
            return _REFUSED
    elif (refusal := quota_rules_out(session, job, candidates, max(missing, 1))) is not None:
        return Attempt(
            False, message=f"gang needs {max(missing, 1)} more pods, more than the queue admits: {refusal}"
        )
    token = session.snapshot.checkpoint()
    result = place_gang(
        session.snapshot,
        [t.pod for t in candidates],
        min_member=max(missing, 1),
        strategy=session.config.strategy,
        allowed=allowed,
        explain=explain,
    )
    if not result.ok:
        return Attempt(False, message=result.message)
    rows = {b.pod_key: session.snapshot.node_position(b.node) for b in result.bindings}
    admitted, refusal = quota_allowed(session, job, [t for t in candidates if t.pod.key in rows])
    placed = [(task, rows[task.pod.key]) for task in admitted]
    kept, short = _kept(job, placed, missing)
    if len(kept) < max(missing, 1) or short:
        session.snapshot.rollback(token)
        why = f"minTaskMember not met: {short}" if short and len(admitted) == len(rows) else ""
        return Attempt(False, message=why or _short_of_quota(job, missing, len(admitted), refusal))
    kept_keys = {task.pod.key for task, _ in kept}
    for key in rows:
        if key not in kept_keys:
            session.snapshot.forget(key)
    return Attempt(True, tuple(kept))


def quota_rules_out(session: Session, job: Job, candidates: list[Task], count: int) -> str | None:
    """The queue's refusal when not even the ``count`` smallest requests (per resource) fit its room: no set
    of ``count`` tasks could then pass, so the placement is not tried."""
    least = least_requests(session, candidates, count)
    if session.book.allocatable(job.queue, least):
        return None
    return session.book.allocatable_reason(job.queue, least) or "the queue admits none"


def quota_refuses(session: Session, job: Job, candidates: list[Task], count: int) -> bool:
    """``quota_rules_out(...) is not None`` without building the refusal's text (a waiting head is refused
    pass after pass, and without "why pending" text nobody reads it)."""
    return not session.book.allocatable(job.queue, least_requests(session, candidates, count))


_LEAST_KEPT = 4096  # distinct (requests, count) answers kept; a replay's gangs repeat few shapes
_least: dict[tuple[object, ...], Vec] = {}


def least_requests(session: Session, candidates: list[Task], count: int) -> Vec:
    """Per resource, the sum of the ``count`` smallest of the candidates' requests (queue-math vectors).

    A function of the request rows alone, so it is kept by their bytes: the same waiting heads ask it
    pass after pass, and stacking and sorting their rows was most of the quota test. Read-only."""
    rows = [t.pod.requests for t in candidates]
    pods = session.index.position(PODS)  # the column ``qvec`` clears
    key = (tuple(r.tobytes() for r in rows), rows[0].dtype.str if rows else "", count, pods)
    if (found := _least.get(key)) is None:
        least = np.sort(np.array([session.qvec(r) for r in rows]), axis=0)[:count].sum(axis=0)
        least.flags.writeable = False
        if len(_least) >= _LEAST_KEPT:
            _least.clear()
        found = _least[key] = least
    return found


def _kept(job: Job, placed: list[tuple[Task, int]], missing: int) -> tuple[list[tuple[Task, int]], str]:
    """The placements to keep: each role's missing minimum first, then others up to the gang minimum (all of
    them for a ready job growing elastically); and what is still short of ``minTaskMember``, if anything."""
    if not missing:
        return placed, ""
    deficits = job.role_deficits()
    first = []
    for item in placed:
        if deficits.get(item[0].role, 0) > 0:
            deficits[item[0].role] -= 1
            first.append(item)
    short = ", ".join(f"role {r!r} needs {n} more" for r, n in sorted(deficits.items()) if n > 0)
    taken = {task.pod.key for task, _ in first}
    rest = [item for item in placed if item[0].pod.key not in taken]
    return [*first, *rest][: max(missing, len(first))], short


def _short_of_quota(job: Job, missing: int, admitted: int, refusal: str) -> str:
    if refusal:
        return f"gang needs {max(missing, 1)} more pods, the queue admits {admitted}: {refusal}"
    return f"gang needs {max(missing, 1)} more pods, {admitted} are pending"


# ---------------------------------------------------------------- network topology


def _hypernode_score(session: Session, job: Job, hypernode: HyperNodeInfo) -> float:
    """Bin-pack of the job's pending request over the HyperNode: mean of (used + request) / allocatable."""
    request = sum((t.pod.requests for t in job.pending()), start=np.zeros(len(session.index), dtype=np.int64))
    cols = [c for c in np.flatnonzero(request).tolist() if session.index.names[c] != "pods"]
    alloc = session.snapshot.allocatable[hypernode.nodes].sum(axis=0)
    used = session.snapshot.requested[hypernode.nodes].sum(axis=0)
    parts = [min((used[c] + request[c]) / alloc[c], 1.0) if alloc[c] > 0 else 0.0 for c in cols]
    return float(np.mean(parts)) if parts else 0.0


def _fits_min_resources(session: Session, job: Job, hypernode: HyperNodeInfo) -> bool:
    """Pre-filter of a fresh job: its ``minResources`` within the HyperNode's idle resources."""
    if job.min_resources is None or job.holding():
        return True
    free = session.snapshot.free()[hypernode.nodes].sum(axis=0)
    wanted = job.min_resources
    return bool(np.all(free[wanted > 0] >= wanted[wanted > 0]))


def _gradients(session: Session, job: Job) -> list[list[HyperNodeInfo]]:
    assert job.topology is not None
    tier = job.topology.highest_tier
    rows = [r for t in job.holding() if (r := session.snapshot.location(t.pod.key)) is not None]
    if rows:
        return [[h] for h in session.tree.containing(rows, tier)]
    return session.tree.eligible(tier)


def try_place_in_topology(session: Session, job: Job) -> Attempt:
    """Tightest gradient first; within it the HyperNode where the gang fits with the best bin-pack score."""
    assert job.topology is not None
    if not session.tree.ready:
        return Attempt(False, message=f"HyperNode tree is not usable: {session.tree.problem}")
    tried, last = 0, ""
    for gradient in _gradients(session, job):
        best: tuple[float, str, HyperNodeInfo] | None = None
        for hypernode in (h for h in gradient if _fits_min_resources(session, job, h)):
            tried += 1
            token = session.snapshot.checkpoint()
            attempt = try_place(session, job, hypernode.nodes)
            session.snapshot.rollback(token)
            last = attempt.message or last
            if attempt.ok:
                key = (-_hypernode_score(session, job, hypernode), hypernode.name, hypernode)
                best = key if best is None or key[:2] < best[:2] else best
        if best is not None:
            return try_place(session, job, best[2].nodes)
    tier = job.topology.highest_tier
    detail = f"; {last}" if last else ""
    return Attempt(False, message=f"no HyperNode of tier ≤ {tier} can hold the gang ({tried} tried){detail}")


def place(session: Session, job: Job, explain: bool = True) -> Attempt:
    """``explain=False``: the failure message may be empty (victim searches only need the outcome)."""
    if job.topology is not None:
        return try_place_in_topology(session, job)
    return try_place(session, job, explain=explain)


def commit(session: Session, job: Job, attempt: Attempt) -> None:
    for task, row in attempt.placed:
        session.bind(job, task, row)
