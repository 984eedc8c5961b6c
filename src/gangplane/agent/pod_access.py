"""Small reads of a pod object the node agent makes, the objects its pods refer to (``store_reader``), and the
launch-time memory cgroup choice (pure apart from creating the cgroup and reading the store)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

from gangplane.agent import cgroups
from gangplane.agent.env import ObjectReader
from gangplane.agent.launch import memory_limit
from gangplane.agent.process import Launch
from gangplane.api.pod_defaults import DEFAULT_GRACE_SECONDS
from gangplane.client import Result
from gangplane.errors import NotFound
from gangplane.store.base import Object, Store
from gangplane.store.catalog import (
    CONFIGMAPS,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    SECRETS,
    SERVICE_ACCOUNTS,
)

_READABLE = {
    rt.plural: rt
    for rt in (CONFIGMAPS, SECRETS, SERVICE_ACCOUNTS, PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES)
}


def store_reader(store: Store) -> ObjectReader:
    """What a pod's env, volumes and token refer to, read from the store (None when missing)."""

    def read(plural: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        try:
            return store.get(_READABLE[plural], namespace, name)
        except NotFound:
            return None

    return read


def remembered(read: ObjectReader) -> ObjectReader:
    """``read``, answering a repeated question from the first answer: one pod start asks for its
    ServiceAccount twice (token volume and projected tokens), which is a round trip each over HTTPS."""
    answers: dict[tuple[str, str, str], Mapping[str, Any] | None] = {}

    def read_once(plural: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        key = (plural, namespace, name)
        if key not in answers:
            answers[key] = read(plural, namespace, name)
        return answers[key]

    return read_once


def uid_of(pod: Object) -> str:
    return str(pod["metadata"].get("uid") or "")


def version_of(obj: Object) -> str:
    return str(obj["metadata"].get("resourceVersion") or "")


def same_but_version(seen: Object, written: Object) -> bool:
    """``seen`` (from a watch) is ``written`` as stored: equal but for the version the store gave it."""
    if seen.get("status") != written.get("status") or seen.get("spec") != written.get("spec"):
        return False
    return _unversioned(seen) == _unversioned(written)


def _unversioned(obj: Object) -> dict[str, Any]:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
    return {**obj, "metadata": meta}


def newer(cached: Object, written: Object | None) -> Object:
    """The informer's copy, unless our own last write is more recent than what it has seen."""
    if written is None or uid_of(written) != uid_of(cached):
        return cached
    rv = (int(o["metadata"].get("resourceVersion") or 0) for o in (cached, written))
    return written if next(rv) < next(rv) else cached


def container_of(pod: Object, name: str) -> dict[str, Any]:
    spec = pod.get("spec") or {}
    return next(
        c for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])] if c["name"] == name
    )


def with_memory_cgroup(container: Mapping[str, Any], uid: str, launch: Launch) -> Launch:
    """Every container runs in its own memory cgroup where the machine allows one: limited by its memory
    limit, if any, and tracking all of its processes either way (``cgroups.py``)."""
    found = cgroups.detect()
    if found is None:
        return launch
    cgroup = found.create(f"{uid}_{container['name']}_{time.time_ns()}", memory_limit(container))
    return dataclasses.replace(launch, cgroup=cgroup)


def grace_of(pod: Object) -> float:
    """The stop grace: the deletion's own period once the pod is marked (``kubectl delete --grace-period``),
    else the spec's (the kubelet's ``calculateEffectiveGracePeriod``)."""
    meta = pod.get("metadata") or {}
    value = meta.get("deletionGracePeriodSeconds") if meta.get("deletionTimestamp") else None
    if value is None:
        value = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return float(DEFAULT_GRACE_SECONDS if value is None else value)


def result_after(now: float, wake_at: float | None, retry: float | None) -> Result:
    delays = [d for d in (None if wake_at is None else max(0.0, wake_at - now), retry) if d is not None]
    return Result(requeue_after=min(delays) if delays else None)
