"""Fixtures for the store conformance suite: every test taking ``store`` runs against each backend."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gangplane.clock import ManualClock
from gangplane.store import MemoryStore, ResourceType, SqliteStore
from gangplane.store.core import ObjectStore

POD = ResourceType("", "v1", "Pod", "pods")
NODE = ResourceType("", "v1", "Node", "nodes", namespaced=False)
CONFIGMAP = ResourceType("", "v1", "ConfigMap", "configmaps", has_status=False)
JOB = ResourceType("trainer.kubeflow.org", "v1alpha1", "TrainJob", "trainjobs")
JOBSET = ResourceType("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets")

MakeStore = Callable[..., ObjectStore]


def pod(name: str, namespace: str = "default", **fields: Any) -> dict[str, Any]:
    """A minimal pod; ``labels``, ``owners`` and ``finalizers`` go into metadata, the rest at the top."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    for key, meta_key in (("labels", "labels"), ("owners", "ownerReferences"), ("finalizers", "finalizers")):
        if key in fields:
            metadata[meta_key] = fields.pop(key)
    spec = fields.pop("spec", {"containers": [{"name": "main", "image": "busybox"}]})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, **fields}


def owner_ref(owner: dict[str, Any], *, block: bool = False) -> dict[str, Any]:
    meta = owner["metadata"]
    ref = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"]}
    return ref | ({"blockOwnerDeletion": True} if block else {})


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(params=["memory", "sqlite"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock) -> Iterator[MakeStore]:
    """A factory (so tests can pass history_size, admission, ...); every store made is closed afterwards."""
    made: list[ObjectStore] = []

    def make(**options: Any) -> ObjectStore:
        options.setdefault("clock", clock)
        options.setdefault("rng", random.Random(7))
        if request.param == "memory":
            store: ObjectStore = MemoryStore(**options)
        else:
            store = SqliteStore(tmp_path / "store.db", **options)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.fixture
def store(make_store: MakeStore) -> ObjectStore:
    return make_store()
