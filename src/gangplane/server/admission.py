"""The embedded API server's admission: Trainer's defaulting and validation, run inside every store write.

Kinds gangplane models (TrainJob, runtimes, JobSet, PodGroups, queues, ...) are decoded, defaulted and
validated (422 ``Invalid``); TrainJobs also go through the runtime plugins' webhooks (403 ``Forbidden``), which
read the live runtime through a ``StoreReader``. Kinds gangplane does not model pass through unchanged.
"""

from __future__ import annotations

from typing import Any

from gangplane.api import serde, trainjob_limits
from gangplane.api import trainer as t
from gangplane.api.pod_defaults import admit_pod
from gangplane.client.cache import LiveReads, StoreReader
from gangplane.clock import Clock, WallClock
from gangplane.errors import Invalid
from gangplane.runtime.admission import Admission
from gangplane.runtime.framework import Framework
from gangplane.runtime.plugins import default_registry
from gangplane.runtime.points import Handle
from gangplane.server.resources import Registry
from gangplane.store.base import Object, Operation, ResourceType, Store, warn


def _spec_unchanged(new: Object, old: Object | None) -> bool:
    """Only metadata or status differ (the object's spec, a ConfigMap's data, ... are as admitted)."""
    if old is None:
        return False
    keys = (new.keys() | old.keys()) - {"metadata", "status"}
    return all(new.get(k) == old.get(k) for k in keys)


class TrainerAdmission:
    """A ``store.base.Admission``; ``bind`` it to the store it guards before the first write."""

    def __init__(self, resources: Registry, clock: Clock | None = None) -> None:
        clock = clock or WallClock()
        self.resources = resources
        self.admission = Admission(Framework(default_registry(), Handle(clock)), clock)
        self.reader: StoreReader | None = None

    def bind(self, store: Store) -> None:
        self.reader = StoreReader(LiveReads(store), (s.storage for s in self.resources.served))

    def __call__(self, rt: ResourceType, op: Operation, new: Object, old: Object | None) -> Object:
        if op == Operation.CREATE and (rt.group, rt.kind) == ("", "Pod"):
            return admit_pod(new, self.reader)  # api/pod_defaults.py: kube-apiserver's pod defaults
        if op == Operation.DELETE or serde.model_for(rt.api_version, rt.kind) is None:
            return new
        if _spec_unchanged(new, old):  # status, label or finalizer writes: the rest was admitted already
            return new
        too_big = trainjob_limits.errors(rt.kind, new) if rt.group == t.GROUP else []
        if too_big:
            raise Invalid(rt.kind, str((new.get("metadata") or {}).get("name", "")), too_big)
        if self.reader is None:
            raise RuntimeError("TrainerAdmission used before bind()")
        result = self.admission.admit(new, self.reader, old)
        for message in result.warnings:
            warn(message)
        admitted: dict[str, Any] = result.to_dict()
        return admitted
