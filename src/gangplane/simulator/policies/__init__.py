"""Scheduling policies the simulator can compare, registered explicitly in a fixed order.

The policies that drive an integration's scheduler core (Coscheduling, Volcano, KAI, Kueue) are imported when the
registry is built, not when this package is, so the queue-order policies and the engine load without the
integration packages.
"""

from __future__ import annotations

from collections.abc import Mapping

from gangplane.simulator.policies.backfill import EasyBackfill
from gangplane.simulator.policies.base import (
    Admit,
    Decision,
    Policy,
    PolicyFactory,
    PolicyOptions,
    Preempt,
    Reject,
    Start,
)
from gangplane.simulator.policies.conservative import ConservativeBackfill
from gangplane.simulator.policies.drf import DominantResourceFairness
from gangplane.simulator.policies.fifo import StrictFifo
from gangplane.simulator.policies.las import TiresiasLas
from gangplane.simulator.policies.priority import Srtf


def default_registry() -> dict[str, PolicyFactory]:
    """Every in-tree policy by name, in comparison order."""
    from gangplane.simulator.policies.coscheduling import Coscheduling
    from gangplane.simulator.policies.kai import Kai
    from gangplane.simulator.policies.kueue import KueueBestEffortFifo
    from gangplane.simulator.policies.volcano import Volcano

    factories: list[tuple[str, PolicyFactory]] = [
        (StrictFifo.name, StrictFifo),
        (EasyBackfill.name, EasyBackfill),
        (ConservativeBackfill.name, ConservativeBackfill),
        (TiresiasLas.name, TiresiasLas),
        (Srtf.name, Srtf),
        (DominantResourceFairness.name, DominantResourceFairness),
        (Coscheduling.name, Coscheduling),
        (Volcano.name, Volcano),
        (Kai.name, Kai),
        (KueueBestEffortFifo.name, KueueBestEffortFifo),
    ]
    return merge_registries({}, dict(factories))


def merge_registries(
    base: Mapping[str, PolicyFactory], *extra: Mapping[str, PolicyFactory]
) -> dict[str, PolicyFactory]:
    """``base`` plus ``extra`` registries; a name registered twice is an error."""
    merged = dict(base)
    for registry in extra:
        for name, factory in registry.items():
            if name in merged:
                raise ValueError(f"policy {name!r} is registered twice")
            merged[name] = factory
    return merged


__all__ = [
    "Admit",
    "ConservativeBackfill",
    "Decision",
    "DominantResourceFairness",
    "EasyBackfill",
    "Policy",
    "PolicyFactory",
    "PolicyOptions",
    "Preempt",
    "Reject",
    "Srtf",
    "Start",
    "StrictFifo",
    "TiresiasLas",
    "default_registry",
    "merge_registries",
]
