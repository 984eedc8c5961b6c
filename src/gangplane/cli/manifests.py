"""Reading ``-f FILE|DIR|-`` for apply, delete and run, and putting the objects in a safe order; pure except
for reading the files.

Order: namespaces first, then cluster configuration (queues, flavors, priority classes), then runtimes, then
everything else, and TrainJobs last, so a TrainJob's runtime exists when admission resolves it. Within a rank
the files' order is kept. Deletion uses the reverse.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gangplane.errors import ManifestError
from gangplane.server.resources import default_registry
from gangplane.store.base import Object, ResourceType

_RANKS = {
    "Namespace": 0,
    "PriorityClass": 1,
    "ResourceFlavor": 1,
    "ClusterQueue": 1,
    "Cohort": 1,
    "WorkloadPriorityClass": 1,
    "Topology": 1,
    "Queue": 1,
    "HyperNode": 1,
    "LocalQueue": 2,
    "ClusterTrainingRuntime": 2,
    "TrainingRuntime": 2,
    "TrainJob": 4,
}
_DEFAULT_RANK = 3
STDIN = Path("-")
# The server's own table of served versions: a Kueue v1beta1 object goes to the v1beta1 endpoint, which
# converts it to the stored v1beta2, as kubectl apply sends each object to the version its apiVersion names.
_SERVED = default_registry()


@dataclass(frozen=True, slots=True)
class Manifest:
    """One object from a file, with the type it is stored under."""

    source: str
    rt: ResourceType
    obj: Object

    @property
    def name(self) -> str:
        return str((self.obj.get("metadata") or {}).get("name") or "")

    def namespace(self, default: str) -> str:
        """The object's namespace (``default`` when it names none); "" for cluster-scoped types."""
        if not self.rt.namespaced:
            return ""
        return str((self.obj.get("metadata") or {}).get("namespace") or default)

    def placed(self, default_namespace: str) -> Object:
        """The object with its namespace set (or removed, for cluster-scoped types)."""
        meta = dict(self.obj.get("metadata") or {})
        meta.pop("namespace", None)
        if self.rt.namespaced:
            meta["namespace"] = self.namespace(default_namespace)
        return {**self.obj, "metadata": meta}


def load(paths: Sequence[Path]) -> list[tuple[str, Object]]:
    """(source, object) from files, directories and ``-`` (stdin)."""
    from gangplane.api import serde  # here: its models cost start-up time that delete-by-name need not pay

    out: list[tuple[str, Object]] = []
    for path in paths:
        if path == STDIN:
            out += [("stdin", obj) for obj in serde.parse_documents(sys.stdin.read(), "stdin")]
        else:
            out += serde.load_paths([path])
    return out


def resolve(documents: Sequence[tuple[str, Object]]) -> list[Manifest]:
    """Each document with its resource type; ``ManifestError`` naming the first unknown kind."""
    manifests = []
    for source, obj in documents:
        api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
        served = _SERVED.find_kind(api_version, kind)
        if served is None:
            raise ManifestError(f'{source}: no matches for kind "{kind}" in version "{api_version}"')
        if not (obj.get("metadata") or {}).get("name"):
            raise ManifestError(f"{source}: {kind} has no metadata.name")
        manifests.append(Manifest(source, served.rt, obj))
    return manifests


def apply_order(manifests: Sequence[Manifest]) -> list[Manifest]:
    return sorted(manifests, key=lambda m: _RANKS.get(m.rt.kind, _DEFAULT_RANK))


def delete_order(manifests: Sequence[Manifest]) -> list[Manifest]:
    return list(reversed(apply_order(manifests)))


def read(paths: Sequence[Path]) -> list[Manifest]:
    if not paths:
        raise ManifestError("must specify one of -f or --filename")
    return resolve(load(paths))


__all__ = ["STDIN", "Manifest", "apply_order", "delete_order", "load", "read", "resolve"]
