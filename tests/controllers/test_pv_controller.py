"""The PV controller's shell on a real store and informers: a claim is provisioned and bound in the
default class, and deleting it (reclaim policy Delete) removes the volume and its directory; a user's
hostPath volume with Delete keeps its directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gangplane.client.controller import Controller, Manager
from gangplane.clock import ManualClock
from gangplane.controllers.pv_controller import build_pv_controllers
from gangplane.store.catalog import (
    EVENTS,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    PODS,
    STORAGE_CLASSES,
)
from gangplane.store.memory import MemoryStore
from waiting import wait_for

CLAIM = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
         "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip


def settle(controllers: tuple[Controller, ...], done: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Run the controllers' queues until ``done()`` holds (informer events arrive on their own threads)."""

    def step() -> Any:
        for controller in controllers:
            while controller.process_one(timeout=0.05):
                pass
        return done()

    return wait_for(step, timeout, "the controllers to settle", interval=0.0)


def test_a_claim_is_provisioned_bound_and_reclaimed(tmp_path: Path) -> None:
    store = MemoryStore()
    manager = Manager(store, ManualClock())
    controllers = build_pv_controllers(manager, tmp_path / "claims")
    assert [c["metadata"]["name"] for c in store.list(STORAGE_CLASSES).items] == ["standard"]
    manager.start_informers()
    try:
        store.create(PERSISTENT_VOLUME_CLAIMS, CLAIM)

        def bound() -> Any:
            claim = store.get(PERSISTENT_VOLUME_CLAIMS, "default", "data")
            return claim["status"].get("phase") == "Bound" and claim

        claim = settle(controllers, bound)
        volume = store.get(PERSISTENT_VOLUMES, "", claim["spec"]["volumeName"])
        settle(controllers, lambda: store.get(PERSISTENT_VOLUMES, "", volume["metadata"]["name"])["status"]["phase"]
               == "Bound")  # fmt: skip
        assert volume["spec"]["hostPath"]["path"] == str(
            tmp_path / "claims" / f"pvc-{claim['metadata']['uid']}"
        )
        reasons = [e["reason"] for e in store.list(EVENTS).items]
        assert reasons == ["ProvisioningSucceeded"]
        directory = Path(volume["spec"]["hostPath"]["path"])
        directory.mkdir(parents=True)  # as the node agent creates it when a pod mounts the claim
        user = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "user", "namespace": "default"},
                "spec": {"containers": [{"name": "c"}], "volumes": [
                    {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]},
                "status": {"phase": "Running"}}  # fmt: skip
        user = store.create(PODS, user)
        store.delete(PERSISTENT_VOLUME_CLAIMS, "default", "data")
        settle(controllers, lambda: store.get(PERSISTENT_VOLUME_CLAIMS, "default", "data")["metadata"]
               .get("deletionTimestamp"))  # fmt: skip
        settle(controllers, lambda: True)
        assert directory.is_dir() and store.list(PERSISTENT_VOLUMES).items  # protected while the pod runs
        store.update_status(PODS, {**user, "status": {"phase": "Succeeded"}})
        settle(controllers, lambda: not store.list(PERSISTENT_VOLUMES).items and not directory.exists())
        assert not store.list(PERSISTENT_VOLUME_CLAIMS).items
    finally:
        manager.stop()


def test_a_users_host_path_is_never_removed(tmp_path: Path) -> None:
    store = MemoryStore()
    mine = tmp_path / "mine"
    mine.mkdir()
    volume = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "mine"},
              "spec": {"capacity": {"storage": "2Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
                       "persistentVolumeReclaimPolicy": "Delete", "hostPath": {"path": str(mine)}}}  # fmt: skip
    store.create(PERSISTENT_VOLUMES, volume)
    manager = Manager(store, ManualClock())
    controllers = build_pv_controllers(manager, tmp_path / "claims")
    manager.start_informers()
    try:
        store.create(
            PERSISTENT_VOLUME_CLAIMS, {**CLAIM, "spec": {**CLAIM["spec"], "storageClassName": "manual"}}
        )
        settle(
            controllers,
            lambda: store.get(PERSISTENT_VOLUME_CLAIMS, "default", "data")["spec"].get("volumeName"),
        )
        store.delete(PERSISTENT_VOLUME_CLAIMS, "default", "data")
        settle(controllers, lambda: not store.list(PERSISTENT_VOLUMES).items)
        assert mine.is_dir()
    finally:
        manager.stop()


def test_a_claim_in_use_keeps_its_protection_while_the_pod_cache_lags(tmp_path: Path) -> None:
    """The pod cache says no pod uses a deleted claim: upstream's pvc-protection controller asks the API server
    before it removes the finalizer (``isBeingUsed``), so a pod the cache has not seen yet keeps its claim."""
    store = MemoryStore()
    manager = Manager(store, ManualClock())
    controllers = build_pv_controllers(manager, tmp_path / "claims")
    manager.start_informers()
    try:
        store.create(PERSISTENT_VOLUME_CLAIMS, CLAIM)
        settle(
            controllers,
            lambda: store.get(PERSISTENT_VOLUME_CLAIMS, "default", "data")["spec"].get("volumeName"),
        )
        store.create(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "user", "namespace": "default"},
                            "spec": {"containers": [{"name": "c"}], "volumes": [
                                {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]},
                            "status": {"phase": "Running"}})  # fmt: skip
        reconciler = controllers[0].reconciler
        reconciler.pods = _Lagging()  # type: ignore[attr-defined]
        store.delete(PERSISTENT_VOLUME_CLAIMS, "default", "data")

        def deletion_seen() -> bool:  # by the claim cache, so the claim's reconcile has been due
            cached = reconciler.claims.get("default", "data")
            return cached is None or bool(cached["metadata"].get("deletionTimestamp"))

        settle(controllers, deletion_seen)
        settle(controllers, lambda: True)
        kept = store.get(PERSISTENT_VOLUME_CLAIMS, "default", "data")
        assert (
            kept["metadata"]["deletionTimestamp"]
            and "kubernetes.io/pvc-protection" in kept["metadata"]["finalizers"]
        )
    finally:
        manager.stop()


class _Lagging:
    """A pod cache that has not seen any pod yet."""

    def list(self, namespace: str = "") -> list[dict[str, Any]]:
        return []
