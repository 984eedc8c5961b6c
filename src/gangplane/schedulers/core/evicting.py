"""Evictions a scheduler decided whose deletion its view does not show yet, counted as releasing meanwhile.

A shell writes a cycle's evictions after the cycle, pod by pod, while the next cycle may already run. A
victim not yet marked deleting looks running in that view: its gang (one pod already deleting, the other
not) looks like a gang still holding its room, so a reclaim takes another gang too (the over-reclaim bug).
Upstream schedulers mark a victim Releasing in their own cache or session as soon as they evict it (KAI
``framework/session.go`` ``Evict``; Volcano ``pkg/scheduler/cache`` ``Evict``) and read the deletion from
their informers later. Here the mark is kept until the view shows the pod deleting, pending or gone from its
node, or replaced (another uid), or for ``EVICTION_IN_FLIGHT_S`` (a lost write: decided again). Pure: the
clock is the view's.
"""

from __future__ import annotations

from collections.abc import Mapping

EVICTION_IN_FLIGHT_S = 30.0  # how long a decided eviction not yet seen in the view counts as releasing


class Evicting:
    """Pods this scheduler evicted whose deletion the view does not show yet (pod key -> uid, when decided)."""

    def __init__(self) -> None:
        self._pods: dict[str, tuple[str, float]] = {}  # in the order decided

    def __bool__(self) -> bool:
        return bool(self._pods)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def add(self, decided: Mapping[str, str], now: float) -> None:
        for key, uid in decided.items():
            self._pods.pop(key, None)
            self._pods[key] = (uid, now)

    def expire(self, now: float) -> None:
        while self._pods:
            key, (_, when) = next(iter(self._pods.items()))
            if now - when < EVICTION_IN_FLIGHT_S:
                return
            del self._pods[key]

    def releasing(self, key: str, uid: str, held: bool, deleting: bool) -> bool:
        """Is this pod, as the view shows it, one whose eviction is still in flight? Any other sighting of
        it ends the entry."""
        found = self._pods.get(key)
        if found is None:
            return False
        if held and not deleting and found[0] == uid:
            return True
        del self._pods[key]
        return False


__all__ = ["EVICTION_IN_FLIGHT_S", "Evicting"]
