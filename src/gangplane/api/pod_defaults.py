"""A Pod as kube-apiserver stores it on create: the defaults, the admission plugins' additions and the
initial status (pure; the PriorityClass lookup is passed in).

- ``SetDefaults_PodSpec`` / ``SetDefaults_Container`` (``pkg/apis/core/v1/defaults.go``): ``restartPolicy``
  Always, ``dnsPolicy`` ClusterFirst, ``terminationGracePeriodSeconds`` 30, ``schedulerName``
  default-scheduler, ``enableServiceLinks`` true, ``securityContext`` {}, ``serviceAccountName`` default (the
  ServiceAccount admission plugin), per container ``terminationMessagePath``/``Policy``, ``imagePullPolicy``
  (Always for ``:latest`` or no tag, else IfNotPresent), port ``protocol`` TCP, and requests copied from
  limits where a request is missing (``SetDefaults_Pod``);
- the Priority admission plugin: ``priority`` (and ``preemptionPolicy``) from the named PriorityClass, or from
  the ``globalDefault`` one, else 0; a named class that does not exist refuses the pod;
- the DefaultTolerationSeconds plugin: ``node.kubernetes.io/not-ready`` and ``unreachable`` NoExecute
  tolerations for 300 s unless the pod tolerates them already;
- the pod strategy's ``PrepareForCreate``: ``status`` is ``{phase: Pending, qosClass}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from gangplane.api.jsondata import clone
from gangplane.api.quantity import parse
from gangplane.errors import CauseType, FieldError, Forbidden

DEFAULT_SCHEDULER = "default-scheduler"
DEFAULT_GRACE_SECONDS = 30
DEFAULT_TOLERATION_SECONDS = 300
TOLERATED_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
PREEMPT_LOWER = "PreemptLowerPriority"
PRIORITY_CLASS_API = "scheduling.k8s.io/v1"

# The PriorityClass of that name (``None``: no such class); with ``None`` as the name, the ``globalDefault``.
PriorityLookup = Callable[[str | None], Mapping[str, Any] | None]


class PriorityClassNotFound(LookupError):
    """The pod names a PriorityClass that does not exist (kube-apiserver answers 403 Forbidden)."""


class ObjectReader(Protocol):
    """The part of ``runtime.reader.Reader`` the Priority plugin needs."""

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def list(
        self, api_version: str, kind: str, namespace: str | None = None
    ) -> Sequence[Mapping[str, Any]]: ...


def _container_defaults(container: dict[str, Any]) -> None:
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    image = str(container.get("image") or "")
    tag = image.rsplit("/", 1)[-1]
    latest = "@" not in tag and (":" not in tag or tag.endswith(":latest"))
    container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
    for port in container.get("ports") or []:
        port.setdefault("protocol", "TCP")
    resources = container.get("resources")
    if isinstance(resources, dict) and resources.get("limits"):
        requests = resources.setdefault("requests", {})
        for name, value in resources["limits"].items():
            requests.setdefault(name, value)


def _spec_defaults(spec: dict[str, Any]) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", DEFAULT_SCHEDULER)
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            _container_defaults(container)


def _priority(spec: dict[str, Any], lookup: PriorityLookup) -> None:
    name = spec.get("priorityClassName")
    found = lookup(str(name) if name else None)
    if name and found is None:
        raise PriorityClassNotFound(f"no PriorityClass with name {name} was found")
    if found is None:
        spec.setdefault("priority", 0)
        return
    if not name:
        spec["priorityClassName"] = str((found.get("metadata") or {}).get("name") or "")
    spec["priority"] = int(found.get("value") or 0)
    spec.setdefault("preemptionPolicy", str(found.get("preemptionPolicy") or PREEMPT_LOWER))


def _tolerations(spec: dict[str, Any]) -> None:
    """A toleration with this key (or none, matching every key) and effect NoExecute (or none) covers it."""
    tolerations = list(spec.get("tolerations") or [])
    for key in TOLERATED_TAINTS:
        if not any(
            t.get("key") in (key, None, "") and t.get("effect") in ("NoExecute", None, "")
            for t in tolerations
        ):
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})  # fmt: skip
    spec["tolerations"] = tolerations


def qos_class(pod: Mapping[str, Any]) -> str:
    """``Guaranteed`` when every container limits cpu and memory with requests equal to limits,
    ``BestEffort`` when none asks for either, else ``Burstable`` (``pkg/apis/core/helper/qos``)."""
    spec = pod.get("spec") or {}
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    pairs = [_requests_limits(c) for c in containers]
    if not any(requests or limits for requests, limits in pairs):
        return "BestEffort"
    guaranteed = all(
        all(r in limits and parse(requests.get(r, limits[r])) == parse(limits[r]) for r in ("cpu", "memory"))
        for requests, limits in pairs
    )
    return "Guaranteed" if guaranteed else "Burstable"


def _requests_limits(container: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    resources = container.get("resources") or {}
    pick = ("cpu", "memory")
    requests = {k: v for k, v in (resources.get("requests") or {}).items() if k in pick}
    limits = {k: v for k, v in (resources.get("limits") or {}).items() if k in pick}
    return requests, limits


def default_pod(pod: Mapping[str, Any], lookup: PriorityLookup, *, owned: bool = False) -> dict[str, Any]:
    """The pod as stored on create; raises ``PriorityClassNotFound``. With ``owned`` the caller hands over
    ``pod`` (a copy of its own, as the store's admission hook gets) and it is defaulted in place."""
    out: dict[str, Any] = pod if owned and isinstance(pod, dict) else clone(dict(pod))
    spec = out.setdefault("spec", {})
    _spec_defaults(spec)
    _priority(spec, lookup)
    _tolerations(spec)
    out["status"] = {"phase": "Pending", "qosClass": qos_class(out)}
    return out


def priority_lookup(reader: ObjectReader | None) -> PriorityLookup:
    """PriorityClasses through ``reader``: by name, or (``None``) the one marked ``globalDefault``."""

    def lookup(name: str | None) -> Mapping[str, Any] | None:
        if reader is None:
            return None
        if name is not None:
            return reader.get(PRIORITY_CLASS_API, "PriorityClass", "", name)
        defaults = [c for c in reader.list(PRIORITY_CLASS_API, "PriorityClass") if c.get("globalDefault")]
        return min(defaults, key=lambda c: int(c.get("value") or 0), default=None)

    return lookup


def admit_pod(
    pod: Mapping[str, Any],
    reader: ObjectReader | None,
    *,
    lookup: PriorityLookup | None = None,
    owned: bool = False,
) -> dict[str, Any]:
    """``default_pod`` as admission: a missing PriorityClass is 403 ``Forbidden`` on
    ``spec.priorityClassName``. ``lookup`` (default: through ``reader``) may cache what it finds."""
    try:
        return default_pod(pod, lookup or priority_lookup(reader), owned=owned)
    except PriorityClassNotFound as err:
        name = str((pod.get("metadata") or {}).get("name") or "")
        cause = FieldError("spec.priorityClassName", CauseType.NOT_FOUND, str(err))
        raise Forbidden("pods", name, [cause]) from None
