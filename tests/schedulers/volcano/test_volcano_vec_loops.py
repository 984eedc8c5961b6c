"""``vec.le``/``vec.le_on`` spell ``max(1, |b|)`` out in a plain loop: they must still answer as the numpy
form on the edges of that spelling — ``b`` at ±1, beyond ±1, ``±inf`` (``-inf`` makes the bound NaN) and
NaN on either side — every pair of edge values tried, alone and next to a passing dimension."""

from __future__ import annotations

from itertools import product

import numpy as np

from gangplane.schedulers.volcano import vec
from gangplane.schedulers.volcano.vec import Vec

EDGES = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.0 + 1e-12, -1.0 - 1e-12, 2.0, -2.0, 1e9, -1e9]
SPECIAL = [float("inf"), float("-inf"), float("nan")]
VALUES = EDGES + SPECIAL


def numpy_le(a: Vec, b: Vec, mask: Vec | None = None) -> bool:
    keep = np.ones(len(a), dtype=bool) if mask is None else mask > 0
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(np.all(a[keep] <= b[keep] + vec.EPS * np.maximum(1.0, np.abs(b[keep]))))


def test_every_pair_of_edge_values_answers_as_numpy() -> None:
    for x, y, d in product(VALUES, VALUES, [1.0, 0.0, float("nan")]):
        for a, b, mask in (([x], [y], [d]), ([0.0, x], [1.0, y], [1.0, d]), ([x, 0.0], [y, 1.0], [d, 1.0])):
            a_, b_, m_ = np.array(a), np.array(b), np.array(mask)
            assert vec.le(a_, b_) == numpy_le(a_, b_), (a, b)
            assert vec.le_on(a_, b_, m_) == numpy_le(a_, b_, m_), (a, b, mask)


def test_an_unbounded_below_bound_refuses_and_a_nan_bound_refuses() -> None:
    one = np.array([0.0])
    assert not vec.le(one, np.array([float("-inf")]))
    assert not vec.le(one, np.array([float("nan")]))
    assert not vec.le(np.array([float("nan")]), np.array([1.0]))
    assert vec.le(np.array([1.0 + 5e-10]), np.array([1.0]))  # within EPS × 1
    assert vec.le(np.array([1e9 * (1 + 5e-10)]), np.array([1e9]))  # within EPS × |b|
    assert not vec.le(np.array([-1e9 * (1 - 2e-9)]), np.array([-1e9]))


def _share_with_max(allocated: list[float], deserved: list[float]) -> float:
    """``vec.share`` as written before, with ``max`` and ``float``."""
    result = 0.0
    for used, entitled in zip(allocated, deserved, strict=True):
        result = max(result, used / entitled if entitled > vec.EPS else float(used > vec.EPS))
    return result


def test_the_share_answers_as_with_max_on_every_pair_of_edge_values() -> None:
    for used, entitled in product(VALUES, VALUES):
        for a, b in (([used], [entitled]), ([used, 0.5], [entitled, 1.0]), ([0.5, used], [1.0, entitled])):
            got, want = vec.share(np.array(a), np.array(b)), _share_with_max(a, b)
            assert got == want or (got != got and want != want), (a, b)
