"""Shortcuts of a kept Volcano session's open that must answer as the general code does: the one-dimension
``same_rounds`` (a GPU trace's every pass) against the loop over lists, the watched-objects lookup that
finds the catalog's own types by identity against one given an equal copy, and the memo that stamps a
parsed job without keeping it against one that keeps it."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane.schedulers.core.resources import ResourceIndex
from gangplane.schedulers.passes import _Watched
from gangplane.schedulers.volcano import proportion as prop
from gangplane.schedulers.volcano.jobs import new_job
from gangplane.schedulers.volcano.memo import Memo, Stamping
from gangplane.store.catalog import HYPERNODES, PRIORITY_CLASSES, VOLCANO_QUEUES

_values = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, 2.0, 4.0, 8.0, 1e-12, float("inf")]),
    st.floats(min_value=0.0, max_value=64.0, allow_nan=False),
)


def _rounds_by_lists(rounds: prop.Rounds, old: list[float], new: list[float]) -> bool:
    """``same_rounds`` as written for any number of dimensions (the reference)."""
    for reach, got in rounds:
        if prop._le(old, got) != prop._le(new, got):
            return False
        if any(min(x, o) != min(x, n) for x, o, n in zip(reach, old, new, strict=True)):
            return False
    return True


@settings(max_examples=300, deadline=None)
@given(rounds=st.lists(st.tuples(_values, _values), max_size=6), old=_values, new=_values)
def test_one_dimensions_same_rounds_answers_as_the_loop_over_lists(
    rounds: list[tuple[float, float]], old: float, new: float
) -> None:
    listed: prop.Rounds = [([reach], [got]) for reach, got in rounds]
    assert prop.same_rounds(listed, [old], [new]) == _rounds_by_lists(listed, [old], [new])
    for reach, got in listed:  # the request a round met or capped at, moved a little or not at all
        for moved in (got[0], reach[0], got[0] * 2, got[0] + 1e-13):
            assert prop.same_rounds(listed, [old], [moved]) == _rounds_by_lists(listed, [old], [moved])


def test_watched_objects_are_found_by_an_equal_type_as_by_the_catalogs_own() -> None:
    queues = [{"metadata": {"name": "a"}}]
    watched = _Watched({VOLCANO_QUEUES: queues}, (HYPERNODES, VOLCANO_QUEUES))
    copy = dataclasses.replace(VOLCANO_QUEUES)
    assert copy is not VOLCANO_QUEUES and copy == VOLCANO_QUEUES
    assert watched[VOLCANO_QUEUES] is queues and watched[copy] is queues
    assert watched.get(HYPERNODES) == () and watched.get(PRIORITY_CLASSES) is None
    assert PRIORITY_CLASSES not in watched and list(watched) == [HYPERNODES, VOLCANO_QUEUES]


def _group(rv: str) -> dict[str, Any]:
    return {"metadata": {"name": "g", "namespace": "ns", "resourceVersion": rv}, "spec": {"minMember": 1}}


@pytest.mark.parametrize(
    ("group_rv", "pod_rvs"), [("7", ["3", "5"]), ("7", ["3", ""]), ("", ["3"]), ("7", [])]
)
def test_a_stamping_memo_stamps_a_job_as_a_keeping_one_and_keeps_nothing(
    group_rv: str, pod_rvs: list[str]
) -> None:
    """``reopen`` parses a changed group with a memo that keeps nothing; the job's revision (what the kept
    session's status-only test reads) is the one ``Memo.job`` sets."""
    pg = _group(group_rv)
    members: Any = [
        ({"metadata": {"name": f"p{i}", "resourceVersion": rv}}, None) for i, rv in enumerate(pod_rvs)
    ]
    index = ResourceIndex()

    def build() -> Any:
        return new_job(pg, index, 0, {}, 0)

    stamped = Stamping().job(pg, "ns/g", members, (0,), build)
    kept = Memo().job(pg, "ns/g", members, (0,), build)
    assert stamped is not kept and stamped.revision == kept.revision
    assert stamped.revision == ((group_rv, *pod_rvs) if group_rv and all(pod_rvs) else ())
