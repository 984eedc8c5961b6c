"""enqueue's overcommit verdicts and the quota test's kept least requests (docs/volcano.md, Performance).

enqueue answers the overcommit test for every lined ``minResources`` shape at once, again only after an
admission: a shape it refuses takes no turn, and the pass ends once none passes. The quota test of a
placement builds no refusal text when nobody reads it and keeps its least requests by their bytes.
``test_volcano_action_shortcuts.py`` compares all of them with the full walks on random worlds; these pin
the shortcuts themselves (each fails on the code before them).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from vcworld import World, node

from gangplane.schedulers.core.resources import ResourceIndex
from gangplane.schedulers.volcano import VolcanoConfig, placement
from gangplane.schedulers.volcano.actions.enqueue import _Overcommit
from gangplane.schedulers.volcano.book import QueueBook
from gangplane.schedulers.volcano.config import Action
from gangplane.schedulers.volcano.session import Session

amounts = st.one_of(
    st.sampled_from([0.0, 1.0, 4000.0, 1e9, float("inf"), float("-inf"), float("nan"), -1.0]),
    st.floats(-1e12, 1e12),
)


def _overcommit(inqueue: list[float], idle: list[float] | None) -> _Overcommit:
    overcommit = _Overcommit.__new__(_Overcommit)
    overcommit.inqueue = np.array(inqueue)
    overcommit.idle = None if idle is None else np.array(idle)
    overcommit._bounds = None  # as ``__init__`` sets it
    return overcommit


@settings(max_examples=300, deadline=None)
@given(data=st.data(), dims=st.integers(1, 4), count=st.integers(0, 5), bounded=st.booleans())
def test_the_vector_verdicts_equal_one_test_per_minimum(
    data: st.DataObject, dims: int, count: int, bounded: bool
) -> None:
    row = st.lists(amounts, min_size=dims, max_size=dims)
    overcommit = _overcommit(data.draw(row), data.draw(row) if bounded else None)
    minima = np.array([data.draw(row) for _ in range(count)]).reshape(count, dims)
    with np.errstate(invalid="ignore", over="ignore"):
        got = overcommit.fits_rows(minima).tolist()
        assert got == [overcommit.fits(m) for m in minima]


def _counted_enqueueable(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    asked: list[str] = []
    real = QueueBook.enqueueable

    def counted(book: QueueBook, name: str, minimum: Any) -> bool:
        asked.append(name)
        return real(book, name, minimum)

    monkeypatch.setattr(QueueBook, "enqueueable", counted)
    return asked


def test_a_pass_ends_once_no_lined_shape_passes_the_overcommit_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """6 of 8 GPUs in use, factor 1: the least minimum (1 GPU, 1 cpu) fits, but a gang of 8 GPUs and one of
    200 cpus never do, and after the first 2-GPU gang is admitted neither does the second. Only the admitted
    gang is asked of the queue book; before, every shape took its turn and was asked (four asks)."""
    w = World(
        nodes=[node("n0", gpu=4), node("n1", gpu=4)],
        config=VolcanoConfig(explain=False, overcommit_factor=1.0),
    )
    for name in ("a", "b", "c"):
        w.add_queue(name)
    w.add_job("running", 6, gpu=1, queue="a")
    w.cycle()
    w.add_job("wide", 1, gpu=8, queue="a")
    w.add_job("cpus", 1, gpu=1, cpu="200", queue="b")
    w.add_job("s1", 1, gpu=2, queue="c")
    w.add_job("s2", 1, gpu=2, queue="c")
    asked = _counted_enqueueable(monkeypatch)
    w.cycle()
    assert asked == ["c"]
    assert [w.phase(j) for j in ("wide", "cpus", "s2")] == ["Pending"] * 3
    assert w.phase("s1") != "Pending"


def test_a_pass_where_no_lined_shape_passes_asks_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The least minimum passes (so the old early return did not apply) but no actual shape does."""
    w = World(
        nodes=[node("n0", gpu=4), node("n1", gpu=4)],
        config=VolcanoConfig(explain=False, overcommit_factor=1.0),
    )
    w.add_queue("a")
    w.add_queue("b")
    w.add_job("running", 2, gpu=1, queue="a")
    w.cycle()
    w.add_job("wide", 1, gpu=8, queue="a")
    w.add_job("cpus", 1, gpu=1, cpu="200", queue="b")
    asked = _counted_enqueueable(monkeypatch)
    w.cycle()
    assert asked == []
    assert [w.phase(j) for j in ("wide", "cpus")] == ["Pending"] * 2


def test_a_quota_refusal_builds_no_text_when_nobody_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two busy queues deserve 4 GPUs each; queue a holds 3, so its 2-GPU gang is refused by the quota
    test before any node is tried. Without "why pending" text the refusal's text is never built."""
    config = VolcanoConfig(
        explain=False, overcommit_factor=None, actions=(Action.ENQUEUE, Action.ALLOCATE, Action.BACKFILL)
    )
    w = World(nodes=[node("n0", gpu=4), node("n1", gpu=4)], config=config)
    w.add_queue("a")
    w.add_queue("b")
    w.add_job("held", 3, gpu=1, queue="a")
    w.add_job("other", 4, gpu=1, queue="b")
    w.cycle()
    w.add_job("more", 1, gpu=2, queue="a")
    w.add_job("wanting", 1, gpu=4, queue="b")
    reasons: list[str] = []
    real = QueueBook.allocatable_reason
    monkeypatch.setattr(
        QueueBook, "allocatable_reason", lambda book, name, req: reasons.append(name) or real(book, name, req)
    )
    for _ in range(2):
        assert not [b for b in w.cycle().bindings if b.pod_key.startswith("ns/more")]
    assert reasons == []


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(st.lists(st.integers(0, 10**12), min_size=4, max_size=4), min_size=1, max_size=6),
    data=st.data(),
)
def test_the_kept_least_requests_are_those_stacked_and_sorted(
    rows: list[list[int]], data: st.DataObject
) -> None:
    count = data.draw(st.integers(1, len(rows)))
    session: Any = SimpleNamespace(index=ResourceIndex(["nvidia.com/gpu"]))
    session.qvec = lambda row: Session.qvec(session, row)
    tasks: Any = [SimpleNamespace(pod=SimpleNamespace(requests=np.array(r, dtype=np.int64))) for r in rows]
    want = np.sort(np.array([session.qvec(t.pod.requests) for t in tasks]), axis=0)[:count].sum(axis=0)
    got = placement.least_requests(session, tasks, count)
    assert got.tolist() == want.tolist() and not got.flags.writeable
    copies: Any = [SimpleNamespace(pod=SimpleNamespace(requests=np.array(r, dtype=np.int64))) for r in rows]
    assert placement.least_requests(session, copies, count) is got  # kept by the rows' bytes
