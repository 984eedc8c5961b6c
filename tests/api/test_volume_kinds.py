"""PersistentVolumeClaim, PersistentVolume and StorageClass: upstream's defaults and the validation of the
fields gangplane reads, through the store as kube-apiserver applies them (cases after
``pkg/apis/core/validation/validation_test.go`` TestValidatePersistentVolumeClaim / TestValidatePersistentVolumes
and ``pkg/apis/storage/validation`` TestValidateStorageClass)."""

from __future__ import annotations

from typing import Any

import pytest

from gangplane.errors import Invalid
from gangplane.store import MemoryStore
from gangplane.store.catalog import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, STORAGE_CLASSES

CLAIM = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c", "namespace": "default"},
         "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip
VOLUME_SPEC = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"], "hostPath": {"path": "/d"}}
VOLUME = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "v"}, "spec": VOLUME_SPEC}


def with_spec(obj: dict[str, Any], **changes: Any) -> dict[str, Any]:
    spec = {k: v for k, v in {**obj["spec"], **changes}.items() if v is not None}
    return {**obj, "spec": spec}


def test_defaults_are_upstreams() -> None:
    store = MemoryStore()
    claim = store.create(PERSISTENT_VOLUME_CLAIMS, CLAIM)
    assert claim["spec"]["volumeMode"] == "Filesystem" and claim["status"] == {"phase": "Pending"}
    volume = store.create(PERSISTENT_VOLUMES, VOLUME)
    assert (
        volume["spec"]["persistentVolumeReclaimPolicy"] == "Retain" and volume["status"]["phase"] == "Pending"
    )
    cls = store.create(STORAGE_CLASSES, {"metadata": {"name": "s"}, "provisioner": "example.com/p"})
    assert (cls["reclaimPolicy"], cls["volumeBindingMode"]) == ("Delete", "Immediate")


@pytest.mark.parametrize(
    ("case", "claim", "path", "detail"),
    [
        ("missing-access-modes", with_spec(CLAIM, accessModes=None), "spec.accessModes",
         "at least 1 access mode is required"),
        ("invalid-access-mode", with_spec(CLAIM, accessModes=["fakemode"]), "spec.accessModes", "supported values"),
        ("ReadWriteOncePod with others", with_spec(CLAIM, accessModes=["ReadWriteOncePod", "ReadWriteOnce"]),
         "spec.accessModes", "may not use ReadWriteOncePod with other access modes"),
        ("missing-storage-request", with_spec(CLAIM, resources={"requests": {}}), "spec.resources[storage]", ""),
        ("zero-storage-request", with_spec(CLAIM, resources={"requests": {"storage": "0"}}),
         "spec.resources[storage]", "must be greater than zero"),
        ("invalid-volume-mode", with_spec(CLAIM, volumeMode="fake"), "spec.volumeMode", "supported values"),
        ("invalid-storage-class-name", with_spec(CLAIM, storageClassName="-invalid-"), "spec.storageClassName",
         "DNS-1123 subdomain"),
    ],
)  # fmt: skip
def test_bad_claims_are_refused_with_field_paths(
    case: str, claim: dict[str, Any], path: str, detail: str
) -> None:
    with pytest.raises(Invalid) as refused:
        MemoryStore().create(PERSISTENT_VOLUME_CLAIMS, claim)
    causes = {c.path: c.detail for c in refused.value.causes}
    assert path in causes and detail in causes[path], case


@pytest.mark.parametrize(
    ("case", "volume", "path"),
    [
        ("missing-capacity", with_spec(VOLUME, capacity=None), "spec.capacity"),
        ("bad-capacity-key", with_spec(VOLUME, capacity={"memory": "1Gi"}), "spec.capacity"),
        ("missing-volume-type", with_spec(VOLUME, hostPath=None), "spec"),
        ("more-than-1-volume-type", with_spec(VOLUME, nfs={"server": "s", "path": "/"}), "spec.nfs"),
        ("bad-reclaim-policy", with_spec(VOLUME, persistentVolumeReclaimPolicy="Burn"),
         "spec.persistentVolumeReclaimPolicy"),
        ("host-path-without-path", with_spec(VOLUME, hostPath={}), "spec.hostPath.path"),
    ],
)  # fmt: skip
def test_bad_volumes_are_refused(case: str, volume: dict[str, Any], path: str) -> None:
    with pytest.raises(Invalid) as refused:
        MemoryStore().create(PERSISTENT_VOLUMES, volume)
    assert path in {c.path for c in refused.value.causes}, case


def test_a_storage_class_needs_a_provisioner_and_known_modes() -> None:
    bad = {"metadata": {"name": "s"}, "reclaimPolicy": "Recycle", "volumeBindingMode": "Later"}
    with pytest.raises(Invalid) as refused:
        MemoryStore().create(STORAGE_CLASSES, bad)
    assert {c.path for c in refused.value.causes} == {"provisioner", "reclaimPolicy", "volumeBindingMode"}
