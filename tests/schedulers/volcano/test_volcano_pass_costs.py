"""The shortcuts that cut the cost of a live Volcano pass (``benchmarks/volcano_pass.py``) give the answers of
the long way, each pinned here: a gang's best nodes read off the few best distinct scores and its scores
computed a column at a time (``core.gang``), a victim unit's request summed once per session
(``victims.unit_request``), and a kept job renewed when only its PodGroup's status changed (``memo.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_volcano_memo import Driver
from vcworld import World, node

from gangplane.api.scheduling import volcano as vc
from gangplane.schedulers.core import gang
from gangplane.schedulers.core.objects import pod_info
from gangplane.schedulers.core.resources import PODS, ResourceIndex
from gangplane.schedulers.core.snapshot import Snapshot
from gangplane.schedulers.passes import build_snapshot
from gangplane.schedulers.volcano import VolcanoConfig
from gangplane.schedulers.volcano.actions import victims
from gangplane.schedulers.volcano.jobs import Job, Task, TaskStatus
from gangplane.schedulers.volcano.memo import Memo


def _top_by_partial_sort(scores: np.ndarray, wanted: int) -> np.ndarray:
    """``_top`` as it was before the levels: a partial sort, then the picked ones ordered."""
    if scores.size > wanted:
        threshold = np.partition(scores, scores.size - wanted)[scores.size - wanted]
        above = np.flatnonzero(scores > threshold)
        tied = np.flatnonzero(scores == threshold)[: wanted - above.size]
        picked = np.concatenate([above, tied])
    else:
        picked = np.arange(scores.size)
    return picked[np.lexsort((picked, -scores[picked]))]


@settings(max_examples=300, deadline=None)
@given(
    levels=st.lists(st.sampled_from([0.0, -0.0, 0.125, 0.25, 0.5, 0.75, 1.0, 0.3]), min_size=1, max_size=60),
    wanted=st.integers(1, 70),
    nan_at=st.one_of(st.none(), st.integers(0, 59)),
)
def test_the_best_scores_read_off_levels_are_those_of_the_partial_sort(
    levels: list[float], wanted: int, nan_at: int | None
) -> None:
    scores = np.array(levels)
    if nan_at is not None and nan_at < scores.size:
        scores[nan_at] = np.nan
    assert np.array_equal(gang._top(scores, wanted), _top_by_partial_sort(scores, wanted))
    assert np.array_equal(gang._top(-scores, wanted), _top_by_partial_sort(-scores, wanted))


def test_tied_scores_are_answered_by_levels_and_distinct_ones_fall_back() -> None:
    tied = np.array([0.5] * 10 + [0.75] * 3 + [0.25] * 5)
    assert gang._top_levels(tied, 8) is not None
    assert np.array_equal(gang._top_levels(tied, 8), _top_by_partial_sort(tied, 8))
    distinct = np.linspace(0.0, 1.0, 40)
    assert gang._top_levels(distinct, 20) is None  # more levels than it walks: the partial sort answers
    assert gang._top_levels(np.array([0.5, np.nan, 0.25]), 2) is None


def _pod(name: str, requests: dict[str, str], phase: str = "Pending") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]},
        "status": {"phase": phase},
    }


def _snapshot(seed: int) -> Snapshot:
    """40 nodes (a third without GPUs) at random usage, some over-committed."""
    rng = np.random.default_rng(seed)
    nodes = [
        {
            "metadata": {"name": f"n{i}"},
            "status": {
                "allocatable": {
                    "cpu": "96",
                    "memory": "1Ti",
                    "nvidia.com/gpu": str(8 * (i % 3 != 0)),
                    "pods": "110",
                }
            },
        }
        for i in range(40)
    ]
    snapshot, _ = build_snapshot(nodes, [_pod("p", {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"})], {})
    used = snapshot.allocatable * rng.random(snapshot.allocatable.shape) * 1.1
    snapshot.requested[:] = used.astype(np.int64)
    return snapshot


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("requests", [{"cpu": "4", "nvidia.com/gpu": "1"}, {"cpu": "3", "memory": "7Gi"}, {}])
def test_scores_a_column_at_a_time_are_those_of_the_whole_matrix(seed: int, requests: dict[str, str]) -> None:
    snapshot = _snapshot(seed)
    index = snapshot.index
    info = pod_info(_pod("q", requests), index)
    cols = np.flatnonzero(info.requests)
    alloc = snapshot.allocatable[:, cols].astype(np.float64)
    used = snapshot.requested[:, cols]
    request = info.requests[cols].astype(np.float64)
    capacity = np.floor(((alloc - used) / request).min(axis=1))
    plan = gang._plan(snapshot, info.requests)
    assert np.array_equal(gang._capacity(snapshot, plan), capacity)
    rows = np.flatnonzero(capacity >= 1)
    scored = np.flatnonzero(cols != index.position(PODS))
    with np.errstate(divide="ignore"):
        inverse = np.where(alloc > 0, 1.0 / alloc, np.inf)[:, scored]
    fraction = np.minimum((used[rows][:, scored] + request[scored]) * inverse[rows], 1.0)
    assert np.array_equal(gang._utilisation(snapshot, plan, rows), fraction.sum(axis=1) / max(scored.size, 1))


class _Session:
    """What ``victims.unit_request`` reads of a session."""

    def __init__(self, index: ResourceIndex) -> None:
        self.index = index
        self.unit_requests: dict[tuple[str, ...], np.ndarray] = {}

    def qvec(self, row: np.ndarray) -> np.ndarray:
        out = row.astype(np.float64)
        out[self.index.position(PODS)] = 0.0
        return out


def test_a_unit_request_is_summed_once_and_moves_the_book_as_its_tasks_did() -> None:
    index = ResourceIndex()
    infos = [
        pod_info(_pod(f"p{i}", {"cpu": c, "memory": m}, "Running"), index)
        for i, (c, m) in enumerate([("3", "1Gi"), ("5", "3Ti"), ("7", "0")])
    ]
    tasks = tuple(Task(info, TaskStatus.RUNNING) for info in infos)
    job = Job(
        key="ns/j",
        namespace="ns",
        name="j",
        queue="q",
        priority=0,
        min_member=3,
        min_task_member={},
        min_resources=None,
        topology=None,
        phase="Running",
        order=("", ""),
        obj={},
        tasks=list(tasks),
    )
    unit = victims.Unit(job, tasks)
    session = _Session(index)
    held = victims.unit_request(session, unit)  # type: ignore[arg-type]
    assert victims.unit_request(session, unit) is held  # type: ignore[arg-type]
    moves: list[tuple[str, np.ndarray]] = []
    victims._book(session, unit, lambda queue, vec: moves.append((queue, vec)))  # type: ignore[arg-type]
    assert len(moves) == 1 and moves[0][0] == "q"
    allocated = np.full(len(index), 5e12) + np.arange(len(index))
    one_by_one = allocated
    for task in tasks:
        one_by_one = one_by_one - session.qvec(task.pod.requests)
    assert np.array_equal(allocated - moves[0][1], one_by_one)


def test_a_status_only_write_renews_the_kept_job_and_decides_as_a_fresh_parse() -> None:
    """A gang that cannot fit gets its PodGroup status written; the next pass renews the kept job (the same
    object, the new PodGroup, phase and resourceVersion) and decides as a fresh scheduler does."""
    config = VolcanoConfig(explain=True)
    w = World(nodes=[node("n0", gpu=4)], config=config)
    w.add_queue("a")
    w.add_job("big", 2, gpu=4, queue="a", min_resources=False)
    w.add_job("small", 1, gpu=1, queue="a", min_resources=False)
    driver = Driver(w, config)
    first = driver.cycle()
    assert any(write.name == "big" for write in first.status_writes)
    kept = driver.kept._memo._jobs["ns/big"]
    job, revision = kept.job, kept.job.revision
    driver.cycle()
    renewed = driver.kept._memo._jobs["ns/big"]
    assert renewed.job is job
    assert job.revision[0] != revision[0] and job.revision[1:] == revision[1:]
    assert job.obj["metadata"]["resourceVersion"] == job.revision[0]
    for _ in range(3):
        driver.cycle()


def _facts(memo: Memo) -> dict[str, tuple[str, str, str]]:
    return {pod["metadata"]["name"]: memo.pod_facts[ident] for ident, pod in memo.pods.items()}


def test_a_pod_is_read_once_per_object_and_again_when_it_changes() -> None:
    """``Memo.pods`` keeps each pod's scheduler name, key and job key by the pod object: the same object is
    not read again, a changed pod (a new object) is, and the job it now names gets it."""
    config = VolcanoConfig(explain=True)
    w = World(nodes=[node("n0", gpu=1)], config=config)
    w.add_queue("a")
    w.add_job("one", 1, gpu=2, queue="a", min_resources=False)  # never fits: stays pending
    w.add_job("two", 1, gpu=2, queue="a", min_resources=False)
    driver = Driver(w, config)
    driver.cycle()
    facts = _facts(driver.kept._memo)
    assert facts["one-0"] == ("volcano", "ns/one-0", "ns/one")
    driver.cycle()
    again = _facts(driver.kept._memo)
    assert again["two-0"] is facts["two-0"]  # the same pod object: not read again
    w.pods["ns/one-0"]["metadata"]["annotations"][vc.GROUP_NAME_ANNOTATION] = "two"
    result = driver.cycle()
    assert _facts(driver.kept._memo)["one-0"][2] == "ns/two"
    assert any(r.group == "ns/two" and "ns/one-0" in r.pod_keys for r in result.pending)


WIDE = {
    "cpu": "2",
    "memory": "3Gi",
    **{f"example.com/r{k}": str(k + 1) for k in range(7)},
}  # 9 scored columns


@pytest.mark.parametrize("seed", range(4))
def test_a_request_of_eight_or_more_columns_is_summed_as_numpy_sums_it(seed: int) -> None:
    rng = np.random.default_rng(seed)
    allocatable = {
        "cpu": "96",
        "memory": "1Ti",
        "pods": "110",
        **{f"example.com/r{k}": str(61 + 6 * k) for k in range(7)},  # reciprocals that round
    }
    nodes = [{"metadata": {"name": f"n{i}"}, "status": {"allocatable": allocatable}} for i in range(60)]
    snapshot, _ = build_snapshot(nodes, [_pod("p", WIDE)], {})
    snapshot.requested[:] = (snapshot.allocatable * rng.random(snapshot.allocatable.shape) * 0.9).astype(
        np.int64
    )
    info = pod_info(_pod("q", WIDE), snapshot.index)
    cols = np.flatnonzero(info.requests)
    scored = np.flatnonzero(cols != snapshot.index.position(PODS))
    assert scored.size >= 8
    alloc = snapshot.allocatable[:, cols].astype(np.float64)
    request = info.requests[cols].astype(np.float64)
    rows = np.arange(len(nodes))
    with np.errstate(divide="ignore"):
        inverse = np.where(alloc > 0, 1.0 / alloc, np.inf)[:, scored]
    used = snapshot.requested[:, cols]
    fraction = np.minimum((used[rows][:, scored] + request[scored]) * inverse[rows], 1.0)  # the matrix form
    plan = gang._plan(snapshot, info.requests)
    got = gang._utilisation(snapshot, plan, rows)
    assert np.array_equal(got, fraction.sum(axis=1) / scored.size)
