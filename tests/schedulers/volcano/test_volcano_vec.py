"""Volcano's vector comparisons on Python floats (``vec.le``, ``vec.le_on``) answer as the numpy form they
replaced: ``a <= b + EPS × max(1, |b|)`` on every (or every requested) dimension, ``inf`` included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane.schedulers.volcano import vec
from gangplane.schedulers.volcano.vec import Vec


def numpy_le(a: Vec, b: Vec, mask: Vec | None = None) -> bool:
    keep = np.ones(len(a), dtype=bool) if mask is None else mask > 0
    a, b = a[keep], b[keep]
    return bool(np.all(a <= b + vec.EPS * np.maximum(1.0, np.abs(b))))


values = st.one_of(
    st.sampled_from([0.0, 1.0, 8.0, 1e9, 1e9 * (1 + 1e-10), float("inf"), -1.0]),
    st.floats(-1e12, 1e12),
)


@settings(max_examples=400, deadline=None)
@given(data=st.data(), dims=st.integers(1, 5))
def test_float_comparisons_equal_the_numpy_form(data: st.DataObject, dims: int) -> None:
    a, b, mask = (np.array(data.draw(st.lists(values, min_size=dims, max_size=dims))) for _ in range(3))
    assert vec.le(a, b) == numpy_le(a, b)
    assert vec.le_on(a, b, mask) == numpy_le(a, b, mask)
