"""The actions' shortcuts decide exactly as the full walks they replace (docs/volcano.md, "What an action
costs").

Each shortcut is switched off in a reference run — allocate sorts every candidate up front, preempt and
reclaim walk every starving candidate whatever the per-queue aggregates say, and a job recounts its tasks
on every question — and random worlds (queues, priorities, gangs arriving, finishing, evicted and coming
back) must get the same bindings, evictions and status writes, cycle after cycle, from both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st
from test_volcano_memo import _finish
from test_volcano_properties import jobs_strategy
from vcworld import World, node

from gangplane.schedulers.base import CycleResult
from gangplane.schedulers.core.objects import PodInfo
from gangplane.schedulers.core.resources import ResourceIndex
from gangplane.schedulers.volcano import VolcanoConfig, jobs
from gangplane.schedulers.volcano.actions import allocate, preempt, reclaim
from gangplane.schedulers.volcano.book import SharePolicy
from gangplane.schedulers.volcano.jobs import Job
from gangplane.schedulers.volcano.session import Session


def _all_lines(session: Session) -> tuple[dict[str, list[Job]], set[str]]:
    """allocate's lines as built before: every candidate sorted at the start, then split per queue."""
    per_queue: dict[str, list[Job]] = {}
    for job in sorted(allocate.candidates(session), key=session.job_order):
        per_queue.setdefault(job.queue, []).append(job)
    return per_queue, set(per_queue)


@contextmanager
def full_walks() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(allocate, "_lines", _all_lines)
        for module in (preempt, reclaim):
            patch.setattr(module, "quiet_candidates", lambda session: False)
        patch.setattr(preempt, "_may_find_victims", lambda session, candidates: True)
        patch.setattr(reclaim, "_reaches", lambda session, givers, candidates: True)
        patch.setattr(Job, "tally", lambda job: jobs._count(job.tasks))
        yield


def _world(config: VolcanoConfig, n_nodes: int, share: SharePolicy) -> World:
    w = World(nodes=[node(f"n{i}", gpu=4) for i in range(n_nodes)], config=config)
    w.add_queue("a")
    w.add_queue(
        "b", weight=2, **({"deserved": {"nvidia.com/gpu": "4"}} if share == SharePolicy.CAPACITY else {})
    )
    w.add_queue("c")
    return w


def _decisions(result: CycleResult) -> tuple[object, ...]:
    return (result.bindings, result.evictions, result.status_writes)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_nodes=st.integers(1, 3),
    jobs_=jobs_strategy,
    arrivals=st.lists(st.integers(0, 8), min_size=8, max_size=8),
    share=st.sampled_from(list(SharePolicy)),
    explain=st.booleans(),
    one_queue=st.booleans(),
)
def test_the_shortcuts_decide_as_the_full_walks(
    n_nodes: int,
    jobs_: list[tuple[int, int, str, int, bool, bool]],
    arrivals: list[int],
    share: SharePolicy,
    explain: bool,
    one_queue: bool,
) -> None:
    config = VolcanoConfig(explain=explain, share_policy=share, overcommit_factor=None)
    fast, full = _world(config, n_nodes, share), _world(config, n_nodes, share)
    ages: tuple[dict[str, int], dict[str, int]] = ({}, {})
    evicted = 0
    for at in range(3 * len(jobs_) + 6):
        for i, (size, gpu, queue, prio, _topology, minres) in enumerate(jobs_):
            if arrivals[i] == at:
                for w in (fast, full):
                    w.add_job(f"j{i}", size, gpu, queue="a" if one_queue else queue, priority=prio,
                              min_resources=minres)  # fmt: skip
        got = fast.cycle()
        with full_walks():
            want = full.cycle()
        assert _decisions(got) == _decisions(want)
        evicted += len(got.evictions)
        for w, age in zip((fast, full), ages, strict=True):
            w.resubmit_evicted()
            _finish(w, age, 3)
    target(float(evicted))  # steer towards worlds where preempt and reclaim evict


def _counting(monkeypatch: pytest.MonkeyPatch, module: object) -> list[int]:
    calls: list[int] = []
    real: Callable[[Session], list[Job]] = allocate.candidates

    def counted(session: Session) -> list[Job]:
        calls.append(1)
        return real(session)

    monkeypatch.setattr(module, "candidates", counted)
    return calls


def test_one_queue_one_priority_preempt_and_reclaim_walk_no_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """With one queue and one priority no running job is anybody's victim: preempt (no lower priority) and
    reclaim (no other queue) see that from the queues, without listing the waiting gangs."""
    config = VolcanoConfig(explain=False, overcommit_factor=None)
    w = World(nodes=[node("n0", gpu=4)], config=config)
    w.add_job("running", 4, gpu=1)
    w.cycle()
    for i in range(20):
        w.add_job(f"waiting{i}", 2, gpu=1)
    preempting, reclaiming = _counting(monkeypatch, preempt), _counting(monkeypatch, reclaim)
    for _ in range(3):
        assert not w.cycle().evictions
    assert (preempting, reclaiming) == ([], [])
    assert w.bound("running") and not w.bound("waiting0")


def _recount(job: Job) -> tuple[int, int, bool]:
    ready = sum(1 for t in job.tasks if t.status in jobs.READY or (t.status == "Pending" and t.best_effort))
    valid = sum(1 for t in job.tasks if t.status in jobs.READY or t.status == "Pending")
    work = any(t.status == "Pending" and not t.best_effort and not t.pod.gated for t in job.tasks)
    return ready, valid, work


@given(
    tasks=st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=6),  # best effort, gated
    moves=st.lists(st.tuples(st.integers(0, 5), st.sampled_from(list(jobs.TaskStatus))), max_size=8),
)
def test_a_job_counts_its_tasks_again_after_each_status_change(
    tasks: list[tuple[bool, bool]], moves: list[tuple[int, jobs.TaskStatus]]
) -> None:
    """The kept tally follows every change made the one way statuses change (``set_status``)."""
    requests = ResourceIndex.covering().pod_vector({})
    job = Job("ns/j", "ns", "j", "default", 0, 2, {}, None, None, "Inqueue", ("", ""), {})
    job.tasks = [
        jobs.Task(PodInfo(f"ns/p{i}", "ns", f"p{i}", f"u{i}", requests, gated=gated), jobs.TaskStatus.PENDING,
                  best_effort=best_effort)
        for i, (best_effort, gated) in enumerate(tasks)
    ]  # fmt: skip
    for at, status in moves:
        assert (job.ready_count(), job.tally().valid, job.has_work()) == _recount(job)
        job.set_status(job.tasks[at % len(job.tasks)], status)
    assert (job.ready_count(), job.tally().valid, job.has_work()) == _recount(job)
