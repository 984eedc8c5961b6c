"""Resource vectors: Kubernetes quantities as fixed-width integer rows, so fit checks are array arithmetic.

Units follow kube-scheduler's ``framework.Resource``: ``cpu`` in millicores, ``memory`` (and every other
resource) in whole base units, rounded up as ``resource.Quantity.Value`` does. The ``pods`` column holds the
pod count (every pod requests one), so the per-node pod limit is checked like any other resource.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

import numpy as np
import numpy.typing as npt

from gangplane.api.quantity import format_quantity, parse

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
GPU = "nvidia.com/gpu"
BASE_RESOURCES: tuple[str, ...] = (CPU, MEMORY, PODS, GPU)
"""Always present, always first, in this order; further resources follow sorted by name."""

DEFAULT_MAX_PODS = 110
"""The kubelet's default ``maxPods``: a node that reports no ``pods`` allocatable gets this."""

Vector = npt.NDArray[np.int64]


def amount(name: str, quantity: Any) -> int:
    """One quantity in gangplane's integer unit for ``name`` (millicores for cpu, else base units, ceiling)."""
    return _amount(name == CPU, quantity if isinstance(quantity, int | str) else str(quantity))


@functools.lru_cache(maxsize=4096)
def _amount(milli: bool, quantity: int | str) -> int:
    """Cached: clusters repeat a handful of quantities millions of times, and parsing dominates otherwise."""
    value: Decimal = parse(quantity)
    return math.ceil(value * 1000) if milli else math.ceil(value)


def amounts(requests: Mapping[str, Any]) -> dict[str, int]:
    """A resource list (quantities as written) as integer amounts; ``ValueError`` on a bad quantity."""
    return {name: amount(name, text) for name, text in requests.items()}


class ResourceIndex:
    """The ordered resource names of one snapshot: ``BASE_RESOURCES`` then extras sorted by name.

    Immutable; build one that covers every resource any node offers or any pod asks for (``covering``).
    """

    __slots__ = ("_names", "_positions")

    def __init__(self, extra: Iterable[str] = ()) -> None:
        rest = sorted(set(extra) - set(BASE_RESOURCES))
        self._names: tuple[str, ...] = (*BASE_RESOURCES, *rest)
        self._positions = {name: i for i, name in enumerate(self._names)}

    @classmethod
    def covering(cls, *resource_lists: Mapping[str, Any]) -> ResourceIndex:
        return cls(name for resources in resource_lists for name in resources)

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._positions

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ResourceIndex) and other._names == self._names

    def __hash__(self) -> int:
        return hash(self._names)

    def __repr__(self) -> str:
        return f"ResourceIndex({list(self._names)})"

    def position(self, name: str) -> int:
        """The column of ``name``; ``KeyError`` when the index does not cover it."""
        return self._positions[name]

    def vector(self, requests: Mapping[str, Any]) -> Vector:
        """Quantities (as written, or already integer ``amounts``) as a row; unknown non-zero names raise
        ``KeyError``: a request no node can offer must never be dropped silently."""
        row = np.zeros(len(self._names), dtype=np.int64)
        for name, quantity in requests.items():
            value = quantity if isinstance(quantity, int) else amount(name, quantity)
            if value and name not in self._positions:
                raise KeyError(f"resource {name!r} is not in {self!r}")
            if value:
                row[self._positions[name]] = value
        return row

    def pod_vector(self, requests: Mapping[str, Any]) -> Vector:
        """``vector`` plus the one ``pods`` slot every pod takes."""
        row = self.vector({name: q for name, q in requests.items() if name != PODS})
        row[self._positions[PODS]] = 1
        return row

    def node_vector(self, allocatable: Mapping[str, Any]) -> Vector:
        """Allocatable as a row, ignoring resources outside the index and defaulting ``pods``."""
        known = {name: q for name, q in allocatable.items() if name in self._positions}
        row = self.vector(known)
        if PODS not in allocatable:
            row[self._positions[PODS]] = DEFAULT_MAX_PODS
        return row

    def describe(self, row: Vector, *, skip_pods: bool = True) -> dict[str, str]:
        """The non-zero entries of ``row`` as Kubernetes quantities, for messages."""
        out: dict[str, str] = {}
        for name, value in zip(self._names, row.tolist(), strict=True):
            if value and not (skip_pods and name == PODS):
                scaled = Decimal(value) / 1000 if name == CPU else Decimal(value)
                out[name] = format_quantity(scaled, binary=name == MEMORY)
        return out


__all__ = [
    "BASE_RESOURCES",
    "CPU",
    "DEFAULT_MAX_PODS",
    "GPU",
    "MEMORY",
    "PODS",
    "ResourceIndex",
    "Vector",
    "amount",
    "amounts",
]
