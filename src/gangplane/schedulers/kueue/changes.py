"""What changed since the last admission pass, as informer events report it (upstream's cache and queue
manager are fed the same way, by the workload, queue and cohort event handlers).

Event handlers run on informer threads and only record: a Workload (or the TrainJob or JobSet of its owner)
changed, queue configuration changed, or a LocalQueue or Namespace changed (every Workload's ClusterQueue or
namespace labels may have moved: all are read again). The single reconciler worker takes the record at the
start of a pass, so a pass reads only what changed and an idle pass reads nothing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from gangplane.client.informer import Key
from gangplane.store.base import Object


@dataclass(frozen=True)
class Batch:
    workloads: frozenset[str]
    """``namespace/name`` of Workloads to read again."""
    everything: bool
    """Read every Workload, LocalQueue and Namespace (the first pass, or a LocalQueue / Namespace changed)."""
    config: bool
    """ClusterQueues, Cohorts or ResourceFlavors changed."""

    @property
    def empty(self) -> bool:
        return not (self.workloads or self.everything or self.config)


@dataclass
class Changes:
    cycle_key: Key
    watched: bool = False
    """Set once the handlers are registered on informers; until then every pass reads everything (a
    reconciler driven by direct calls, as in unit tests, has no events to go by)."""
    _workloads: set[str] = field(default_factory=set)
    _everything: bool = True
    _config: bool = True
    _by_owner: dict[tuple[str, str], str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # ------------------------------------------------------------ informer mappers (any thread)

    def workload(self, obj: Object) -> list[Key]:
        meta = obj.get("metadata") or {}
        namespace, key = meta.get("namespace") or "", f"{meta.get('namespace') or ''}/{meta.get('name')}"
        with self._lock:
            self._workloads.add(key)
            for ref in meta.get("ownerReferences") or ():
                if ref.get("controller"):
                    self._by_owner[(namespace, str(ref.get("name")))] = key
        return [self.cycle_key]

    def owner(self, obj: Object) -> list[Key]:
        """A TrainJob or its JobSet (same name) changed: its Workload's readiness or completion may have."""
        meta = obj.get("metadata") or {}
        self.owner_changed(meta.get("namespace") or "", str(meta.get("name")))
        return [self.cycle_key]

    def owner_changed(self, namespace: str, name: str) -> None:
        with self._lock:
            if (key := self._by_owner.get((namespace, name))) is not None:
                self._workloads.add(key)

    def configuration(self, _: Object) -> list[Key]:
        with self._lock:
            self._config = True
        return [self.cycle_key]

    def everything(self, _: Object) -> list[Key]:
        with self._lock:
            self._everything = True
        return [self.cycle_key]

    # ------------------------------------------------------------ the pass

    def mark(self, key: str) -> None:
        with self._lock:
            self._workloads.add(key)

    def take(self) -> Batch:
        with self._lock:
            everything = self._everything or not self.watched
            batch = Batch(frozenset(self._workloads), everything, self._config or not self.watched)
            self._workloads, self._everything, self._config = set(), False, False
        return batch
