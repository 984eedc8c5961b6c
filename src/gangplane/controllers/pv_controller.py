"""The shell of the PersistentVolume controller (``pv_binding.py`` decides): two reconcilers over shared
informers, one per claim and one per volume, that write what the decisions say and record the events on the
claim (source ``persistentvolume-controller``). The volume reconciler removes the directory of a volume
``gangplane.local/hostpath`` provisioned once its reclaim policy deletes it — only inside the cluster's
claims directory, never a user's ``hostPath``.

The claim reconciler also keeps the ``kubernetes.io/pvc-protection`` finalizer (``pv_binding.protection``).

``ensure_default_class`` installs the ``standard`` default StorageClass when the cluster has none, as a
kind cluster comes with one.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

from gangplane.client.controller import Controller, Manager, Mapper, Result, own_key
from gangplane.client.events import EventRecorder
from gangplane.client.informer import Informer, Key
from gangplane.controllers import pv_binding as pb
from gangplane.controllers.shell import create_if_absent, delete_if_present, get_or_none
from gangplane.store.base import ListOptions, Object, Store
from gangplane.store.catalog import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, PODS, STORAGE_CLASSES
from gangplane.store.patch import MERGE_PATCH

COMPONENT = "persistentvolume-controller"


class ClaimReconciler:
    name = "persistentvolume-claims"

    def __init__(self, manager: Manager, directory: Path, events: EventRecorder) -> None:
        self.store, self.directory, self.events = manager.store, directory, events
        self.claims = manager.informer(PERSISTENT_VOLUME_CLAIMS)
        self.volumes = manager.informer(PERSISTENT_VOLUMES)
        self.classes = manager.informer(STORAGE_CLASSES)
        self.pods = manager.informer(PODS)

    def reconcile(self, key: Key) -> Result:
        claim = self.claims.get(*key)
        if claim is None:
            return Result()
        finalizers = pb.protection(claim, self.pods.list(key[0]))
        if finalizers is not None and claim["metadata"].get("deletionTimestamp"):
            # about to release a deleted claim: a pod the cache has not seen yet may use it, so ask the store
            # (upstream's isBeingUsed asks the API server too)
            finalizers = pb.protection(claim, self.store.list(PODS, ListOptions(namespace=key[0])).items)
        if finalizers is not None:
            patch = {
                "metadata": {
                    "resourceVersion": claim["metadata"]["resourceVersion"],
                    "finalizers": finalizers,
                }
            }
            claim = self.store.patch(PERSISTENT_VOLUME_CLAIMS, key[0], key[1], patch, MERGE_PATCH)
        if claim["metadata"].get("deletionTimestamp"):
            return Result()
        decision = pb.sync_claim(claim, self.volumes.list(), self.classes.list(), str(self.directory))
        if decision.volume is not None:
            self.store.update(PERSISTENT_VOLUMES, decision.volume)  # the volume's claimRef first, as upstream
        if decision.create_volume is not None:
            create_if_absent(self.store, PERSISTENT_VOLUMES, decision.create_volume)
        if decision.claim is not None:
            claim = self.store.update(PERSISTENT_VOLUME_CLAIMS, decision.claim)
        if decision.claim_status is not None:
            self.store.update_status(PERSISTENT_VOLUME_CLAIMS, {**claim, "status": decision.claim_status})
        for event in decision.events:
            self.events.event(claim, event.type, event.reason, event.message)
        return Result()


class VolumeReconciler:
    name = "persistentvolume-volumes"

    def __init__(self, manager: Manager, directory: Path) -> None:
        self.store, self.directory = manager.store, directory
        self.claims = manager.informer(PERSISTENT_VOLUME_CLAIMS)
        self.volumes = manager.informer(PERSISTENT_VOLUMES)

    def _claim(self, volume: Object) -> Object | None:
        """The claim the volume names; a cache miss is checked against the store before it counts as gone
        (a just-created claim may not have reached the informer)."""
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        if not ref.get("name"):
            return None
        namespace, name = str(ref.get("namespace") or ""), str(ref["name"])
        found = self.claims.get(namespace, name)
        return found or get_or_none(self.store, PERSISTENT_VOLUME_CLAIMS, namespace, name)

    def reconcile(self, key: Key) -> Result:
        volume = self.volumes.get(*key)
        if volume is None or volume["metadata"].get("deletionTimestamp"):
            return Result()
        decision = pb.sync_volume(volume, self._claim(volume))
        if decision.delete_volume:
            delete_if_present(self.store, PERSISTENT_VOLUMES, volume)
            self._remove_directory(volume)
        elif decision.volume_status is not None:
            self.store.update_status(PERSISTENT_VOLUMES, {**volume, "status": decision.volume_status})
        return Result()

    def _remove_directory(self, volume: Object) -> None:
        path = pb.provisioned_here(volume)
        if path is not None and Path(path).resolve().parent == self.directory.resolve():
            shutil.rmtree(path, ignore_errors=True)


def ensure_default_class(store: Store) -> None:
    """Install the default StorageClass unless some StorageClass exists already."""
    if not store.list(STORAGE_CLASSES).items:
        create_if_absent(store, STORAGE_CLASSES, pb.default_storage_class())


def _volume_of_claim(claim: Object) -> Iterable[Key]:
    name = (claim.get("spec") or {}).get("volumeName")
    return [("", str(name))] if name else []


def _claims_for_volume(claims: Informer) -> Mapper:
    """A volume's event concerns the claim it names and every claim still unbound (it may fit one)."""

    def keys(volume: Object) -> Iterable[Key]:
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        named = [(str(ref.get("namespace") or ""), str(ref["name"]))] if ref.get("name") else []
        return named + [_key(c) for c in claims.list() if not (c.get("spec") or {}).get("volumeName")]

    return keys


def _claims_of_pod(pod: Object) -> Iterable[Key]:
    return [(str(pod["metadata"].get("namespace") or ""), name) for name in pb.claims_of_pod(pod)]


def _key(obj: Object) -> Key:
    return str(obj["metadata"].get("namespace") or ""), str(obj["metadata"]["name"])


def build_pv_controllers(manager: Manager, directory: Path) -> tuple[Controller, Controller]:
    """The claim and volume controllers; provisioned volumes live in ``directory``."""
    events = EventRecorder(manager.store, manager.clock, COMPONENT)
    claims = ClaimReconciler(manager, directory, events)
    claim_controller = manager.add(Controller(claims, manager.clock))
    claim_controller.watch(claims.claims, own_key)
    claim_controller.watch(claims.volumes, _claims_for_volume(claims.claims))
    claim_controller.watch(claims.classes, lambda _: [_key(c) for c in claims.claims.list()])
    claim_controller.watch(claims.pods, _claims_of_pod)  # a pod that ends may release a deleted claim
    volumes = VolumeReconciler(manager, directory)
    volume_controller = manager.add(Controller(volumes, manager.clock))
    volume_controller.watch(volumes.volumes, own_key)
    volume_controller.watch(volumes.claims, _volume_of_claim)
    ensure_default_class(manager.store)
    return claim_controller, volume_controller


__all__ = ["COMPONENT", "build_pv_controllers", "ensure_default_class"]
