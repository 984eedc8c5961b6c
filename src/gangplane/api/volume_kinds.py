"""PersistentVolumeClaim, PersistentVolume (core/v1) and StorageClass (storage.k8s.io/v1): defaults and the
validation kube-apiserver applies to the fields the binding controller and the node agent read (pure).

- Defaults (``pkg/apis/core/v1/defaults.go``, ``pkg/apis/storage/v1/defaults.go``, the strategies'
  ``PrepareForCreate``): a claim's and a volume's ``volumeMode`` Filesystem, a volume's
  ``persistentVolumeReclaimPolicy`` Retain, a class's ``reclaimPolicy`` Delete and ``volumeBindingMode``
  Immediate; a new claim or volume starts in ``status.phase`` Pending.
- Validation (``pkg/apis/core/validation.ValidatePersistentVolumeClaimSpec``/``ValidatePersistentVolume``,
  ``pkg/apis/storage/validation.ValidateStorageClass``), with upstream's messages: access modes (at least
  one, known, ``ReadWriteOncePod`` alone), ``resources.requests[storage]`` present and above zero,
  ``volumeMode``, a volume's ``capacity`` of storage only and exactly one volume source, reclaim policies,
  a class's ``provisioner`` and ``volumeBindingMode``.

Spec immutability after binding and volume expansion are not modelled (docs/nodes.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import InvalidOperation
from typing import Any

from gangplane.api import quantity
from gangplane.errors import CauseType, FieldError

STORAGE_GROUP = "storage.k8s.io"
ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
VOLUME_MODES = ("Block", "Filesystem")
PV_RECLAIM = ("Delete", "Recycle", "Retain")
CLASS_RECLAIM = ("Delete", "Retain")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
# core/v1 PersistentVolumeSource: the volume types a PersistentVolume may name (exactly one).
PV_SOURCES = (
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "hostPath",
    "glusterfs",
    "nfs",
    "rbd",
    "iscsi",
    "cinder",
    "cephfs",
    "fc",
    "flocker",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "local",
    "storageos",
    "csi",
)
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

Check = Callable[[dict[str, Any]], list[FieldError]]


def _dict(obj: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _unsupported(path: str, value: Any, allowed: tuple[str, ...]) -> FieldError:
    listed = ", ".join(f'"{v}"' for v in allowed)
    return FieldError(path, CauseType.NOT_SUPPORTED, f"supported values: {listed}", value)


def _required(path: str, detail: str = "") -> FieldError:
    return FieldError(path, CauseType.REQUIRED, detail)


def _choice(spec: Mapping[str, Any], key: str, path: str, allowed: tuple[str, ...]) -> list[FieldError]:
    value = spec.get(key)
    return [] if value is None or value in allowed else [_unsupported(f"{path}.{key}", value, allowed)]


def _access_modes(spec: Mapping[str, Any], path: str) -> list[FieldError]:
    modes = spec.get("accessModes")
    if not modes:
        return [_required(f"{path}.accessModes", "at least 1 access mode is required")]
    if not isinstance(modes, list):
        return [FieldError(f"{path}.accessModes", CauseType.TYPE_INVALID, "must be a list")]
    errs = [_unsupported(f"{path}.accessModes", m, ACCESS_MODES) for m in modes if m not in ACCESS_MODES]
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        errs.append(FieldError(f"{path}.accessModes", CauseType.FORBIDDEN,
                               "may not use ReadWriteOncePod with other access modes"))  # fmt: skip
    return errs


def _storage(values: Mapping[str, Any], path: str) -> list[FieldError]:
    at = f"{path}[storage]"
    if "storage" not in values:
        return [_required(at)]
    raw = values["storage"]
    try:
        size = quantity.parse(raw) if isinstance(raw, str | int) and not isinstance(raw, bool) else None
    except (ValueError, InvalidOperation, ArithmeticError):
        size = None
    if size is None or not size.is_finite():
        return [FieldError(at, CauseType.INVALID, "must be a quantity", raw)]
    return [] if size > 0 else [FieldError(at, CauseType.INVALID, "must be greater than zero", raw)]


def _class_name(spec: Mapping[str, Any], path: str) -> list[FieldError]:
    name = spec.get("storageClassName")
    if name in (None, "") or (isinstance(name, str) and _SUBDOMAIN.match(name) and len(name) <= 253):
        return []
    return [FieldError(f"{path}.storageClassName", CauseType.INVALID, "must be a DNS-1123 subdomain", name)]


def _claim(obj: dict[str, Any]) -> list[FieldError]:
    spec = _dict(obj, "spec")
    errs = _access_modes(spec, "spec") + _class_name(spec, "spec")
    errs += _choice(spec, "volumeMode", "spec", VOLUME_MODES)
    requests = _dict(_dict(spec, "resources"), "requests")
    return errs + _storage(requests, "spec.resources")


def _sources(spec: Mapping[str, Any]) -> list[FieldError]:
    given = [s for s in PV_SOURCES if spec.get(s) is not None]
    if not given:
        return [_required("spec", "must specify a volume type")]
    errs = [FieldError(f"spec.{s}", CauseType.FORBIDDEN, "may not specify more than 1 volume type")
            for s in given[1:]]  # fmt: skip
    for source in ("hostPath", "local"):
        if source in given and not _dict(spec, source).get("path"):
            errs.append(_required(f"spec.{source}.path"))
    return errs


def _volume(obj: dict[str, Any]) -> list[FieldError]:
    spec = _dict(obj, "spec")
    capacity = spec.get("capacity")
    if not capacity or not isinstance(capacity, dict):
        errs = [_required("spec.capacity")]
    elif set(capacity) != {"storage"}:
        errs = [_unsupported("spec.capacity", sorted(capacity), ("storage",))]
    else:
        errs = _storage(capacity, "spec.capacity")
    errs += _access_modes(spec, "spec") + _class_name(spec, "spec") + _sources(spec)
    errs += _choice(spec, "persistentVolumeReclaimPolicy", "spec", PV_RECLAIM)
    return errs + _choice(spec, "volumeMode", "spec", VOLUME_MODES)


def _storage_class(obj: dict[str, Any]) -> list[FieldError]:
    provisioner = obj.get("provisioner")
    if not provisioner:
        errs = [_required("provisioner")]
    elif not isinstance(provisioner, str) or len(provisioner) > 63 * 4:
        errs = [FieldError("provisioner", CauseType.INVALID, "must be a qualified name", provisioner)]
    else:
        errs = []
    errs += _choice(obj, "reclaimPolicy", "", CLASS_RECLAIM) + _choice(
        obj, "volumeBindingMode", "", BINDING_MODES
    )
    parameters = obj.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        errs.append(FieldError("parameters", CauseType.TYPE_INVALID, "must be an object"))
    return [FieldError(e.path.lstrip("."), e.type, e.detail, e.value) for e in errs]


CHECKS: dict[tuple[str, str], Check] = {
    ("", "PersistentVolumeClaim"): _claim,
    ("", "PersistentVolume"): _volume,
    (STORAGE_GROUP, "StorageClass"): _storage_class,
}


def defaulted(group: str, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """The object with upstream's defaults filled in (unchanged for other kinds; never mutates)."""
    if (group, kind) == (STORAGE_GROUP, "StorageClass"):
        return {"reclaimPolicy": "Delete", "volumeBindingMode": "Immediate", **obj}
    if (
        group
        or kind not in ("PersistentVolumeClaim", "PersistentVolume")
        or not isinstance(obj.get("spec"), dict)
    ):
        return obj
    spec = {"volumeMode": "Filesystem", **obj["spec"]}
    if kind == "PersistentVolume":
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    return {**obj, "spec": spec, "status": obj.get("status") or {"phase": "Pending"}}
