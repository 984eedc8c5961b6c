from decimal import Decimal

import numpy as np
import pytest

from gangplane.schedulers.core.resources import BASE_RESOURCES, DEFAULT_MAX_PODS, ResourceIndex, amount


@pytest.mark.parametrize(
    ("name", "quantity", "expected"),
    [
        ("cpu", "100m", 100),
        ("cpu", "1.5", 1500),
        ("cpu", 2, 2000),
        ("cpu", "0.0001", 1),  # rounded up, like Quantity.MilliValue
        ("memory", "1Gi", 2**30),
        ("memory", "1G", 10**9),
        ("memory", "1.5Ki", 1536),
        ("nvidia.com/gpu", "8", 8),
        ("example.com/fpga", "1", 1),
    ],
    ids=lambda v: str(v),
)
def test_amount_units(name: str, quantity: str, expected: int) -> None:
    assert amount(name, quantity) == expected


def test_bad_quantity_is_rejected() -> None:
    with pytest.raises(ValueError):
        amount("cpu", "lots")


def test_index_order_base_first_then_sorted_extras() -> None:
    index = ResourceIndex.covering({"z.io/x": 1, "cpu": 1}, {"a.io/y": "1"})
    assert index.names == (*BASE_RESOURCES, "a.io/y", "z.io/x")
    assert index == ResourceIndex(["z.io/x", "a.io/y"])
    assert len(index) == 6 and "a.io/y" in index and "b.io/q" not in index


def test_vector_and_unknown_resource() -> None:
    index = ResourceIndex()
    row = index.vector({"cpu": "250m", "memory": "1Mi", "nvidia.com/gpu": 2})
    assert row.tolist() == [250, 2**20, 0, 2]
    assert index.vector({"other.io/r": 0}).tolist() == [0, 0, 0, 0]  # zero requests of unknown names are fine
    with pytest.raises(KeyError):
        index.vector({"other.io/r": "1"})


def test_pod_and_node_vectors() -> None:
    index = ResourceIndex()
    assert index.pod_vector({"cpu": "1"}).tolist() == [1000, 0, 1, 0]
    assert index.node_vector({"cpu": "4", "unknown.io/x": "3"}).tolist() == [4000, 0, DEFAULT_MAX_PODS, 0]
    assert index.node_vector({"pods": "10"})[index.position("pods")] == 10


def test_describe_round_trips_to_quantities() -> None:
    index = ResourceIndex()
    row = np.array([1500, 3 * 2**30, 1, 4], dtype=np.int64)
    assert index.describe(row) == {"cpu": "1500m", "memory": "3Gi", "nvidia.com/gpu": "4"}
    assert Decimal(index.describe(index.vector({"cpu": "2"}))["cpu"]) == 2
