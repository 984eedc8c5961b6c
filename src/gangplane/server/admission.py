"""The embedded API server's admission: Trainer's defaulting and validation, run inside every store write.

Kinds gangplane models (TrainJob, runtimes, JobSet, PodGroups, queues, ...) are decoded, defaulted and
validated (422 ``Invalid``); TrainJobs also go through the runtime plugins' webhooks (403 ``Forbidden``), which
read the live runtime through a ``StoreReader``. Kinds gangplane does not model pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gangplane.api import serde, trainjob_limits
from gangplane.api import trainer as t
from gangplane.api.pod_defaults import PriorityLookup, admit_pod, priority_lookup
from gangplane.api.structural import apply_defaults, lacks_defaults
from gangplane.client.cache import LiveReads, StoreReader
from gangplane.clock import Clock, WallClock
from gangplane.errors import Invalid
from gangplane.runtime.admission import Admission
from gangplane.runtime.framework import Framework
from gangplane.runtime.plugins import default_registry
from gangplane.runtime.points import Handle
from gangplane.server import fieldvalidation
from gangplane.server.openapi import crd_defaults
from gangplane.server.resources import Registry
from gangplane.store.base import Object, Operation, ResourceType, Store, warn
from gangplane.store.catalog import PRIORITY_CLASSES
from gangplane.store.engine import Engine


def _spec_unchanged(new: Object, old: Object | None) -> bool:
    """Only metadata or status differ (the object's spec, a ConfigMap's data, ... are as admitted)."""
    if old is None:
        return False
    keys = (new.keys() | old.keys()) - {"metadata", "status"}
    return all(new.get(k) == old.get(k) for k in keys)


class CachedPriorityClasses:
    """The Priority plugin's reads: a named class straight from the store, the ``globalDefault`` one (looked
    for on every pod create without a ``priorityClassName``) kept until a PriorityClass is written or the
    store reloads (``Engine.changes``), as kube-apiserver's plugin reads them from an informer's cache."""

    def __init__(self, lookup: PriorityLookup, changes: Callable[[ResourceType], object] | None) -> None:
        self._lookup, self._changes = lookup, changes
        self._default: tuple[object, Mapping[str, Any] | None] | None = None

    def __call__(self, name: str | None) -> Mapping[str, Any] | None:
        if name is not None or self._changes is None:
            return self._lookup(name)
        token = self._changes(PRIORITY_CLASSES)
        if self._default is None or self._default[0] != token:
            self._default = (token, self._lookup(None))
        return self._default[1]


class TrainerAdmission:
    """A ``store.base.Admission``; ``bind`` it to the store it guards before the first write."""

    def __init__(self, resources: Registry, clock: Clock | None = None) -> None:
        clock = clock or WallClock()
        self.resources = resources
        self.admission = Admission(Framework(default_registry(), Handle(clock)), clock)
        self.reader: StoreReader | None = None
        self.priorities: PriorityLookup | None = None

    def bind(self, store: Store) -> None:
        self.reader = StoreReader(LiveReads(store), (s.storage for s in self.resources.served))
        changes = store.changes if isinstance(store, Engine) else None
        self.priorities = CachedPriorityClasses(priority_lookup(self.reader), changes)

    def passes(self, rt: ResourceType, op: Operation, new: Object, old: Object | None) -> bool:
        """``store.base.PassingAdmission``: what ``__call__`` stores unchanged without reading further."""
        if op == Operation.CREATE and (rt.group, rt.kind) == ("", "Pod"):
            return False
        if op != Operation.DELETE and lacks_defaults(new, crd_defaults(rt.api_version, rt.kind)):
            return False
        if op != Operation.DELETE and fieldvalidation.has_unknown(rt, new):
            return False
        return (
            op == Operation.DELETE
            or serde.model_for(rt.api_version, rt.kind) is None
            or _spec_unchanged(new, old)
        )

    def __call__(self, rt: ResourceType, op: Operation, new: Object, old: Object | None) -> Object:
        if op == Operation.CREATE and (rt.group, rt.kind) == ("", "Pod"):
            # api/pod_defaults.py: kube-apiserver's pod defaults, in place (the store hands admission copies)
            return admit_pod(new, self.reader, lookup=self.priorities, owned=True)
        if (
            op != Operation.DELETE
        ):  # unknown fields and the CRD's structural defaults, as kube-apiserver first
            fieldvalidation.apply(rt, new)
            apply_defaults(new, crd_defaults(rt.api_version, rt.kind))
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
