"""``backfill``: best-effort tasks (no requests) of admitted, valid jobs go to the best feasible node and
are bound at once when their job is ready (volcano.md §7)."""

from __future__ import annotations

import numpy as np

from gangplane.schedulers.core.fit import feasible
from gangplane.schedulers.core.scoring import score
from gangplane.schedulers.volcano.kept import PENDING_PHASES
from gangplane.schedulers.volcano.session import Session


def backfill(session: Session) -> None:
    snapshot = session.snapshot
    pool = (
        session.jobs.values()
        if session.kept is None
        else [session.jobs[key] for key in sorted(session.kept.index.best_effort)]
    )
    jobs = [j for j in pool if any(t.best_effort for t in j.pending())]
    for job in sorted(jobs, key=session.job_order):  # only jobs with best-effort work (usually none)
        if job.phase in PENDING_PHASES or job.valid_reason() is not None:
            continue
        for task in (t for t in job.pending() if t.best_effort):
            rows = np.flatnonzero(feasible(snapshot, task.pod))
            if rows.size == 0:
                continue
            scores = score(snapshot, task.pod.requests, session.config.strategy, rows)
            row = int(rows[int(np.argmax(scores))])
            snapshot.assume(task.pod, row)
            if job.ready():
                session.bind(job, task, row)
            else:
                snapshot.forget(task.pod.key)
