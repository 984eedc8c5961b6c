"""``allocate``: place Inqueue and Running jobs queue by queue, gang by gang (volcano.md §7).

The queue with the best QueueOrder goes next (its share moves as it allocates); an Overused queue leaves
the action. A job's tasks are committed (bound) only when the gang minimum is met; a ready job with more
pending tasks goes back to compete for elastic growth.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from heapq import heapify, heappop, heappush

from gangplane.api.scheduling import volcano as vc
from gangplane.schedulers.volcano import placement
from gangplane.schedulers.volcano.config import Action
from gangplane.schedulers.volcano.jobs import Job
from gangplane.schedulers.volcano.kept import PENDING_PHASES, Indexes, Line, OrderKey
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
    """Stand-ins for a superset of what ``candidates`` returns, in no order and without asking
    ``_eligible``: for the actions' checks that no candidate can act, which read only a job's queue,
    priority, starvation and pipelining. A kept shape line is one stand-in, its first job the session has
    not touched (every job of a line shares those four; one touched is itself), so the checks cost the
    lines, not the backlog."""
    if session.kept is None:
        return session.jobs.values()
    admit_all = Action.ENQUEUE not in session.config.actions
    index = session.kept.index
    if admit_all:
        return [session.jobs[key] for key in _pool_keys(session, admit_all)]
    heads = [key for per_shape in index.work_lines.values() for line in per_shape.values()
             if (key := _untouched_head(session, line)) is not None]  # fmt: skip
    loose = index.work_loose | {
        k for k in session.touched if k in index.with_work or k in index.pending_phase
    }
    return [session.jobs[key] for key in (*heads, *loose)]


def _untouched_head(session: Session, line: Line) -> str | None:
    """The key of the line's first job the session has not touched (few are: a walk of a few entries; a
    loop, not a generator: asked of every kept line twice a pass)."""
    at = _untouched(session, line, 0)
    return line[at][1] if at < len(line) else None


def _untouched(session: Session, line: Line, at: int) -> int:
    """The place of the line's first entry from ``at`` the session has not touched (``len(line)``: none)."""
    touched = session.touched
    while at < len(line) and line[at][1] in touched:
        at += 1
    return at


def _loose_candidates(session: Session, index: Indexes) -> list[Job]:
    """``candidates`` outside the kept lines: jobs with work not lined, and those the session touched."""
    touched = {k for k in session.touched if k in index.with_work or k in index.pending_phase}
    pool = [session.jobs[key] for key in sorted(index.work_loose | touched)]
    return _chosen(session, pool, admit_all=False)


def _leaf_lines(session: Session, index: Indexes) -> Iterable[Line]:
    """The kept lines ``candidates`` draws from: a non-leaf queue's jobs are never candidates."""
    return (line for queue, per_shape in index.work_lines.items() if session.book.is_leaf(queue)
            for line in per_shape.values())  # fmt: skip


def candidate_stand_ins(session: Session) -> list[Job]:
    """``reachable``'s stand-ins, for ``candidates`` themselves (where ``quiet_candidates``, kept): each leaf
    line's first untouched job stands for the line, the rest are asked (``_eligible``) one by one."""
    assert session.kept is not None
    index = session.kept.index
    heads = [session.jobs[k] for line in _leaf_lines(session, index) if (k := _untouched_head(session, line))]
    return _loose_candidates(session, index) + heads


def lined_candidates(session: Session, wanted: Callable[[Job], bool]) -> list[Job]:
    """``[job for job in candidates(session) if wanted(job)]`` as a set, for a ``wanted`` that answers alike
    for jobs of one shape the session has not touched: a kept line is asked once, at its first such job,
    and taken whole or not at all (where ``quiet_candidates``, kept: ``_kept_turns``' pool)."""
    assert session.kept is not None
    index = session.kept.index
    chosen = [job for job in _loose_candidates(session, index) if wanted(job)]
    for line in _leaf_lines(session, index):
        head = _untouched_head(session, line)
        if head is not None and wanted(session.jobs[head]):
            chosen += [session.jobs[key] for _, key in line if key not in session.touched]
    return chosen


def quiet_candidates(session: Session) -> bool:
    """May an action leave ``candidates`` uncalled when no job can act? Yes when nobody reads the messages
    it writes and it admits nothing (with ``enqueue`` configured, ``_eligible`` changes no phase)."""
    return not session.config.explain and Action.ENQUEUE in session.config.actions


def candidates(session: Session) -> list[Job]:
    """Jobs allocate may place: admitted, valid, in a leaf queue, with pending non-best-effort tasks. A job's
    answer is kept for the later actions until the session touches the job (every change of a phase or a
    task status does), since nothing else it reads moves within a session. The message a refusal writes is
    written once: only ``_eligible`` writes one for a job that is no candidate, and an untouched job's
    refusal would say the same again."""
    admit_all = Action.ENQUEUE not in session.config.actions
    return _chosen(session, _pool(session, admit_all), admit_all)


def _chosen(session: Session, pool: Iterable[Job], admit_all: bool) -> list[Job]:
    chosen = []
    for job in pool:
        ok = None if job.key in session.touched else session.eligible.get(job.key)
        if ok is None:
            ok = session.eligible[job.key] = _eligible(session, job, admit_all)
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


class _Turns:
    """One queue's candidates in job order, from a heap: loose jobs, each its own entry, and kept shape lines
    (``Indexes.work_lines``: jobs holding nothing, whose order is their parsed one), each entered only at
    its head. A line whose head fails leaves: the rest share its shape, so they are hopeless too."""

    def __init__(self, session: Session, loose: Iterable[Job], lines: Iterable[Line] = ()) -> None:
        self.session = session
        self.heap: list[_Entry] = [(session.job_order(job), job.key, None, 0) for job in loose]
        for line in lines:  # ``enter(line, 0)`` each, appended: one heapify orders them all
            if (at := _untouched(session, line, 0)) < len(line):
                self.heap.append((*line[at], line, at))
        heapify(self.heap)  # entries differ in (job order, key): the pops do not depend on the layout

    def enter(self, line: Line, at: int) -> None:
        """Push the line's first entry from ``at`` the session has not touched (those are loose)."""
        if (at := _untouched(self.session, line, at)) < len(line):
            heappush(self.heap, (*line[at], line, at))

    def pop(self) -> _Entry | None:
        return heappop(self.heap) if self.heap else None

    def push(self, job: Job) -> None:
        heappush(self.heap, (self.session.job_order(job), job.key, None, 0))

    def jobs(self) -> list[Job]:
        return [self.session.jobs[key] for _, key, _, _ in sorted(self.heap)]


_Entry = tuple[OrderKey, str, Line | None, int]  # (job order, job key, its kept line or None, place there)


def _turns(session: Session) -> dict[str, _Turns]:
    """Each queue's turns, the queues in the order a sorted walk of all candidates meets them (tied queues
    take turns in that order; untied ones never depend on it)."""
    kept = session.kept
    if kept is None or session.config.explain or Action.ENQUEUE not in session.config.actions:
        per_queue: dict[str, list[Job]] = {}
        for job in candidates(session):
            per_queue.setdefault(job.queue, []).append(job)
        turns = {q: _Turns(session, jobs) for q, jobs in per_queue.items()}
    else:
        turns = _kept_turns(session, kept.index)
    ranked = sorted((t.heap[0][:2], q) for q, t in turns.items() if t.heap)
    return {q: turns[q] for _, q in ranked}


def _kept_turns(session: Session, index: Indexes) -> dict[str, _Turns]:
    """The kept lines of leaf queues (their jobs are valid, admitted, with work: ``_eligible`` holds) and,
    loose, the rest of ``candidates``' pool: jobs with work holding something, and those the session
    touched (admitted now, or changed)."""
    touched = {k for k in session.touched if k in index.with_work or k in index.pending_phase}
    loose: dict[str, list[Job]] = {}
    pool = [session.jobs[key] for key in sorted(index.work_loose | touched)]
    for job in _chosen(session, pool, admit_all=False):
        loose.setdefault(job.queue, []).append(job)
    lined = {q: per_shape.values() for q, per_shape in index.work_lines.items() if per_shape}
    return {
        q: _Turns(session, loose.get(q, ()), lined.get(q, ()) if session.book.is_leaf(q) else ())
        for q in {*loose, *lined}
    }


def allocate(session: Session) -> None:
    per_queue = _turns(session)
    hopeless: dict[tuple[object, ...], str] = {}  # capacity only shrinks during allocate
    queue: str | None = None  # whose turn it is: the queue order and Overused move only with a placement
    # The queues' order keys: a placement moves only its own queue's (per_queue holds leaves, and a leaf's
    # key reads its own attributes alone; the chain above it holds no turns).
    keys = {q: session.book.order_key(q) for q in per_queue}
    while per_queue:
        if queue is None:
            queue = min(per_queue, key=keys.__getitem__)
            if session.book.overused(queue):
                for job in per_queue[queue].jobs() if session.config.explain else ():
                    session.messages.setdefault(job.key, session.book.overused_reason(queue))
                per_queue[queue].heap = []
        turns = per_queue[queue]
        if (entry := turns.pop()) is None:
            del per_queue[queue]
            queue = None
            continue
        _, key, line, at = entry
        job = session.jobs[key]
        if (known := hopeless.get(job.shape())) is not None:
            session.messages[job.key] = known
            continue
        attempt = placement.place(session, job, explain=session.config.explain)
        if not attempt.ok:
            session.messages[job.key] = hopeless[job.shape()] = attempt.message
            continue
        placement.commit(session, job, attempt)
        if line is not None:
            turns.enter(line, at + 1)
        keys[queue], queue = session.book.order_key(queue), None
        session.messages.pop(job.key, None)
        if job.ready() and any(not t.best_effort for t in job.pending()):
            turns.push(job)
