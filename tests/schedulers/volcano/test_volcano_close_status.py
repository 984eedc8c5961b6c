"""Closing a session computes each visited PodGroup's phase and status from one count of its tasks
(``status._seen``): the same phase, gang-release answer and status as walking the tasks for each
question, as the code before did (kept here as the reference), for any mix of task statuses."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane.api.scheduling import volcano as vc
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.volcano import status
from gangplane.schedulers.volcano.config import VolcanoConfig
from gangplane.schedulers.volcano.jobs import Job, Task, TaskStatus

_RUNNING = frozenset({TaskStatus.RUNNING})


def reference_phase(job: Job, unschedulable: bool) -> str:
    scheduled = [
        t
        for t in job.tasks
        if t.status in status.SCHEDULED or (t.status == TaskStatus.RELEASING and t.pod.node_name)
    ]
    if unschedulable and job.count(_RUNNING):
        return vc.PodGroupPhase.UNKNOWN
    if job.tasks and len(scheduled) >= job.min_member:
        if all(t.status in status.FINISHED for t in scheduled):
            return vc.PodGroupPhase.COMPLETED
        return vc.PodGroupPhase.RUNNING
    return vc.PodGroupPhase.INQUEUE if job.phase == vc.PodGroupPhase.INQUEUE else vc.PodGroupPhase.PENDING


def reference_keeps_gang(job: Job, pipelined: bool) -> bool:
    releasing = sum(1 for t in job.tasks if t.status == TaskStatus.RELEASING and t.pod.node_name)
    if not releasing or pipelined or any(t.status == TaskStatus.PENDING for t in job.tasks):
        return False
    scheduled_now = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND, *status.FINISHED})
    return job.count(scheduled_now) + releasing >= job.min_member


class _Session:
    """What closing reads of a session besides the job."""

    def __init__(self, pipelined: bool, key: str) -> None:
        self.config = VolcanoConfig(explain=False)
        self.pipelined = {key} if pipelined else set()
        self.messages: dict[str, str] = {}
        self.inqueue_reasons: dict[str, str] = {}
        self.now = 12.5


def _job(tasks: list[tuple[TaskStatus, bool]], min_member: int, phase: str) -> Job:
    pod = PodInfo("ns/p", "ns", "p", "u", np.zeros(4, dtype=np.int64))
    job = Job("ns/g", "ns", "g", "q", 0, min_member, {}, None, None, phase, ("", ""), {"status": {}})
    job.tasks = [Task(replace(pod, node_name="n0" if on_node else ""), s) for s, on_node in tasks]
    return job


task_lists = st.lists(st.tuples(st.sampled_from(list(TaskStatus)), st.booleans()), max_size=6)
phases = st.sampled_from(["", *(p.value for p in vc.PodGroupPhase)])


@settings(max_examples=400, deadline=None)
@given(tasks=task_lists, min_member=st.integers(0, 5), phase=phases, pipelined=st.booleans())
def test_one_count_of_the_tasks_answers_as_walking_them(
    tasks: list[tuple[TaskStatus, bool]], min_member: int, phase: str, pipelined: bool
) -> None:
    job = _job(tasks, min_member, phase)
    session: Any = _Session(pipelined, job.key)
    for unschedulable in (False, True):
        assert status.phase(session, job, unschedulable) == reference_phase(job, unschedulable)
    assert status.releasing_keeps_gang(job, pipelined) == reference_keeps_gang(job, pipelined)
    written, _ = status.pod_group_writes(session, {}, [job])
    got = status.pod_group_status(session, job)
    assert [w.status for w in written] == [got]
    unschedulable = any(
        c["type"] == vc.PodGroupConditionType.UNSCHEDULABLE for c in got.get("conditions", [])
    )
    assert got["phase"] == reference_phase(job, unschedulable)


class _Walked(list[Task]):
    """Tasks that count how often they are walked."""

    walks = 0

    def __iter__(self) -> Iterator[Task]:
        _Walked.walks += 1
        return super().__iter__()


def test_closing_a_job_walks_its_tasks_once() -> None:
    """A running gang's status and phase come from one walk over its tasks (the code before walked them
    three times: the phase for the queue counts, the status counts, and the phase again)."""
    job = _job([(TaskStatus.RUNNING, True)] * 3, 3, vc.PodGroupPhase.RUNNING)
    job.tally()  # the gang counts are kept with the job (``Job.tally``), as every action asks them
    job.tasks = _Walked(job.tasks)
    _Walked.walks = 0
    status.pod_group_writes(_Session(False, job.key), {}, [job])  # type: ignore[arg-type]
    assert _Walked.walks == 1


def _close_twice(
    job: Job, pipelined: bool, moved: TaskStatus | None, monkeypatch: Any
) -> tuple[list[Any], list[Any], int]:
    """Close ``job`` (its status written and stored back as a store would), then close it again as the
    next pass would with the last close's writes kept, and without: both answers, and how many statuses
    the kept close computed. ``moved``: a first task's status set between the passes."""
    session: Any = _Session(pipelined, job.key)
    job.revision = ("1", "7")
    wrote: dict[str, status.Wrote] = {}
    written, _ = status.pod_group_writes(session, {}, [job], ({}, wrote))
    if written:
        job.obj, job.revision = {"status": dict(written[0].status)}, ("2", "7")
    if moved is not None and job.tasks:
        job.set_status(job.tasks[0], moved)
    computed = []
    real = status._status
    monkeypatch.setattr(status, "_status", lambda *a: computed.append(1) or real(*a))
    kept_settled: dict[str, Any] = {}
    kept = status.pod_group_writes(session, kept_settled, [job], (wrote, {}))
    monkeypatch.setattr(status, "_status", real)
    plain_settled: dict[str, Any] = {}
    plain = status.pod_group_writes(session, plain_settled, [job])
    return [kept, kept_settled], [plain, plain_settled], len(computed)


@settings(max_examples=300, deadline=None)
@given(
    tasks=task_lists,
    min_member=st.integers(0, 5),
    phase=phases,
    pipelined=st.booleans(),
    moved=st.one_of(st.none(), st.sampled_from(list(TaskStatus))),
)
def test_a_status_coming_back_as_written_answers_as_computing_it_again(
    tasks: list[tuple[TaskStatus, bool]],
    min_member: int,
    phase: str,
    pipelined: bool,
    moved: TaskStatus | None,
) -> None:
    """The close after a write reads the written status back: it answers (writes, phases, settled) as a
    close computing every status again, whether or not a task moved in between."""
    import pytest

    with pytest.MonkeyPatch.context() as monkeypatch:
        kept, plain, _ = _close_twice(_job(tasks, min_member, phase), pipelined, moved, monkeypatch)
    assert kept == plain


def test_the_scheduler_own_write_coming_back_is_not_computed_again(monkeypatch: Any) -> None:
    """A waiting gang's Unschedulable condition, written by one close, comes back in the next pass: that
    close settles it without computing its status (about a third of the statuses a Philly replay computed
    were such returns), and computes it again once a task moved."""
    tasks = [(TaskStatus.PENDING, False)] * 2
    kept, plain, computed = _close_twice(_job(tasks, 2, "Pending"), False, None, monkeypatch)
    assert kept == plain and computed == 0
    kept, plain, computed = _close_twice(_job(tasks, 2, "Pending"), False, TaskStatus.BOUND, monkeypatch)
    assert kept == plain and computed == 1
