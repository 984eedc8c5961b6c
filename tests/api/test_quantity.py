from decimal import Decimal

import pytest

from gangplane.api.quantity import add_lists, format_quantity, parse


@pytest.mark.parametrize(
    ("value", "binary", "expected"),
    [
        (Decimal("0.75"), False, "750m"),
        (Decimal("34"), False, "34"),
        (Decimal(132 * 2**30), True, "132Gi"),
        (Decimal(1536 * 2**20), True, "1536Mi"),
        (Decimal(2000), False, "2k"),
        (Decimal(1500), True, "1500"),
        (Decimal(0), False, "0"),
    ],
)
def test_canonical_format(value: Decimal, binary: bool, expected: str) -> None:
    assert format_quantity(value, binary=binary) == expected


def test_sum_keeps_each_resource_style() -> None:
    assert add_lists([{"cpu": "500m", "memory": "1Gi"}, {"cpu": 1, "memory": "512Mi"}], [2, 1]) == {
        "cpu": "2",
        "memory": "2560Mi",
    }


def test_parse_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        parse("lots")
