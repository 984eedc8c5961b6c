"""``clock.rfc3339`` remembers the texts of the last instants it formatted and formats the rest field by
field: the same text as ``strftime`` with the Kubernetes format, for every input it accepts."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gangplane import clock
from gangplane.clock import rfc3339

_FIRST, _LAST = -62_135_596_800, 253_402_300_799  # 0001-01-01T00:00:00Z, 9999-12-31T23:59:59Z


def reference(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@settings(max_examples=500, deadline=None)
@given(
    seconds=st.one_of(
        st.floats(_FIRST, _LAST + 0.4, allow_nan=False),
        st.integers(_FIRST, _LAST),
        st.floats(-1e6, 1e6).map(lambda s: round(s, 6)),  # near the epoch, microseconds that round
    )
)
def test_the_text_is_strftimes(seconds: float) -> None:
    assert rfc3339(seconds) == reference(seconds)
    assert rfc3339(seconds) == reference(seconds)  # remembered now


@pytest.mark.parametrize(
    "seconds",
    [0, 0.0, -0.0, True, 1.9999995, 1.9999994, -0.5, np.float64(1_767_225_600.5), -50_000_000_000.0],
)
def test_edges_and_number_types(seconds: float) -> None:
    """Signed zero, microsecond rounding, booleans and numpy floats, and a year below 1000 (which ``%Y``
    writes unpadded) read as ``strftime`` reads them."""
    assert rfc3339(seconds) == reference(seconds)


def test_an_instant_asked_again_is_not_formatted_again() -> None:
    clock._rfc3339.cache_clear()
    assert rfc3339(1_767_225_600.25) == rfc3339(1_767_225_600.25) == "2026-01-01T00:00:00Z"
    assert clock._rfc3339.cache_info().hits == 1


def test_equal_values_of_other_types_are_remembered_apart() -> None:
    """An int and the equal float are kept as two entries (``typed``): each gets its own formatting."""
    clock._rfc3339.cache_clear()
    assert rfc3339(1_767_225_600) == rfc3339(1_767_225_600.0) == "2026-01-01T00:00:00Z"
    assert clock._rfc3339.cache_info().currsize == 2


def test_what_cannot_be_formatted_still_raises() -> None:
    for _ in range(2):  # errors are not remembered
        with pytest.raises(ValueError):
            rfc3339(float("nan"))
