"""What a close remembers between jobs and passes (``status``): the task count per pattern of statuses, a
queue's allocation as quantities, and the condition held that says the same. Each answers as computing it
afresh (the code before, kept here as the reference)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane.api.scheduling import volcano as vc
from gangplane.clock import rfc3339
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.resources import ResourceIndex
from gangplane.schedulers.volcano import status
from gangplane.schedulers.volcano.config import VolcanoConfig
from gangplane.schedulers.volcano.jobs import Job, Task, TaskStatus


class _Session:
    """What closing reads of a session."""

    def __init__(self) -> None:
        self.config = VolcanoConfig(explain=False)
        self.pipelined: set[str] = set()
        self.messages: dict[str, str] = {}
        self.inqueue_reasons: dict[str, str] = {}
        self.now = 12.5
        self.index = ResourceIndex()


def _job(tasks: list[tuple[TaskStatus, bool]], min_member: int, conditions: list[Any] | None = None) -> Job:
    pod = PodInfo("ns/p", "ns", "p", "u", np.zeros(4, dtype=np.int64))
    obj = {"status": {"conditions": conditions}} if conditions is not None else {"status": {}}
    job = Job("ns/g", "ns", "g", "q", 0, min_member, {}, None, None, "Pending", ("", ""), obj)
    job.tasks = [Task(replace(pod, node_name="n0" if on_node else ""), s) for s, on_node in tasks]
    return job


def reference_seen(job: Job) -> tuple[dict[TaskStatus, int], int, int, int]:
    counts = Counter(t.status for t in job.tasks)
    on_node = sum(1 for t in job.tasks if t.status == TaskStatus.RELEASING and t.pod.node_name)
    scheduled = sum(1 for t in job.tasks if t.status in status.SCHEDULED) + on_node
    finished = sum(1 for t in job.tasks if t.status in status.FINISHED)
    return dict(counts), on_node, scheduled, finished


task_lists = st.lists(st.tuples(st.sampled_from(list(TaskStatus)), st.booleans()), max_size=6)


@settings(max_examples=300, deadline=None)
@given(first=task_lists, second=task_lists)
def test_remembered_counts_answer_as_counting_each_job(
    first: list[tuple[TaskStatus, bool]], second: list[tuple[TaskStatus, bool]]
) -> None:
    """Jobs with the same statuses share one count; what a task's node decides is still read per job."""
    for tasks in (first, second, first, [(s, not on) for s, on in first]):
        seen = status._seen(_job(tasks, 1))
        assert (dict(seen.counts), *seen[1:]) == reference_seen(_job(tasks, 1))


def test_one_pattern_of_statuses_is_counted_once() -> None:
    status._counted.cache_clear()
    on_node = _job([(TaskStatus.RELEASING, True), (TaskStatus.RUNNING, True)], 2)
    off_node = _job([(TaskStatus.RELEASING, False), (TaskStatus.RUNNING, True)], 2)
    assert (status._seen(on_node).scheduled, status._seen(off_node).scheduled) == (2, 1)
    assert status._counted.cache_info().hits == 1
    counts = status._seen(on_node).counts
    assert counts[TaskStatus.PENDING] == 0 and len(counts) == 2  # reading a status it lacks adds none


allocations = st.lists(
    st.one_of(st.integers(0, 10**12).map(float), st.floats(0, 1e6, allow_nan=False)), min_size=4, max_size=4
)


@settings(max_examples=300, deadline=None)
@given(values=allocations)
def test_a_remembered_allocation_reads_as_describing_it(values: list[float]) -> None:
    index, allocated = ResourceIndex(), np.array(values)
    described = status._describe(index, allocated, allocated.tobytes())
    assert described == index.describe(allocated.round().astype("int64"))


def test_a_queue_allocation_is_described_once_and_handed_out_fresh() -> None:
    session: Any = _Session()
    allocated = np.array([4000.0, 2.0**33, 5.0, 8.0])  # cpu (milli), memory, pods, gpus
    queue = {"metadata": {"name": "a"}, "status": {}}
    status._described.cache_clear()
    first = status._queue_write(session, queue, (1, 0, 2, 0, 0), allocated, allocated.tobytes())
    assert first is not None
    first.status["allocated"]["nvidia.com/gpu"] = "changed"
    second = status._queue_write(session, queue, (1, 0, 2, 0, 0), allocated.copy(), allocated.tobytes())
    assert second is not None and status._described.cache_info().hits == 1
    assert second.status == {
        "state": "Open",
        "allocated": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "8"},
        "pending": 1,
        "inqueue": 0,
        "running": 2,
        "unknown": 0,
        "completed": 0,
    }


def _held(message: str) -> dict[str, Any]:
    return {
        "type": vc.PodGroupConditionType.UNSCHEDULABLE,
        "status": "True",
        "reason": "NotEnoughResources",
        "message": message,
        "transitionID": "cycle-1.000",
        "lastTransitionTime": rfc3339(1.0),
    }


def test_a_held_condition_saying_the_same_keeps_its_transition() -> None:
    session: Any = _Session()
    held = _held("2/2 tasks in gang unschedulable")
    job = _job([(TaskStatus.PENDING, False)] * 2, 2, [held])
    got = status._status(session, job, status._seen(job))
    assert got["conditions"] == [held] and got["conditions"][0] is not held


def test_a_held_condition_saying_otherwise_is_replaced_at_this_pass() -> None:
    session: Any = _Session()
    job = _job([(TaskStatus.PENDING, False)] * 2, 2, [_held("1/2 tasks in gang unschedulable")])
    got = status._status(session, job, status._seen(job))
    assert got["conditions"] == [
        {
            **_held("2/2 tasks in gang unschedulable"),
            "transitionID": "cycle-12.500",
            "lastTransitionTime": rfc3339(12.5),
        }
    ]


def test_a_kept_close_notes_only_phases_that_moved(monkeypatch: Any) -> None:
    """A visited job whose phase is the one noted already leaves the queue counts untouched, so the kept
    close does not note it again (a waiting gang's own write comes back each pass); the decisions stay a
    plain session's (``Driver.cycle`` compares them)."""
    from test_volcano_kept import Driver
    from vcworld import World, node

    from gangplane.schedulers.volcano.kept import Kept

    config = VolcanoConfig(explain=False, overcommit_factor=None)
    w = World(nodes=[node("n0", gpu=4)], config=config)
    w.add_job("running", 4, gpu=1)
    w.add_job("waiting", 2, gpu=1)
    driver = Driver(w, config)
    noted: list[tuple[str, bool]] = []
    real = Kept._count  # what ``note_phase`` does for a phase that moved: take the job out and count it again

    def note(kept: Kept, key: str, queue: str, phase: str | None) -> None:
        noted.append((key, kept.phases.get(key) == phase))
        real(kept, key, queue, phase)

    monkeypatch.setattr(Kept, "_count", note)
    for _ in range(3):
        driver.cycle()
    assert ("ns/waiting", False) in noted and not any(same for _, same in noted)
    assert w.phase("waiting") == "Pending"
