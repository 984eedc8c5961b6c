"""Resource vectors for Volcano's queue math: one float per resource dimension, in the cycle's fixed order.

Volcano compares resources per dimension and only on the dimensions a candidate asks for (a 0-request
dimension is never checked; volcano ``api.Resource.LessEqualWithDimension``). Unbounded is ``inf``. Equality
and order carry a small relative tolerance so water-filling over floats terminates and compares like
Volcano's milli-unit integers.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Vec = npt.NDArray[np.float64]

EPS = 1e-9  # the tolerance of comparisons (relative above 1)
_EPS = EPS


def zeros(dims: int) -> Vec:
    return np.zeros(dims, dtype=np.float64)


def unbounded(dims: int) -> Vec:
    return np.full(dims, np.inf, dtype=np.float64)


def le(a: Vec, b: Vec) -> bool:
    """``a <= b`` in every dimension, within ``EPS × max(1, |b|)`` (``b`` unbounded: any ``a`` fits). On
    Python floats in a plain loop with ``max(1, |b|)`` written out: a handful of dimensions, compared
    hundreds of thousands of times per replay, where numpy's per-call cost, then the generator's and the
    ``max``/``abs`` calls', dominated. ``not x <= ...`` keeps a NaN bound (``b = -inf``) refusing."""
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        if not x <= y + _EPS * (y if y > 1.0 else -y if y < -1.0 else 1.0):  # max(1, |y|), NaN: 1
            return False
    return True


def le_on(a: Vec, b: Vec, dims: Vec) -> bool:
    """``a <= b`` on the dimensions where ``dims`` is positive (the candidate's requested dimensions)."""
    for x, y, d in zip(a.tolist(), b.tolist(), dims.tolist(), strict=True):
        if d > 0 and not x <= y + _EPS * (y if y > 1.0 else -y if y < -1.0 else 1.0):
            return False
    return True


def equal(a: Vec, b: Vec) -> bool:
    return le(a, b) and le(b, a)


def is_empty(a: Vec) -> bool:
    return bool(np.all(a <= _EPS))


def share(allocated: Vec, deserved: Vec) -> float:
    """``max_d allocated_d / deserved_d`` with 0/0 = 0 and x/0 = 1 (volcano ``helpers.Share``)."""
    result = 0.0
    for used, entitled in zip(allocated.tolist(), deserved.tolist(), strict=True):
        ratio = used / entitled if entitled > _EPS else (1.0 if used > _EPS else 0.0)
        if ratio > result:  # ``max(result, ratio)`` without the call (QueueOrder asks it per queue and turn)
            result = ratio
    return result


def positive_part(a: Vec) -> Vec:
    return np.maximum(a, 0.0)
