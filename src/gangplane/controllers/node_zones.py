"""Zone disruption, as pure functions: whether the node lifecycle controller may add NoExecute taints in a
zone, from how many of its nodes are ready (``node_lifecycle_controller.go``: ``ComputeZoneState``,
``handleDisruption``, ``setLimiterInZone``, ``ReducedQPSFunc``).

- a zone with no ready node is in ``FullDisruption``; one with more than two nodes not ready, at least 55 %
  of them (``--unhealthy-zone-threshold``), in ``PartialDisruption``; else ``Normal``;
- when every zone is in ``FullDisruption``, the controller takes it for its own trouble (it cannot reach
  any node: a partitioned control plane, here a stalled or suspended machine) and removes every NoExecute
  taint it manages, adding none, until some node is ready again;
- a ``PartialDisruption`` zone of at most 50 nodes (``--large-cluster-size-threshold``) gets no new NoExecute
  taints (its eviction rate is 0); a larger one, and a ``Normal`` or lone ``FullDisruption`` zone, does.

Upstream also rate-limits the tainting (0.1 nodes/s, 0.01 in a large partially disrupted zone); here it is
done at once. A node's zone is its ``topology.kubernetes.io/region`` and ``zone`` labels (none: one zone).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from gangplane.store.base import Object

REGION_LABEL = "topology.kubernetes.io/region"
ZONE_LABEL = "topology.kubernetes.io/zone"
UNHEALTHY_ZONE_THRESHOLD = 0.55
LARGE_CLUSTER_SIZE = 50


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


def no_execute_mode(zone: str, counts: Mapping[str, tuple[int, int]]) -> NoExecute:
    """How NoExecute taints are handled in ``zone``, given every zone's (ready, not ready) counts."""
    states = {name: zone_state(*pair) for name, pair in counts.items()}
    if states and all(state is ZoneState.FULL for state in states.values()):
        return NoExecute.REMOVE
    ready, not_ready = counts.get(zone, (0, 0))
    if states.get(zone) is ZoneState.PARTIAL and ready + not_ready <= LARGE_CLUSTER_SIZE:
        return NoExecute.HOLD
    return NoExecute.FOLLOW


__all__ = ["NoExecute", "ZoneState", "no_execute_mode", "zone_of", "zone_state"]
