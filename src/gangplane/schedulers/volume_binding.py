"""kube-scheduler's VolumeBinding PreFilter: a pod whose claims are not usable is not placed.

Upstream (``pkg/scheduler/framework/plugins/volumebinding``, ``GetPodVolumeClaims`` and ``PreFilter``): a
claim that does not exist, or is being deleted, makes the pod ``UnschedulableAndUnresolvable`` with
``persistentvolumeclaim "<name>" not found`` / ``... is being deleted``; an unbound claim whose class binds
``Immediate`` (no class, an unknown class, or ``volumeBindingMode: Immediate``) gives ``pod has unbound
immediate PersistentVolumeClaims``. An unbound ``WaitForFirstConsumer`` claim does not hold the pod: every
node of the embedded cluster is this host, and the PV controller binds such a claim at once (docs/nodes.md).
The pod is tried again when a claim is added or becomes bound (the QueueingHint in ``intake.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gangplane.schedulers.core.objects import PodInfo

Obj = Mapping[str, Any]
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def is_bound(claim: Obj) -> bool:
    """``isPVCFullyBound``: a volume named and the binding completed by the PV controller."""
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    return bool((claim.get("spec") or {}).get("volumeName")) and BIND_COMPLETED in annotations


def _class_of(claim: Obj) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation first, then ``spec.storageClassName``."""
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(BETA_CLASS) or (claim.get("spec") or {}).get("storageClassName") or "")


@dataclass(frozen=True, slots=True)
class Claims:
    """The cluster's claims by ``namespace/name`` and the classes that delay binding."""

    by_key: Mapping[str, Obj]
    delayed: frozenset[str]

    @classmethod
    def of(cls, claims: Iterable[Obj], classes: Iterable[Obj]) -> Claims:
        delayed = {
            str((c.get("metadata") or {}).get("name"))
            for c in classes
            if c.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER
        }
        return cls({_key(c): c for c in claims}, frozenset(delayed))

    def refusal(self, pod: PodInfo) -> str | None:
        """Why ``pod`` cannot be placed for its claims, or ``None`` when they allow it."""
        unbound_immediate = False
        for name in pod.claims:
            claim = self.by_key.get(f"{pod.namespace}/{name}")
            if claim is None:
                return f'persistentvolumeclaim "{name}" not found'
            if (claim.get("metadata") or {}).get("deletionTimestamp"):
                return f'persistentvolumeclaim "{name}" is being deleted'
            if not is_bound(claim) and _class_of(claim) not in self.delayed:
                unbound_immediate = True
        return UNBOUND_IMMEDIATE if unbound_immediate else None


def claim_now_usable(obj: Obj, old: Obj | None) -> bool:
    """The QueueingHint on claim events: added, or just bound (``isSchedulableAfterPersistentVolumeClaimChange``
    requeues on add and update; only a new binding can help here, other updates are status noise)."""
    return old is None or (is_bound(obj) and not is_bound(old))


__all__ = ["UNBOUND_IMMEDIATE", "Claims", "claim_now_usable", "is_bound"]
