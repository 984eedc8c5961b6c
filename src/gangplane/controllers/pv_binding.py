"""PersistentVolumeClaim ↔ PersistentVolume binding and local provisioning, as pure decisions.

What kube-controller-manager's PV controller (``pkg/controller/volume/persistentvolume/pv_controller.go``)
and a local provisioner do, for the embedded cluster:

- ``sync_claim``: a claim without ``storageClassName`` gets the default StorageClass (the
  retroactive default class assignment); an unbound claim binds to the smallest Available volume that fits
  (same class and volume mode, every requested access mode, enough storage, labels matching the claim's
  ``selector``; a volume pre-bound to it first, ``findBestMatchForClaim``); failing that, a class whose
  provisioner is ``PROVISIONER`` provisions a ``hostPath`` volume ``pvc-<claim uid>`` in the cluster's claims
  directory, pre-bound to the claim (not for a claim with a selector, as upstream's provisioners refuse);
  a claim nothing can satisfy stays Pending with upstream's event. A bound claim whose volume vanished is ``Lost``.
- ``protection``: the ``kubernetes.io/pvc-protection`` finalizer (``pkg/controller/volume/pvcprotection``): a
  claim carries it, and once deleted it stays (``Terminating``) until no pod that may still run uses it, so
  reclaiming never removes the data under a running pod.
- ``sync_volume``: a volume's phase (Available, Bound, Released) and, once its claim is gone, its reclaim
  policy: ``Delete`` deletes it (the shell also removes the directory of one this provisioner made),
  ``Retain`` leaves it Released.

``volumeBindingMode: WaitForFirstConsumer`` binds at once too: every node is this host, so there is no
topology to wait for (docs/nodes.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gangplane.api import quantity
from gangplane.store.selectors import Op, Requirement, Selector

PROVISIONER = "gangplane.local/hostpath"
DEFAULT_CLASS_NAME = "standard"
IS_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
PVC_PROTECTION = "kubernetes.io/pvc-protection"

Obj = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Event:
    type: str
    reason: str
    message: str


@dataclass(slots=True)
class Decision:
    """Writes for one pass; ``None`` leaves an object as it is."""

    claim: dict[str, Any] | None = None  # the claim with a new spec/metadata (an update)
    claim_status: dict[str, Any] | None = None
    volume: dict[str, Any] | None = None  # the volume with a new spec/metadata (an update)
    volume_status: dict[str, Any] | None = None
    create_volume: dict[str, Any] | None = None
    delete_volume: bool = False
    events: list[Event] = field(default_factory=list)


def default_storage_class() -> dict[str, Any]:
    """The class the embedded cluster installs, as kind installs its ``standard`` class."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": DEFAULT_CLASS_NAME, "annotations": {IS_DEFAULT_CLASS: "true"}},
            "provisioner": PROVISIONER, "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}  # fmt: skip


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _phase(obj: Obj) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


def default_class(classes: Iterable[Obj]) -> Obj | None:
    """The class annotated default; of several, the newest (``GetDefaultClass``), then by name."""
    marked = [c for c in classes if (_meta(c).get("annotations") or {}).get(IS_DEFAULT_CLASS) == "true"]
    return max(marked, key=lambda c: (str(_meta(c).get("creationTimestamp") or ""), str(_meta(c).get("name"))),
               default=None)  # fmt: skip


def _storage(resources: Mapping[str, Any] | None) -> float:
    value = (resources or {}).get("storage")
    return float(quantity.parse(str(value))) if value is not None else 0.0


def _claim_ref(claim: Obj) -> dict[str, Any]:
    meta = _meta(claim)
    return {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": meta.get("namespace"),
            "name": meta.get("name"), "uid": meta.get("uid")}  # fmt: skip


def _refers_to(volume: Obj, claim: Obj) -> bool:
    ref, meta = _spec(volume).get("claimRef") or {}, _meta(claim)
    same = (ref.get("namespace"), ref.get("name")) == (meta.get("namespace"), meta.get("name"))
    return same and ref.get("uid") in (None, "", meta.get("uid"))


_OPERATORS = {"In": Op.IN, "NotIn": Op.NOT_IN, "Exists": Op.EXISTS, "DoesNotExist": Op.DOES_NOT_EXIST}


def label_selector(given: Mapping[str, Any]) -> Selector | None:
    """A ``metav1.LabelSelector`` (``matchLabels`` and ``matchExpressions``); None for an operator it does
    not know (it then matches nothing)."""
    requirements = [
        Requirement(str(k), Op.EQUALS, frozenset({str(v)}))
        for k, v in (given.get("matchLabels") or {}).items()
    ]
    for expression in given.get("matchExpressions") or []:
        op = _OPERATORS.get(str(expression.get("operator")))
        if op is None:
            return None
        requirements.append(
            Requirement(str(expression.get("key")), op, frozenset(map(str, expression.get("values") or [])))
        )
    return Selector(tuple(requirements))


def _selected(volume: Obj, claim: Obj) -> bool:
    given = _spec(claim).get("selector")
    if not given:
        return True
    selector = label_selector(given)
    return selector is not None and selector.matches(_meta(volume).get("labels") or {})


def _fits(volume: Obj, claim: Obj) -> bool:
    spec, wanted = _spec(volume), _spec(claim)
    if spec.get("claimRef") and not _refers_to(volume, claim):
        return False
    if not _selected(volume, claim):
        return False
    if (spec.get("storageClassName") or "") != (wanted.get("storageClassName") or ""):
        return False
    if spec.get("volumeMode", "Filesystem") != wanted.get("volumeMode", "Filesystem"):
        return False
    if not set(wanted.get("accessModes") or []) <= set(spec.get("accessModes") or []):
        return False
    if _phase(volume) not in ("", "Pending", "Available") and not _refers_to(volume, claim):
        return False
    return _storage(spec.get("capacity")) >= _storage((wanted.get("resources") or {}).get("requests"))


def best_volume(claim: Obj, volumes: Iterable[Obj]) -> Obj | None:
    """A volume pre-bound to the claim, else the smallest that fits."""
    fitting = [v for v in volumes if _fits(v, claim) and not _meta(v).get("deletionTimestamp")]
    pre_bound = [v for v in fitting if _spec(v).get("claimRef")]
    if pre_bound:
        return pre_bound[0]
    return min(fitting, key=lambda v: (_storage(_spec(v).get("capacity")), str(_meta(v).get("name"))),
               default=None)  # fmt: skip


def provisioned_volume(claim: Obj, cls: Obj, directory: str) -> dict[str, Any]:
    """The ``hostPath`` volume this provisioner makes for ``claim``: ``<directory>/pvc-<claim uid>``."""
    name = f"pvc-{_meta(claim).get('uid')}"
    spec = _spec(claim)
    return {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {PROVISIONED_BY: PROVISIONER}},
        "spec": {
            "capacity": {"storage": (spec.get("resources") or {}).get("requests", {}).get("storage")},
            "accessModes": list(spec.get("accessModes") or []),
            "persistentVolumeReclaimPolicy": cls.get("reclaimPolicy") or "Delete",
            "storageClassName": _meta(cls).get("name"),
            "volumeMode": spec.get("volumeMode", "Filesystem"),
            "hostPath": {"path": f"{directory.rstrip('/')}/{name}", "type": "DirectoryOrCreate"},
            "claimRef": _claim_ref(claim),
        },
    }  # fmt: skip


def _bound_claim(claim: Obj, volume: Obj) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The claim's spec/annotations and status once bound to ``volume`` (None where already so). The
    controller marks ``bound-by-controller`` only when it chose the volume (the user did not name it)."""
    annotations = dict(_meta(claim).get("annotations") or {})
    name = _meta(volume).get("name")
    new_spec: dict[str, Any] | None = None
    if _spec(claim).get("volumeName") != name or annotations.get(BIND_COMPLETED) != "yes":
        annotations[BIND_COMPLETED] = "yes"
        if _spec(claim).get("volumeName") != name:
            annotations[BOUND_BY_CONTROLLER] = "yes"
        new_spec = {**claim, "metadata": {**_meta(claim), "annotations": annotations},
                    "spec": {**_spec(claim), "volumeName": name}}  # fmt: skip
    status = {**(claim.get("status") or {}), "phase": "Bound",
              "accessModes": list(_spec(volume).get("accessModes") or []),
              "capacity": dict(_spec(volume).get("capacity") or {})}  # fmt: skip
    return new_spec, (status if claim.get("status") != status else None)


def _bind_completed(claim: Obj) -> bool:
    return (_meta(claim).get("annotations") or {}).get(BIND_COMPLETED) == "yes"


def _lost(claim: Obj, reason: str, message: str) -> Decision:
    status = {**(claim.get("status") or {}), "phase": "Lost"}
    return Decision(claim_status=None if _phase(claim) == "Lost" else status,
                    events=[Event("Warning", reason, message)])  # fmt: skip


def _pending(claim: Obj, event: Event | None) -> Decision:
    """Pending, without a volume's access modes and capacity; other status fields (another controller's) stay."""
    old = claim.get("status") or {}
    status = {k: v for k, v in old.items() if k not in ("accessModes", "capacity")} | {"phase": "Pending"}
    return Decision(claim_status=None if status == old else status, events=[event] if event else [])


def _no_volume_event(claim: Obj, classes: Mapping[str, Obj]) -> Event:
    name = _spec(claim).get("storageClassName") or ""
    if not name:
        return Event(
            "Normal",
            "FailedBinding",
            "no persistent volumes available for this claim and no storage class is set",
        )
    cls = classes.get(name)
    if cls is None:
        return Event("Warning", "ProvisioningFailed", f'storageclass.storage.k8s.io "{name}" not found')
    return Event("Normal", "ExternalProvisioning",
                 f"Waiting for a volume to be created either by the external provisioner '{cls.get('provisioner')}' "
                 "or manually by the system administrator. If volume creation is delayed, please verify that "
                 "the provisioner is running and correctly registered.")  # fmt: skip


def sync_claim(claim: Obj, volumes: Sequence[Obj], classes: Sequence[Obj], directory: str) -> Decision:
    """One pass over ``claim`` (``directory``: where provisioned volumes live)."""
    spec, by_name = _spec(claim), {str(_meta(c).get("name")): c for c in classes}
    if spec.get("storageClassName") is None:
        chosen = default_class(classes)
        if chosen is not None:
            return Decision(claim={**claim, "spec": {**spec, "storageClassName": _meta(chosen).get("name")}})
    if spec.get("volumeName"):
        return _sync_named_volume(claim, volumes)
    if _bind_completed(claim):
        return _lost(
            claim,
            "ClaimLost",
            "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!",
        )
    volume = best_volume(claim, volumes)
    if volume is not None:
        return _bind(claim, volume)
    cls = by_name.get(str(spec.get("storageClassName") or ""))
    if cls is not None and cls.get("provisioner") == PROVISIONER and spec.get("selector"):
        return _pending(claim, Event("Warning", "ProvisioningFailed", "claim Selector is not supported"))
    if cls is not None and cls.get("provisioner") == PROVISIONER:
        made = provisioned_volume(claim, cls, directory)
        note = Event(
            "Normal", "ProvisioningSucceeded", f"Successfully provisioned volume {made['metadata']['name']}"
        )
        return Decision(create_volume=made, events=[note])
    return _pending(claim, _no_volume_event(claim, by_name))


def _bind(claim: Obj, volume: Obj) -> Decision:
    decision = Decision()
    ref = _spec(volume).get("claimRef") or {}
    if not ref.get("uid"):
        annotations = dict(_meta(volume).get("annotations") or {})
        if not ref:
            annotations[BOUND_BY_CONTROLLER] = "yes"
        decision.volume = {**volume, "metadata": {**_meta(volume), "annotations": annotations},
                           "spec": {**_spec(volume), "claimRef": _claim_ref(claim)}}  # fmt: skip
    decision.claim, decision.claim_status = _bound_claim(claim, volume)
    return decision


def _sync_named_volume(claim: Obj, volumes: Sequence[Obj]) -> Decision:
    """A claim that names its volume: bound by this controller earlier (``bind-completed``) or pre-bound
    by its author (``syncBoundClaim`` / ``syncUnboundClaim``)."""
    name = _spec(claim).get("volumeName")
    volume = next((v for v in volumes if _meta(v).get("name") == name), None)
    completed = _bind_completed(claim)
    if volume is None:
        if completed:
            return _lost(
                claim, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!"
            )
        return _pending(claim, None)  # pre-bound to a volume that does not exist (yet)
    if _spec(volume).get("claimRef") and not _refers_to(volume, claim):
        if completed:
            return _lost(
                claim,
                "ClaimMisbound",
                "Two claims are bound to the same volume, this one is bound incorrectly",
            )
        return _pending(claim, None)  # the volume went to another claim first
    return _bind(claim, volume)


def sync_volume(volume: Obj, claim: Obj | None) -> Decision:
    """One pass over ``volume``; ``claim`` is the object its ``claimRef`` names (None when there is none)."""
    ref = _spec(volume).get("claimRef")
    if not ref:
        return _volume_phase(volume, "Available")
    if claim is not None and _refers_to(volume, claim):
        bound = _spec(claim).get("volumeName") == _meta(volume).get("name")
        return _volume_phase(volume, "Bound" if bound else _phase(volume) or "Available")
    if not ref.get("uid"):
        return _volume_phase(volume, "Available")  # pre-bound by a user to a claim not created yet
    if _spec(volume).get("persistentVolumeReclaimPolicy") == "Delete":
        return Decision(delete_volume=True)
    return _volume_phase(volume, "Released")


def _volume_phase(volume: Obj, phase: str) -> Decision:
    if _phase(volume) == phase:
        return Decision()
    return Decision(volume_status={**(volume.get("status") or {}), "phase": phase})


def provisioned_here(volume: Obj) -> str | None:
    """The directory of a volume this provisioner made (its ``hostPath``), else None."""
    if (_meta(volume).get("annotations") or {}).get(PROVISIONED_BY) != PROVISIONER:
        return None
    path = (_spec(volume).get("hostPath") or {}).get("path")
    return str(path) if path else None


def claims_of_pod(pod: Obj) -> list[str]:
    """The claim names a pod's volumes mount."""
    volumes = _spec(pod).get("volumes") or []
    return [
        str(v["persistentVolumeClaim"].get("claimName")) for v in volumes if v.get("persistentVolumeClaim")
    ]


def in_use(claim: Obj, pods: Iterable[Obj]) -> bool:
    """A pod of the claim's namespace that has not finished mounts it (``isPodUsingPVC`` ignores terminated
    pods)."""
    name, namespace = _meta(claim).get("name"), _meta(claim).get("namespace")
    return any(
        _meta(p).get("namespace") == namespace
        and name in claims_of_pod(p)
        and _phase(p) not in ("Succeeded", "Failed")
        for p in pods
    )


def protection(claim: Obj, pods: Iterable[Obj]) -> list[str] | None:
    """The claim's finalizers as they should be now (None: leave them)."""
    finalizers = list(_meta(claim).get("finalizers") or [])
    if not _meta(claim).get("deletionTimestamp"):
        return None if PVC_PROTECTION in finalizers else [*finalizers, PVC_PROTECTION]
    if PVC_PROTECTION in finalizers and not in_use(claim, pods):
        return [f for f in finalizers if f != PVC_PROTECTION]
    return None
