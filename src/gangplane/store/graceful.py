"""Graceful deletion of pods: what a DELETE leaves stored, as pure functions; ``collector.py`` writes it.

kube-apiserver (``pkg/registry/core/pod/strategy.go`` ``CheckGracefulDelete``, ``pkg/registry/rest/delete.go``
``BeforeDelete``, ``pkg/registry/generic/registry/store.go`` ``Delete``):

- the grace period is ``DeleteOptions.gracePeriodSeconds`` if given, else the pod's
  ``spec.terminationGracePeriodSeconds`` (default 30); a negative one counts as 1; one longer than a century
  counts as a century here (any int64 is accepted, but a deadline past year 9999 has no RFC 3339 form);
- a pod not bound to a node, or already ``Succeeded``/``Failed``, has grace 0: nothing runs it;
- grace > 0 keeps the pod, marked ``deletionTimestamp`` = now + grace and ``deletionGracePeriodSeconds`` = grace,
  until the kubelet, its containers stopped, deletes it with grace 0 (and a UID precondition);
- a delete of a pod already marked may only shorten the period (the timestamp moves by the difference);
  grace 0 (``kubectl delete --grace-period=0 --force``, or the kubelet's last delete) removes it at once,
  unless finalizers still hold it.

One difference, documented in docs/control-plane.md: a pod bound to a node that no node agent serves (no
``Lease`` in ``kube-node-lease``: a Node registered without a kubelet, as scheduler_perf's) has grace 0.
Upstream such a pod stays ``Terminating`` until the pod garbage collector or the node lifecycle removes it;
here nothing would ever confirm it. A pod marked while its agent lived and whose agent went away is failed,
then removed, by the pod garbage collector (``controllers/podgc.py``).
"""

from __future__ import annotations

from gangplane.api.pod_defaults import DEFAULT_GRACE_SECONDS
from gangplane.clock import parse_rfc3339, rfc3339
from gangplane.store.base import Object, ResourceType
from gangplane.store.objects import copy_object, meta

NODE_LEASE_NAMESPACE = "kube-node-lease"
_TERMINAL = ("Succeeded", "Failed")
LONGEST_GRACE = 100 * 365 * 86_400  # seconds: the deadline must stay a writable timestamp


def is_pod(rt: ResourceType) -> bool:
    return rt.group == "" and rt.kind == "Pod"


def node_of(pod: Object) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def grace_period(pod: Object, requested: int | None, served: bool) -> int:
    """``CheckGracefulDelete``'s period for deleting ``pod`` (``served``: an agent runs its node)."""
    if not served or not node_of(pod) or (pod.get("status") or {}).get("phase") in _TERMINAL:
        return 0
    period = requested
    if period is None:
        period = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    if not isinstance(period, int) or isinstance(period, bool):
        period = DEFAULT_GRACE_SECONDS
    return 1 if period < 0 else min(period, LONGEST_GRACE)


def after_delete(pod: Object, requested: int | None, served: bool, now: float) -> Object | None:
    """The pod as a DELETE leaves it stored (marked, or as it was if already marked with a period no longer
    than this one); ``None`` when it goes at once (after its finalizers, as any object)."""
    m = meta(pod)
    if m.get("deletionTimestamp"):
        current = m.get("deletionGracePeriodSeconds")
        if not isinstance(current, int) or current == 0:
            return None  # a mark without a period (finalizers): the object's own rules decide
        period = current if requested is None else grace_period(pod, requested, served)
        if period >= current:
            return pod
        moved = parse_rfc3339(str(m["deletionTimestamp"])) - current + period
        return _marked(pod, period, moved) if period > 0 or m.get("finalizers") else None
    period = grace_period(pod, requested, served)
    return _marked(pod, period, now + period) if period > 0 else None


def _marked(pod: Object, period: int, deadline: float) -> Object:
    out = copy_object(pod)
    out["metadata"]["deletionTimestamp"] = rfc3339(deadline)
    out["metadata"]["deletionGracePeriodSeconds"] = period
    return out


__all__ = [
    "LONGEST_GRACE",
    "NODE_LEASE_NAMESPACE",
    "after_delete",
    "grace_period",
    "is_pod",
    "node_of",
]
