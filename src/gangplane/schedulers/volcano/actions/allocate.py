"""``allocate``: place Inqueue and Running jobs queue by queue, gang by gang (volcano.md §7).

The queue with the best QueueOrder goes next (its share moves as it allocates); an Overused queue leaves
the action. A job's tasks are committed (bound) only when the gang minimum is met; a ready job with more
pending tasks goes back to compete for elastic growth.
"""

from __future__ import annotations

from collections.abc import Iterable

from gangplane.api.scheduling import volcano as vc
from gangplane.schedulers.volcano import placement
from gangplane.schedulers.volcano.config import Action
from gangplane.schedulers.volcano.jobs import Job
from gangplane.schedulers.volcano.kept import PENDING_PHASES
from gangplane.schedulers.volcano.session import Session


def _pool(session: Session, admit_all: bool) -> Iterable[Job]:
    """The jobs ``candidates`` looks at: every job, or from the kept indexes those admitted with pending
    work as parsed and those this session admitted (tasks only leave Pending within a session)."""
    if session.kept is None:
        return session.jobs.values()
    return [session.jobs[key] for key in sorted(_pool_keys(session, admit_all))]


def _pool_keys(session: Session, admit_all: bool) -> set[str]:
    assert session.kept is not None
    index = session.kept.index
    return index.with_work | (index.pending_phase if admit_all else index.pending_phase & session.touched)


def reachable(session: Session) -> Iterable[Job]:
    """A superset of what ``candidates`` returns, in no order and without asking ``_eligible``: for the
    actions' checks that no candidate can act, which read only a job's queue and priority."""
    if session.kept is None:
        return session.jobs.values()
    admit_all = Action.ENQUEUE not in session.config.actions
    return [session.jobs[key] for key in _pool_keys(session, admit_all)]


def quiet_candidates(session: Session) -> bool:
    """May an action leave ``candidates`` uncalled when no job can act? Yes when nobody reads the messages
    it writes and it admits nothing (with ``enqueue`` configured, ``_eligible`` changes no phase)."""
    return not session.config.explain and Action.ENQUEUE in session.config.actions


def candidates(session: Session) -> list[Job]:
    """Jobs allocate may place: admitted, valid, in a leaf queue, with pending non-best-effort tasks. In a
    kept session a job's answer is kept for the later actions until the session touches the job (every
    change of a phase or a task status does), since nothing else it reads moves within a session."""
    admit_all = Action.ENQUEUE not in session.config.actions
    chosen = []
    for job in _pool(session, admit_all):
        ok = None if job.key in session.touched else session.eligible.get(job.key)
        if ok is None:
            ok = _eligible(session, job, admit_all)
            if session.kept is not None:
                session.eligible[job.key] = ok
        if ok:
            chosen.append(job)
    return chosen


def _eligible(session: Session, job: Job, admit_all: bool) -> bool:
    if job.phase in PENDING_PHASES:
        if not admit_all:
            return False
        job.phase = vc.PodGroupPhase.INQUEUE
        session.touched.add(job.key)
    if (reason := job.valid_reason()) is not None:
        session.messages[job.key] = f"NotEnoughTasks: {reason}"
        return False
    if not session.book.is_leaf(job.queue):
        session.messages[job.key] = f"queue {job.queue} is not a leaf queue"
        return False
    return job.has_work()


def _lines(session: Session) -> tuple[dict[str, list[Job]], set[str]]:
    """The candidates per queue, and the queues whose line is already in job order. When no two of these
    queues tie on their static order, which queue comes first never depends on the order the queues were
    met in, so each line is sorted only at its queue's first turn (an Overused queue's never): no job of
    it has moved before then, so its order is the one a sort of all candidates at the start gives."""
    chosen = candidates(session)
    per_queue: dict[str, list[Job]] = {}
    for job in chosen:
        per_queue.setdefault(job.queue, []).append(job)
    if len({session.book.attrs[q].policy.order for q in per_queue}) == len(per_queue):
        return per_queue, set()
    per_queue = {}  # tied queues take turns in the order a sorted walk meets them: sort all now
    for job in sorted(chosen, key=session.job_order):
        per_queue.setdefault(job.queue, []).append(job)
    return per_queue, set(per_queue)


def allocate(session: Session) -> None:
    per_queue, in_order = _lines(session)
    hopeless: dict[tuple[object, ...], str] = {}  # capacity only shrinks during allocate
    queue: str | None = None  # whose turn it is: the queue order and Overused move only with a placement
    while per_queue:
        if queue is None:
            queue = min(per_queue, key=session.book.order_key)
            if session.book.overused(queue):
                for job in per_queue[queue] if session.config.explain else ():
                    session.messages.setdefault(job.key, session.book.overused_reason(queue))
                per_queue[queue] = []
        jobs = per_queue[queue]
        if not jobs:
            del per_queue[queue]
            queue = None
            continue
        if queue not in in_order:
            jobs.sort(key=session.job_order)
            in_order.add(queue)
        job = jobs.pop(0)
        if (known := hopeless.get(job.shape())) is not None:
            session.messages[job.key] = known
            continue
        attempt = placement.place(session, job, explain=session.config.explain)
        if not attempt.ok:
            session.messages[job.key] = hopeless[job.shape()] = attempt.message
            continue
        placement.commit(session, job, attempt)
        queue = None
        session.messages.pop(job.key, None)
        if job.ready() and any(not t.best_effort for t in job.pending()):
            jobs.append(job)
            jobs.sort(key=session.job_order)
