"""reclaim's ``_reaches`` asks queues and givers one at a time; it must answer as the plain definition: some
starving, unpipelined job's queue is not Overused and some other queue holding an evictable task may give."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gangplane.schedulers.volcano.actions import reclaim

QUEUES = ["a", "b", "c", "d"]


@dataclass
class _Job:
    key: str
    queue: str
    hungry: bool

    def starving(self) -> bool:
        return self.hungry


@dataclass
class _Book:
    overused_queues: set[str]
    giving: set[str]
    asked: list[str] = field(default_factory=list)

    def overused(self, queue: str) -> bool:
        self.asked.append(queue)
        return queue in self.overused_queues

    def may_give(self, queue: str) -> bool:
        self.asked.append(queue)
        return queue in self.giving


def _plain(jobs: list[_Job], pipelined: set[str], book: _Book, holders: set[str]) -> bool:
    wanting = {
        j.queue
        for j in jobs
        if j.starving() and j.key not in pipelined and j.queue not in book.overused_queues
    }
    givers = {g for g in holders if g in book.giving}
    return any(q != g for q in wanting for g in givers)


@given(
    rows=st.lists(st.tuples(st.sampled_from(QUEUES), st.booleans(), st.booleans()), max_size=8),
    overused=st.sets(st.sampled_from(QUEUES)),
    giving=st.sets(st.sampled_from(QUEUES)),
    holders=st.sets(st.sampled_from(QUEUES)),
)
def test_reaches_answers_as_the_plain_definition(
    rows: list[tuple[str, bool, bool]], overused: set[str], giving: set[str], holders: set[str]
) -> None:
    jobs = [_Job(f"j{i}", q, hungry) for i, (q, hungry, _) in enumerate(rows)]
    pipelined = {f"j{i}" for i, (_, _, piped) in enumerate(rows) if piped}
    book = _Book(overused, giving)
    session: Any = SimpleNamespace(book=book, pipelined=pipelined)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reclaim, "_holder_queues", lambda s: holders)
        assert reclaim._reaches(session, jobs) == _plain(jobs, pipelined, book, holders)


def test_reaches_asks_one_queue_and_one_giver_when_they_differ() -> None:
    jobs = [_Job(f"j{i}", q, True) for i, q in enumerate(QUEUES)]
    book = _Book(set(), set(QUEUES))
    session: Any = SimpleNamespace(book=book, pipelined=set())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reclaim, "_holder_queues", lambda s: {"b", "c", "d"})
        assert reclaim._reaches(session, jobs)
    assert book.asked == ["a", "b"]
