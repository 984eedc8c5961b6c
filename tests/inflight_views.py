"""The views a scheduler's next cycle can see while the shell is still writing its evictions pod by pod and
the Job controller replaces deleting pods: a victim not marked yet, deleting, gone, replaced, or any mix.
Shared by the KAI and Volcano over-reclaim tests (``test_*_reclaim_in_flight.py``)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Protocol

DELETING = "2026-01-01T01:00:00Z"


class World(Protocol):
    """A test world's pods by key, and the pods its evictions took away."""

    pods: dict[str, dict[str, Any]]
    evicted_pods: dict[str, dict[str, Any]]


def deleting(w: World, key: str) -> None:
    """A new dict, as the informer stores each event's object (wire dicts are read-only)."""
    pod = w.pods[key] = copy.deepcopy(w.pods[key])
    pod["metadata"]["deletionTimestamp"] = DELETING


def replaced(w: World, key: str) -> None:
    """The Job controller's replacement for a deleting or deleted pod: pending, another name and uid."""
    pod = copy.deepcopy(w.pods.get(key) or w.evicted_pods[key])
    pod["metadata"]["name"] += "-r"
    pod["metadata"]["uid"] += "-r"
    pod["metadata"].pop("deletionTimestamp", None)
    pod["spec"].pop("nodeName", None)
    pod["status"] = {"phase": "Pending"}
    w.pods[f"{key}-r"] = pod


def gone(w: World, key: str) -> None:
    w.evicted_pods[key] = w.pods.pop(key)


def back_pending(w: World, keys: list[str]) -> None:
    """The simulator's shell resubmits a victim's pods pending under the same names and uids."""
    for key in keys:
        pod = w.pods[key] = copy.deepcopy(w.pods[key])
        pod["spec"].pop("nodeName")
        pod["status"] = {"phase": "Pending"}


def _both_deleting(w: World, v: list[str]) -> None:
    deleting(w, v[0])
    deleting(w, v[1])


def _first_deleting_and_replaced(w: World, v: list[str]) -> None:
    deleting(w, v[0])
    replaced(w, v[0])


def _first_gone_and_replaced(w: World, v: list[str]) -> None:
    gone(w, v[0])
    replaced(w, v[0])


VIEWS: dict[str, Callable[[World, list[str]], None]] = {
    "no eviction written yet": lambda w, v: None,
    "both deleting": _both_deleting,
    "first deleting, second not marked yet": lambda w, v: deleting(w, v[0]),
    "first gone, second not marked yet": lambda w, v: gone(w, v[0]),
    # KAI's CI case: the replacement was pipelined onto the deleting pod's room as an elastic extra, which
    # made its gang no victim, so reclaim took the other gang of the queue
    "first deleting and replaced, second not marked yet": _first_deleting_and_replaced,
    "first gone and replaced, second not marked yet": _first_gone_and_replaced,
}
"""Each view of two victims ``v`` of one gang, put back in ``w.pods`` as not marked yet."""
