"""The shell that writes ClusterQueue, LocalQueue and Cohort status (``queuestatus``) after each pass,
only where it changed, so an idle pass writes nothing and ``kubectl get clusterqueues,localqueues`` shows
current counts."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from gangplane.errors import Conflict, NotFound
from gangplane.schedulers.kueue import queuestatus as qs
from gangplane.schedulers.kueue.state import KueueState
from gangplane.store import MERGE_PATCH, catalog
from gangplane.store.base import Object, ResourceType, Store


def _changes(old: Mapping[str, Any], new: Mapping[str, Any] | None, owned: tuple[str, ...]) -> dict[str, Any]:
    """The merge patch taking ``old`` to ``new`` over the fields this writer owns (None deletes a field)."""
    new = new or {}
    return {k: new.get(k) for k in owned if old.get(k) != new.get(k)}


_CQ_FIELDS = ("conditions", "flavorsReservation", "flavorsUsage", "pendingWorkloads", "reservingWorkloads",
              "admittedWorkloads", "fairSharing")  # fmt: skip
_LQ_FIELDS = ("conditions", "flavorsReservation", "flavorsUsage", "pendingWorkloads", "reservingWorkloads",
              "admittedWorkloads")  # fmt: skip
_COHORT_FIELDS = ("fairSharing",)


class QueueStatusWriter:
    def __init__(self, store: Store) -> None:
        self.store = store

    def write(self, core: KueueState, now: float, cqs: set[str] | None = None) -> None:
        """Status of ``cqs`` (every ClusterQueue when None), their LocalQueues, and the Cohorts."""
        pending = qs.pending_counts(core, cqs)
        per_cq: dict[str, int] = {}
        for (cq, _, _), count in pending.items():
            per_cq[cq] = per_cq.get(cq, 0) + count
        for obj in self._cluster_queues(cqs):
            name = obj["metadata"]["name"]
            if name in core.cluster_queues:
                old = obj.get("status") or {}
                new = qs.cluster_queue_status(core, name, old, _generation(obj), per_cq.get(name, 0), now)
                self._patch(catalog.CLUSTER_QUEUES, obj, _changes(old, new, _CQ_FIELDS))
        for obj in self.store.list(catalog.LOCAL_QUEUES).items:
            meta, old = obj["metadata"], obj.get("status") or {}
            namespace, name = meta.get("namespace", ""), meta["name"]
            cq = (obj.get("spec") or {}).get("clusterQueue", "")
            if cqs is not None and cq not in cqs:
                continue
            count = pending.get((cq, namespace, name), 0)
            new = qs.local_queue_status(core, namespace, name, cq, old, _generation(obj), count, now)
            self._patch(catalog.LOCAL_QUEUES, obj, _changes(old, new, _LQ_FIELDS))
        if cqs is not None and core.config.fair_sharing is None:
            return  # without fair sharing a Cohort's status only changes with its configuration
        for obj in self.store.list(catalog.COHORTS).items:
            new_status = qs.cohort_status(core, obj["metadata"]["name"])
            self._patch(catalog.COHORTS, obj, _changes(obj.get("status") or {}, new_status, _COHORT_FIELDS))

    def _cluster_queues(self, cqs: set[str] | None) -> list[Object]:
        if cqs is None:
            return self.store.list(catalog.CLUSTER_QUEUES).items
        found = []
        for name in sorted(c for c in cqs if c):  # "" holds workloads whose LocalQueue does not exist
            with contextlib.suppress(NotFound):
                found.append(self.store.get(catalog.CLUSTER_QUEUES, "", name))
        return found

    def _patch(self, rt: ResourceType, obj: Object, changes: dict[str, Any]) -> None:
        if not changes:
            return
        meta = obj["metadata"]
        # A stale read (the object changed since the list) is simply rewritten by the next pass.
        with contextlib.suppress(NotFound, Conflict):
            self.store.patch(rt, meta.get("namespace", ""), meta["name"], {"status": changes}, MERGE_PATCH,
                             subresource="status")  # fmt: skip


def _generation(obj: Object) -> int | None:
    generation = obj["metadata"].get("generation")
    return int(generation) if generation is not None else None
