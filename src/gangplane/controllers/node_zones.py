"""Zone disruption, as pure functions: whether the node lifecycle controller may add NoExecute taints in a
zone, from how many of its nodes are ready (``node_lifecycle_controller.go``: ``ComputeZoneState``,
``handleDisruption``, ``setLimiterInZone``, ``ReducedQPSFunc``).

- a zone with no ready node is in ``FullDisruption``; one with more than two nodes not ready, at least 55 %
  of them (``--unhealthy-zone-threshold``), in ``PartialDisruption``; else ``Normal``;
- when every zone is in ``FullDisruption``, the controller takes it for its own trouble (it cannot reach
  any node: a partitioned control plane, here a stalled or suspended machine) and removes every NoExecute
  taint it manages, adding none, until some node is ready again;
- a zone's NoExecute tainting rate (``node_eviction.py`` limits it) is ``--node-eviction-rate`` (0.1 nodes/s)
  in a ``Normal`` or lone ``FullDisruption`` zone; in a ``PartialDisruption`` zone it is
  ``--secondary-node-eviction-rate`` (0.01) when the zone has more than ``--large-cluster-size-threshold``
  (50) nodes, else 0: no new NoExecute taints there.

A node's zone is its ``topology.kubernetes.io/region`` and ``zone`` labels (none: one zone).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from gangplane.controllers.node_eviction import EvictionRates
from gangplane.store.base import Object

REGION_LABEL = "topology.kubernetes.io/region"
ZONE_LABEL = "topology.kubernetes.io/zone"
UNHEALTHY_ZONE_THRESHOLD = 0.55
_DEFAULT_RATES = EvictionRates()


class ZoneState(StrEnum):
    NORMAL = "Normal"
    PARTIAL = "PartialDisruption"
    FULL = "FullDisruption"


class NoExecute(StrEnum):
    """What the controller does with the NoExecute taints it manages on a node."""

    FOLLOW = "follow"  # add and remove them as Ready says
    HOLD = "hold"  # add none; swap or remove those there
    REMOVE = "remove"  # remove them all: every zone is fully disrupted


def zone_of(node: Object) -> str:
    """``GetZoneKey``: region and zone, or "" for a node without either label."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    region, zone = labels.get(REGION_LABEL, ""), labels.get(ZONE_LABEL, "")
    return f"{region}:\x00:{zone}" if region or zone else ""


def zone_state(ready: int, not_ready: int) -> ZoneState:
    """``ComputeZoneState`` from the counts of nodes whose Ready is True and of the others."""
    if ready == 0 and not_ready > 0:
        return ZoneState.FULL
    if not_ready > 2 and not_ready / (not_ready + ready) >= UNHEALTHY_ZONE_THRESHOLD:
        return ZoneState.PARTIAL
    return ZoneState.NORMAL


def all_fully_disrupted(counts: Mapping[str, tuple[int, int]]) -> bool:
    """Every zone lost every node: the controller's own trouble (``handleDisruption``)."""
    return bool(counts) and all(zone_state(*pair) is ZoneState.FULL for pair in counts.values())


def zone_rate(
    zone: str, counts: Mapping[str, tuple[int, int]], rates: EvictionRates = _DEFAULT_RATES
) -> float:
    """``setLimiterInZone``: the zone's NoExecute tainting rate in nodes per second (0 when every zone is
    fully disrupted: ``handleDisruption`` swaps every limiter to 0)."""
    if all_fully_disrupted(counts):
        return 0.0
    ready, not_ready = counts.get(zone, (0, 0))
    if zone_state(ready, not_ready) is not ZoneState.PARTIAL:
        return rates.node_eviction_rate  # ``HealthyQPSFunc``, also for a lone fully disrupted zone
    large = ready + not_ready > rates.large_cluster_size_threshold  # ``ReducedQPSFunc``
    return rates.secondary_node_eviction_rate if large else 0.0


def no_execute_mode(
    zone: str, counts: Mapping[str, tuple[int, int]], rates: EvictionRates = _DEFAULT_RATES
) -> NoExecute:
    """How NoExecute taints are handled in ``zone``, given every zone's (ready, not ready) counts."""
    if all_fully_disrupted(counts):
        return NoExecute.REMOVE
    return NoExecute.FOLLOW if zone_rate(zone, counts, rates) > 0 else NoExecute.HOLD


__all__ = [
    "NoExecute",
    "ZoneState",
    "all_fully_disrupted",
    "no_execute_mode",
    "zone_of",
    "zone_rate",
    "zone_state",
]
