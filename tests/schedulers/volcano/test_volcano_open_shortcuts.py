"""Shortcuts of a kept Volcano session's open that must answer as the general code does: the one-dimension
``same_rounds`` (a GPU trace's every pass) against the loop over lists, and the watched-objects lookup that
finds the catalog's own types by identity against one given an equal copy."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane.schedulers.passes import _Watched
from gangplane.schedulers.volcano import proportion as prop
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
