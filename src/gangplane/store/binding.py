"""The ``pods/binding`` subresource: assign a pod to a node in ONE guarded write, as kube-apiserver does.

kube-apiserver (``pkg/registry/core/pod/storage/storage.go``, ``BindingREST.Create`` → ``assignPod`` →
``setPodNodeAndMetadata``) checks the Binding (name matches the URL, ``target.kind`` empty or ``Node``,
``target.name`` set), then in one update of the stored pod: refuses a pod being deleted, checks the UID and
resourceVersion preconditions of the Binding's metadata, refuses a pod already on a node (409 Conflict),
sets ``spec.nodeName``, copies the Binding's annotations and sets ``PodScheduled=True``. One write means one
resourceVersion and one watch event, where a scheduler that patched ``nodeName`` and then the condition
would make two.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gangplane.api.objectmeta import type_errors
from gangplane.errors import BadRequest, CauseType, Conflict, FieldError, Invalid
from gangplane.store.base import ResourceType
from gangplane.store.catalog import PODS
from gangplane.store.core import ObjectStore

BINDING_KIND = "Binding"
BINDINGS = ResourceType("", "v1", BINDING_KIND, "bindings", has_status=False)
"""Create-only: never stored, only posted (discovery and OpenAPI describe it so kubectl can post one)."""
POD_SCHEDULED = "PodScheduled"


def pod_binding(namespace: str, name: str, node: str, uid: str = "") -> dict[str, Any]:
    """The ``v1/Binding`` a scheduler posts for pod ``namespace/name`` (``uid`` guards against a pod that
    was deleted and re-created under the same name since it was scheduled)."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if uid:
        metadata["uid"] = uid
    return {
        "apiVersion": "v1",
        "kind": BINDING_KIND,
        "metadata": metadata,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def binding_name(binding: Any) -> str:
    """A Binding body's ``metadata.name`` ('' when it has none, or the body is malformed)."""
    meta = binding.get("metadata") if isinstance(binding, Mapping) else None
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) else ""


def check_binding(name: str, binding: Any) -> str:
    """The target node of a valid Binding for pod ``name``; ``BadRequest`` / ``Invalid`` otherwise
    (``ValidatePodBinding``: target.kind must be empty or Node, target.name is required)."""
    if not isinstance(binding, Mapping):
        raise BadRequest("the request body must be a Binding object")
    if binding.get("kind", BINDING_KIND) != BINDING_KIND or binding.get("apiVersion", "v1") != "v1":
        raise BadRequest(f"expected a v1 Binding, got {binding.get('apiVersion')}/{binding.get('kind')}")
    bad_types = type_errors(binding.get("metadata"))
    if bad_types:  # as a typed decoder refuses it: 400, never a crash further on
        listed = "; ".join(str(e) for e in bad_types)
        raise BadRequest(
            f"Binding cannot be handled as a Binding: {listed}", kind=BINDING_KIND, causes=bad_types
        )
    if binding_name(binding) != name:
        raise BadRequest("name in URL does not match name in Binding object")
    target = binding.get("target")
    target = target if isinstance(target, Mapping) else {}
    causes: list[FieldError] = []
    if target.get("kind") not in (None, "", "Node"):
        causes.append(FieldError("target.kind", CauseType.NOT_SUPPORTED, "must be empty or 'Node'"))
    if not isinstance(target.get("name"), str) or not target.get("name"):
        causes.append(FieldError("target.name", CauseType.REQUIRED, "Required value"))
    if causes:
        raise Invalid(BINDING_KIND, name, causes)
    return str(target["name"])


def _scheduled(conditions: Any, now: str) -> list[Any]:
    """``conditions`` with ``PodScheduled=True`` (``UpdatePodCondition``: the transition time changes only
    when the status does)."""
    mine = [c for c in conditions or () if isinstance(c, Mapping) and c.get("type") == POD_SCHEDULED]
    kept = [c for c in conditions or () if not any(c is m for m in mine)]
    old = mine[0] if mine else None
    since = old.get("lastTransitionTime") if old is not None and old.get("status") == "True" else None
    new = {"type": POD_SCHEDULED, "status": "True", "lastProbeTime": None, "lastTransitionTime": since or now}
    return [*kept, new]


def _assigned(pod: Mapping[str, Any], binding: Mapping[str, Any], node: str, now: str) -> dict[str, Any]:
    """A copy of the stored pod, bound: the checks and the change of ``setPodNodeAndMetadata``."""
    m, want = pod.get("metadata") or {}, binding.get("metadata") or {}
    name = str(m.get("name", ""))
    if m.get("deletionTimestamp"):
        raise Conflict(f"pod {name} is being deleted, cannot be assigned to a host", kind="Pod", name=name)
    if want.get("uid") and want["uid"] != m.get("uid"):
        raise Conflict(f"Precondition failed: UID in precondition: {want['uid']}", kind="Pod", name=name)
    if want.get("resourceVersion") and want["resourceVersion"] != m.get("resourceVersion"):
        raise Conflict(f"pod {name}: the resourceVersion in the Binding is stale", kind="Pod", name=name)
    current = (pod.get("spec") or {}).get("nodeName")
    if current:
        raise Conflict(f'pod {name} is already assigned to node "{current}"', kind="Pod", name=name)
    # new dicts along the changed paths only: the rest is the stored pod's own (never mutated), so the store
    # keeps it shared with the previous version instead of copying and walking it again
    new = {**pod, "metadata": dict(m), "spec": {**(pod.get("spec") or {}), "nodeName": node}}
    if want.get("annotations"):
        new["metadata"]["annotations"] = {**(m.get("annotations") or {}), **want["annotations"]}
    status = dict(pod.get("status") or {})
    status["conditions"] = _scheduled(status.get("conditions"), now)
    new["status"] = status
    return new


def bind_pod(store: ObjectStore, namespace: str, name: str, binding: Mapping[str, Any]) -> dict[str, Any]:
    """Apply ``binding`` to pod ``namespace/name`` in one store transaction; returns the bound pod (a copy,
    unless borrowed inside ``Engine.deferred``). ``NotFound`` for a missing pod, ``Conflict`` for one already
    bound or being deleted."""
    node = check_binding(name, binding)
    with store._writing(False):
        old = store._require(PODS, namespace, name)
        # no pod update admission, as upstream: BindingREST writes the pod straight to storage (admission ran on
        # the Binding); the bound pod is still validated before it is stored
        stored = store._save(PODS, _assigned(old, binding, node, store._now()), old, admit=False)
    return store._result(stored)


def success_status() -> dict[str, Any]:
    """What kube-apiserver answers a Binding POST with (201 Created)."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


__all__ = [
    "BINDINGS",
    "BINDING_KIND",
    "bind_pod",
    "binding_name",
    "check_binding",
    "pod_binding",
    "success_status",
]
