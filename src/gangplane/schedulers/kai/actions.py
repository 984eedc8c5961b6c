"""KAI's actions over one session: allocate, reclaim (between queues), preempt (within a queue)
(kai.md §5, §7).

allocate walks the queue tree picking the queue the comparator prefers for its best job, places the job's
gang threshold all or nothing and requeues it while it has elastic pods left. reclaim lets a starving job of
a queue within its fair share evict preemptible jobs of other queues the strategies allow; preempt lets a
job evict strictly lower-priority preemptible jobs of its own queue. Victims go whole (a gang, never part
of one); the evicting job is pipelined onto the room and bound in a later cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cmp_to_key
from heapq import merge
from itertools import groupby

from gangplane.schedulers.kai import lines, placement, victims
from gangplane.schedulers.kai.kept import job_order
from gangplane.schedulers.kai.model import KaiJob, Member, Res
from gangplane.schedulers.kai.session import KaiSession

NOT_ENOUGH_RESOURCES = placement.NOT_ENOUGH_RESOURCES  # placement's reason when no node set holds the gang


def _waiting(session: KaiSession) -> dict[str, list[KaiJob]]:
    per_queue: dict[str, list[KaiJob]] = {}
    waiting = []
    for job in session.jobs.values():
        if not session.book.is_leaf(job.queue):
            session.reasons[job.key] = ("QueueIsNotLeaf", f"queue {job.queue} is not a leaf queue")
        elif job.key not in session.pipelined and job.pending():
            waiting.append(job)
    for job in sorted(waiting, key=job_order):
        per_queue.setdefault(job.queue, []).append(job)
    return per_queue


def allocate(session: KaiSession) -> None:
    if lines.usable(session):
        lines.allocate(session)
        return
    per_queue = _waiting(session)
    releasing = _terminating(session)
    failed: placement.Failed = {}
    heads: dict[str, Res] = {}  # job -> its pending request, while it does not change
    while per_queue:
        queue = _next_queue(session, per_queue, heads)
        job = per_queue[queue].pop(0)
        if not per_queue[queue]:
            del per_queue[queue]
        attempt = placement.place(session, job, failed=failed)
        if not attempt.ok and not _pipeline(session, job, releasing):
            session.reasons[job.key] = (attempt.reason, attempt.message)
        if not attempt.ok:
            continue
        placement.commit(session, job, attempt)
        heads.pop(job.key, None)
        session.reasons.pop(job.key, None)
        if job.pending():
            per_queue.setdefault(queue, []).append(job)
            per_queue[queue].sort(key=job_order)


def _next_queue(session: KaiSession, per_queue: dict[str, list[KaiJob]], heads: dict[str, Res]) -> str:
    """The queue the comparator prefers for its head job (each head's request kept while it is unplaced)."""
    pairs = []
    for queue, jobs in per_queue.items():
        head = jobs[0]
        request = heads.get(head.key)
        if request is None:
            request = heads[head.key] = session.request(head.pending())
        pairs.append((queue, request))
    book = session.book
    if len({book.queues[q].parent for q, _ in pairs}) == 1:  # siblings: compared as they are, by their keys
        return min(pairs, key=lambda pair: book.order_key(*pair))[0]
    return min(pairs, key=cmp_to_key(book.compare))[0]


def _pipeline(session: KaiSession, job: KaiJob, releasing: list[Member]) -> bool:
    """Allocate's pipelining (kai.md §5): a job that fits once terminating pods are gone keeps that room for
    this cycle — assumed beside the terminating pods, so no job after it in the order takes the room a
    reclaim or preemption freed for it — and binds in a later cycle."""
    present = [(m, row) for m in releasing if (row := session.snapshot.location(m.pod.key)) is not None]
    if not present:
        return False
    for member, _ in present:
        session.snapshot.forget(member.pod.key)
    attempt = placement.place(session, job, explain=False)
    for member, row in present:
        session.snapshot.assume(member.pod, row)
    if not attempt.ok:
        return False
    for member, _ in attempt.placed:
        session.book.allocate(job.queue, session.units(member.pod), job.preemptible)
        session.pipelined_pods.add(member.pod.key)
    session.pipelined.add(job.key)
    session.reasons[job.key] = ("Pipelined", f"waiting for {len(present)} terminating pods")
    return True


# ---------------------------------------------------------------- evictions


def _starving(session: KaiSession, keep: Callable[[KaiJob], bool] = lambda job: True) -> list[KaiJob]:
    """Jobs with pods allocate could not place: gangs short of their minimum, and elastic jobs wanting their
    next pod (upstream reclaims and preempts for elastic growth too, ``reclaim_elastic_test.go`` "Elastic
    job reclaims single task from another elastic job"). ``keep`` filters before the sort."""
    starving = [
        j
        for j in session.jobs.values()
        if j.key not in session.pipelined and session.book.is_leaf(j.queue) and keep(j) and j.pending()
    ]
    return sorted(starving, key=job_order)


def _running(session: KaiSession, job: KaiJob) -> bool:
    """A possible victim: holds resources, and is neither pipelined nor bound in this cycle (evicting a pod
    in the cycle that binds it would only make the two writes race, and lets two jobs evict each other
    cycle after cycle)."""
    return (
        job.key not in session.pipelined
        and job.key not in session.bound_now
        and any(m.running for m in job.members)
    )


def _terminating(session: KaiSession) -> list[Member]:
    """Members already releasing; ``_evict`` appends the ones it evicts, so one list serves an action."""
    jobs = session.kept.jobs
    return [m for key in sorted(session.kept.releasing) for m in jobs[key].members if m.releasing]


def _waiting_for_releasing(session: KaiSession, job: KaiJob, releasing: list[Member]) -> bool:
    token = session.snapshot.checkpoint()
    for m in releasing:
        if session.snapshot.location(m.pod.key) is not None:
            session.snapshot.forget(m.pod.key)
    ok = bool(releasing) and placement.place(session, job).ok
    session.snapshot.rollback(token)
    if ok:
        session.reasons[job.key] = ("Pipelined", f"waiting for {len(releasing)} terminating pods")
    return ok


def _newest_first(jobs: list[KaiJob]) -> list[KaiJob]:
    return sorted(jobs, key=lambda v: v.order, reverse=True)


def _reclaim_rule(session: KaiSession, job: KaiJob, request: Res) -> Callable[[victims.Unit], bool]:
    def accept(unit: victims.Unit) -> bool:
        return session.book.reclaimable(job.queue, request, unit.queue)

    return accept


def _preemptible_by_queue(session: KaiSession) -> dict[str, list[KaiJob]]:
    """Preemptible jobs per queue, each list newest first (ties in key order): the victims' base order."""
    per_queue: dict[str, list[KaiJob]] = {}
    for v in _newest_first(list(session.jobs.values())):
        if v.preemptible:
            per_queue.setdefault(v.queue, []).append(v)
    return per_queue


def _base_rank(session: KaiSession) -> dict[str, int]:
    """Each job's place in the newest-first order over all jobs (the stable sort's tie-breaker)."""
    return {v.key: i for i, v in enumerate(_newest_first(list(session.jobs.values())))}


def _reclaim_victims(
    session: KaiSession,
    job: KaiJob,
    by_queue: dict[str, list[KaiJob]],
    elastic: dict[str, list[KaiJob]],
    rank: dict[str, int],
    wholes: dict[str, victims.Unit],
) -> Iterator[victims.Unit]:
    """Units of running preemptible jobs of other queues, by the queue comparator reversed (over fair share
    first, lower queue priority, larger dominant share), then lower job priority (extras before gangs), then
    newest. Queues whose leveled ancestor is within quota are left out up front: neither strategy accepts a
    queue at or below its deserved share, and releasing victims never raises an allocation. ``by_queue``
    lists are already in (priority, newest) order; queues of equal rank are merged lazily, since a search
    usually stops early."""
    book = session.book
    queues = [q for q in by_queue if q != job.queue and not book.within_quota(book.leveled(job.queue, q)[1])]
    keys = {q: book.victim_order_key(book.leveled(job.queue, q)[1]) for q in queues}
    order = lambda v: (v.priority, rank[v.key])  # noqa: E731
    for _, tier in groupby(sorted(queues, key=keys.__getitem__), key=keys.__getitem__):
        names = list(tier)
        jobs = (v for v in merge(*(by_queue[q] for q in names), key=order) if _running(session, v))
        spare = [v for v in merge(*(elastic.get(q, []) for q in names), key=order) if _running(session, v)]
        yield from victims.in_order(session, jobs, spare, wholes)


def _reclaim_possible(session: KaiSession) -> bool:
    """Could any job reclaim at all: is some queue, or an ancestor of it, over its deserved quota while it
    holds a running preemptible job? Neither strategy takes from a queue within quota (``within_quota``);
    without a first eviction no allocation moves in this action, so the answer stays (upstream's reclaim
    likewise returns early without victims)."""
    book = session.book
    held_before = [q for q, priorities in session.kept.holding.items() if priorities]
    if all(book.within_quota(a) for q in held_before for a in book.chain(q)):
        return False  # the queues that held preemptible jobs when the session opened: a superset
    held = {j.queue for j in session.jobs.values() if j.preemptible and _running(session, j)}
    return any(not book.within_quota(a) for q in held for a in book.chain(q))


def reclaim(session: KaiSession) -> None:
    possible = _reclaim_possible(session)
    if not possible and not session.config.explain:
        return  # what follows would only add reasons: no victim exists
    releasing = _terminating(session)
    rank = _base_rank(session)
    by_queue = {
        q: sorted(jobs, key=lambda v: (v.priority, rank[v.key]))
        for q, jobs in _preemptible_by_queue(session).items()
    }
    elastic = {q: [v for v in jobs if victims.is_elastic(v)] for q, jobs in by_queue.items()}
    wholes: dict[str, victims.Unit] = {}
    for job in _starving(session):
        request = session.request(placement.needed_members(job) or [])
        # non-preemptible work may reclaim too, within its queue's deserved quota (kai.md §6)
        if (refusal := session.book.reclaim_refusal(job.queue, request, job.preemptible)) is not None:
            _explain(session, job, f"no reclaim: {refusal}")
            continue
        if _waiting_for_releasing(session, job, releasing) or not possible:
            continue
        units = _reclaim_victims(session, job, by_queue, elastic, rank, wholes)
        chosen = victims.search(session, job, units, _reclaim_rule(session, job, request))
        if not chosen:
            continue
        reclaimed = victims.released(session, chosen)
        if refusal := session.book.boundary_refusal(job.queue, request, job.preemptible, reclaimed):
            victims.undo(session, chosen)
            _explain(session, job, f"no reclaim: {refusal}")
        else:
            victims.evict(session, job, chosen, "Reclaimed", releasing)


def _explain(session: KaiSession, job: KaiJob, why: str) -> None:
    """Add ``why`` to a job that allocate found no room for, so its message also names its queue's share."""
    reason, message = session.reasons.get(job.key, (NOT_ENOUGH_RESOURCES, "not enough free resources"))
    if reason == NOT_ENOUGH_RESOURCES:
        session.reasons[job.key] = (reason, f"{message.rstrip('.')}; {why}")


def _lowest_victim_priority(session: KaiSession) -> dict[str, int]:
    """Per queue, the lowest priority of its running preemptible jobs: a job may preempt only above it.
    Evictions only remove victims, so what holds at the start holds through the action."""
    lowest: dict[str, int] = {}
    for j in session.jobs.values():
        if j.preemptible and _running(session, j):
            lowest[j.queue] = min(lowest.get(j.queue, j.priority), j.priority)
    return lowest


def _no_preemptor(session: KaiSession) -> bool:
    """No queue had, when the session opened, a waiting job above the lowest priority of its preemptible
    jobs holding resources: starving jobs were waiting then, and victims only become fewer since."""
    kept = session.kept
    top = kept.waiting_priority()
    return not any(top[q] > min(held) for q, held in kept.holding.items() if held and q in top)


def preempt(session: KaiSession) -> None:
    explain = session.config.explain
    if not explain and _no_preemptor(session):
        return
    lowest = _lowest_victim_priority(session)
    starving = _starving(session, lambda j: explain or j.priority > lowest.get(j.queue, j.priority))
    if not starving:
        return
    releasing = _terminating(session)
    by_queue = _preemptible_by_queue(session)
    wholes: dict[str, victims.Unit] = {}
    for job in starving:
        if _waiting_for_releasing(session, job, releasing):
            continue
        if job.priority <= lowest.get(job.queue, job.priority):
            continue  # no running preemptible job of lower priority in its queue
        jobs = [v for v in by_queue.get(job.queue, []) if v.priority < job.priority and _running(session, v)]
        jobs.sort(key=lambda v: v.priority)  # stable: newest first within a priority
        units = victims.in_order(session, jobs, [v for v in jobs if victims.is_elastic(v)], wholes)
        if chosen := victims.search(session, job, units, lambda unit: True):
            victims.evict(session, job, chosen, "Preempted", releasing)


ACTIONS: dict[str, Callable[[KaiSession], None]] = {
    "allocate": allocate,
    "reclaim": reclaim,
    "preempt": preempt,
}
