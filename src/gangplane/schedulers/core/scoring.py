"""Node scores for one request, vectorised: bin-pack (MostAllocated) and spread (LeastAllocated).

After kube-scheduler's NodeResourcesFit scoring strategies (``pkg/scheduler/framework/plugins/noderesources``
``most_allocated.go`` / ``least_allocated.go``): the mean over the requested resources of the node's
utilisation after placing the request, scaled to 0..100; higher is better. Every resource the request names
(except ``pods``) has weight 1, so GPUs count as they should for training jobs.
"""

from __future__ import annotations

from enum import StrEnum

import numpy as np
import numpy.typing as npt

from gangplane.schedulers.core.resources import PODS, Vector
from gangplane.schedulers.core.snapshot import Snapshot

Scores = npt.NDArray[np.float64]
Rows = npt.NDArray[np.intp]
Matrix = npt.NDArray[np.int64]
MAX_SCORE = 100.0


class Strategy(StrEnum):
    BINPACK = "MostAllocated"
    SPREAD = "LeastAllocated"


def _scored_columns(snapshot: Snapshot, requests: Vector) -> npt.NDArray[np.intp]:
    cols = np.flatnonzero(requests)
    scored: npt.NDArray[np.intp] = cols[cols != snapshot.index.position(PODS)]
    return scored


def utilisation_after(snapshot: Snapshot, requests: Vector, rows: Rows | None = None) -> Scores:
    """Mean fraction in 0..1 of each node's allocatable in use once ``requests`` is added (0 when the request
    names no scored resource; capped at 1 for over-committed nodes). ``rows`` limits it to those nodes."""
    cols = _scored_columns(snapshot, requests)
    picked = slice(None) if rows is None else rows
    if cols.size == 0:
        return np.zeros(len(snapshot) if rows is None else len(rows), dtype=np.float64)
    alloc = snapshot.allocatable[picked][:, cols].astype(np.float64)
    used = snapshot.requested[picked][:, cols] + requests[cols]
    with np.errstate(divide="ignore", invalid="ignore"):
        fraction = np.where(alloc > 0, used / alloc, 1.0)
    mean: Scores = np.minimum(fraction, 1.0).mean(axis=1)
    return mean


def most_allocated(snapshot: Snapshot, requests: Vector, rows: Rows | None = None) -> Scores:
    return MAX_SCORE * utilisation_after(snapshot, requests, rows)


def least_allocated(snapshot: Snapshot, requests: Vector, rows: Rows | None = None) -> Scores:
    return MAX_SCORE * (1.0 - utilisation_after(snapshot, requests, rows))


def score(snapshot: Snapshot, requests: Vector, strategy: Strategy, rows: Rows | None = None) -> Scores:
    """Scores of all nodes (or of ``rows``) for ``requests``; higher is better under ``strategy``."""
    if strategy is Strategy.BINPACK:
        return most_allocated(snapshot, requests, rows)
    return least_allocated(snapshot, requests, rows)


__all__ = [
    "MAX_SCORE",
    "Rows",
    "Scores",
    "Strategy",
    "least_allocated",
    "most_allocated",
    "score",
    "utilisation_after",
]
