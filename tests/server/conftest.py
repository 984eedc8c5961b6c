"""Fixtures for the API server: an in-process app over the memory store, and an admission hook."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from gangplane.clock import ManualClock
from gangplane.errors import CauseType, FieldError, Invalid
from gangplane.server.app import create_app
from gangplane.server.lifecycle import ensure_default_namespace
from gangplane.store import MemoryStore
from gangplane.store.base import Object, Operation, ResourceType

TOKEN = "test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def reject_bad_cohort(rt: ResourceType, op: Operation, new: Object, old: Object | None) -> Object:
    """A stand-in for the layer above's admission: ClusterQueue cohort names must be lowercase."""
    cohort = (new.get("spec") or {}).get("cohortName")
    if rt.kind == "ClusterQueue" and op is not Operation.DELETE and cohort and cohort != cohort.lower():
        err = FieldError("spec.cohortName", CauseType.INVALID, "must be a lowercase RFC 1123 label", cohort)
        raise Invalid(rt.kind, new["metadata"]["name"], [err])
    labels = new.setdefault("metadata", {}).setdefault("labels", {})
    labels.setdefault("admitted-by", "test-hook")
    return new


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def store(clock: ManualClock) -> Iterator[MemoryStore]:
    s = MemoryStore(clock=clock, admission=reject_bad_cohort, bookmark_interval=0.05)
    ensure_default_namespace(s)
    yield s
    s.close()


@pytest.fixture
def logs_dir(tmp_path: Path) -> Path:
    path = tmp_path / "logs"
    path.mkdir()
    return path


@pytest.fixture
def client(store: MemoryStore, logs_dir: Path, clock: ManualClock) -> Iterator[TestClient]:
    app = create_app(store, token=TOKEN, logs_dir=logs_dir, clock=clock)
    with TestClient(app, headers=AUTH) as c:
        yield c


def configmap(name: str, namespace: str = "default", **fields: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, **fields.pop("meta", {})}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, **fields}


def pod(name: str, containers: tuple[str, ...] = ("main",), **fields: Any) -> dict[str, Any]:
    spec = {"containers": [{"name": c, "image": "busybox"} for c in containers]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec, **fields}


def cluster_queue(name: str, cohort: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"namespaceSelector": {}}
    if cohort:
        spec["cohortName"] = cohort
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }
